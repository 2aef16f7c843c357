// SPDX-License-Identifier: MIT
/*
 * mm/mm.c, compiled unchanged for the simulator, with a reset of its
 * file-scope state between runs (see tlb_sim_kfiles.c): context ids and
 * shared-memory ids start from 1 again, and the shared-memory table
 * forgets the objects a failed run left behind (their frames were in the
 * simulated memory, which starts empty again).
 */
#include "mm/mm.c"

#include "tests/host/tlb_sim.h"

#include <stdlib.h>

void sim_mmfile_reset(void)
{
	next_context_id = 1;
	shm_lock = (struct spinlock)SPINLOCK_INIT;
	for (size_t i = 0; i < SHM_MAX; i++) {
		free(shm_table[i]);
		shm_table[i] = NULL;
	}
	next_shm_id = 1;
}
