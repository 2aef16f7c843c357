// SPDX-License-Identifier: MIT
/*
 * Slots are handed out in order and, for now, never returned: stacks belong
 * to CPUs, which do not go away. Returning one would need the kernel-range
 * TLB shootdown before its frames are reused.
 */
#include "mm/kstack.h"
#include "mm/kmap.h"
#include "mm/layout.h"
#include "mm/pagetable.h"
#include "mm/pmm.h"
#include "kernel/cpu.h"
#include "kernel/panic.h"
#include "smp/spinlock.h"

_Static_assert(KSTACK_SIZE < KSTACK_SLOT_SIZE, "a slot keeps a guard");

static struct spinlock lock = SPINLOCK_INIT;
static uint64_t next_slot = KSTACK_BASE; /* guarded by lock */

uint64_t kstack_alloc(void)
{
	uint64_t flags = spin_lock_irqsave(&lock);
	uint64_t slot = next_slot;
	uint64_t bottom;

	if (slot >= KSTACK_BASE + KSTACK_WINDOW) {
		spin_unlock_irqrestore(&lock, flags);
		return 0;
	}
	next_slot += KSTACK_SLOT_SIZE;
	spin_unlock_irqrestore(&lock, flags);

	bottom = slot + KSTACK_SLOT_SIZE - KSTACK_SIZE;
	for (uint64_t va = bottom; va < slot + KSTACK_SLOT_SIZE;
	     va += PAGE_SIZE) {
		uint64_t frame = pmm_alloc_frame();
		int err;

		if (!frame)
			panic("kstack: out of memory for a kernel stack");
		err = pt_map(kernel_root, va, frame, PAGE_4K,
			     PTE_WRITE | (boot_cpu.nx ? PTE_NX : 0) |
				     (boot_cpu.pge ? PTE_GLOBAL : 0));
		KASSERT(!err, "mapping stack page %#llx: %d",
			(unsigned long long)va, err);
	}
	return slot + KSTACK_SLOT_SIZE;
}

bool kstack_is_guard(uint64_t va)
{
	if (va < KSTACK_BASE || va >= KSTACK_BASE + KSTACK_WINDOW)
		return false;
	return (va - KSTACK_BASE) % KSTACK_SLOT_SIZE <
	       KSTACK_SLOT_SIZE - KSTACK_SIZE;
}
