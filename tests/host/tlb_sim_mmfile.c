// SPDX-License-Identifier: MIT
/*
 * mm/mm.c, compiled unchanged for the simulator, with a reset of its
 * file-scope state between runs (see tlb_sim_kfiles.c): context ids start
 * from 1 again, and no shared-memory object is counted (kern_reset frees
 * the last run's: its frames were in the simulated memory, which starts
 * empty again).
 */
#include "mm/mm.c"

#include "tests/host/tlb_sim.h"

#include <stdlib.h>

void sim_mmfile_reset(void)
{
	next_context_id = 1;
	shm_live = 0;
}

uint64_t sim_shm_frames(const struct shm *shm, uint64_t *frames, uint64_t max)
{
	uint64_t n = 0;

	for (; !shm->revoked && n < shm->pages && n < max; n++)
		frames[n] = shm->frames[n];
	return n;
}
