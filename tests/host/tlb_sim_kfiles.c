// SPDX-License-Identifier: MIT
/*
 * mm/kmap.c, mm/kstack.c and mm/tlb_global_asid.c, compiled unchanged for
 * the simulator, with a reset of their file-scope state between runs: a booted kernel runs
 * once, the simulator thousands of times in one process, and each run
 * must start from the same state so that it replays exactly (the same
 * stack addresses, the same ioremap window).
 */
#include "mm/kmap.c"
#include "mm/kstack.c"
#include "mm/tlb_global_asid.c"

#include "tests/host/tlb_sim.h"

#include <string.h>

void sim_kfiles_reset(uint64_t root)
{
	kernel_root = root;
	ioremap_next = IOREMAP_BASE;
	ioremap_lock = (struct spinlock)SPINLOCK_INIT;
	kernel_tables_lock = (struct spinlock)SPINLOCK_INIT;
	global_bit = boot_cpu.pge ? PTE_GLOBAL : 0;
	nx_bit = boot_cpu.nx ? PTE_NX : 0;

	lock = (struct spinlock)SPINLOCK_INIT;
	next_slot = KSTACK_BASE;
	free_count = 0;
	in_use = 0;

	asids_lock = (struct spinlock)SPINLOCK_INIT;
	memset(taken, 0, sizeof(taken));
	memset(freed_set, 0, sizeof(freed_set));
	next_free = 0;
	held_count = 0;
}
