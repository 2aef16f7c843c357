// SPDX-License-Identifier: MIT
/*
 * Slots are handed out in order; freed ones go on a free list and are
 * reused first. A stack's frames are freed only after the kernel-range TLB
 * flush has reached every CPU: until then another CPU could still hold a
 * translation to them.
 *
 * The page tables that map a stack are never freed, even when its unmap
 * empties them (docs/tlb.md, "Page tables: who frees them, and when"): the
 * flush is one INVLPG per page, which drops the cached walks of the current
 * PCID only, so another PCID on some CPU (a user ASID slot, or PCID 0)
 * could keep a walk through a freed table and use it after a no-flush CR3
 * load. The tables stay linked and map the next stack given the slot (or
 * one of the 31 others in the same 2 MiB). What bounds their memory is the
 * part of the kernel-stack window that slots come from: its first
 * KSTACK_MAX slots (256 MiB), under one page directory and at most 128 page
 * tables, 516 KiB in all; slots above the highest handed out so far have
 * none. Every freed slot fits on the free list, so none is ever abandoned
 * for a fresh one further up.
 */
#include "mm/kstack.h"
#include "mm/kmap.h"
#include "arch/layout.h"
#include "mm/pagetable.h"
#include "mm/pmm.h"
#include "mm/tlb.h"
#include "cpu/cpu.h"
#include "trap/panic.h"
#include "lib/errno.h"
#include "sync/spinlock.h"

#define KSTACK_SLOTS_END (KSTACK_BASE + KSTACK_MAX * KSTACK_SLOT_SIZE)

_Static_assert(KSTACK_SIZE < KSTACK_SLOT_SIZE, "a slot keeps a guard");
_Static_assert(KSTACK_SLOTS_END - KSTACK_BASE <= KSTACK_WINDOW,
	       "the slots fit in the kernel-stack window");

static struct spinlock lock = SPINLOCK_INIT;
static uint64_t next_slot = KSTACK_BASE; /* guarded by lock */
static uint64_t free_slots[KSTACK_MAX];	 /* guarded by lock */
static size_t free_count;		 /* guarded by lock */
static uint64_t in_use; /* stacks handed out and not freed; lock */

/*
 * Unmaps the pages of slot's stack in [bottom, end), flushes them on every
 * CPU, frees their frames, then the slot: kstack_free, and kstack_alloc
 * when memory ran out half way (the pages it mapped may be cached already:
 * the walker fills what it likes).
 */
static void kstack_free_pages(uint64_t slot, uint64_t bottom, uint64_t end)
{
	enum { PAGES = KSTACK_SIZE / PAGE_SIZE };
	uint64_t frames[PAGES];
	size_t n_frames = 0;
	uint64_t flags;

	for (uint64_t va = bottom; va < end; va += PAGE_SIZE) {
		uint64_t old;
		int err = kmap_unmap_page(va, &old); /* the tables stay */

		KASSERT(!err, "stack page %#llx not mapped (%d)",
			(unsigned long long)va, err);
		frames[n_frames++] = old & PTE_ADDR_MASK;
	}
	/*
	 * Every CPU forgets the stack before its memory or its slot is
	 * reused: a stack allocated in the slot before the flush returned
	 * would meet CPUs still translating its addresses to the old frames.
	 */
	if (n_frames)
		flush_tlb_kernel_range(bottom, end);
	for (size_t i = 0; i < n_frames; i++)
		pmm_free_frame(frames[i]);

	flags = spin_lock_irqsave(&lock);
	KASSERT(free_count < ARRAY_SIZE(free_slots),
		"freeing stack slot %#llx: %zu slots free already, of %d",
		(unsigned long long)slot, free_count, KSTACK_MAX);
	in_use--;
	free_slots[free_count++] = slot;
	spin_unlock_irqrestore(&lock, flags);
}

uint64_t kstack_alloc(void)
{
	uint64_t flags = spin_lock_irqsave(&lock);
	uint64_t slot, bottom;

	if (free_count) {
		slot = free_slots[--free_count];
	} else if (next_slot < KSTACK_SLOTS_END) {
		slot = next_slot;
		next_slot += KSTACK_SLOT_SIZE;
	} else {
		spin_unlock_irqrestore(&lock, flags);
		return 0;
	}
	in_use++;
	spin_unlock_irqrestore(&lock, flags);

	bottom = slot + KSTACK_SLOT_SIZE - KSTACK_SIZE;
	for (uint64_t va = bottom; va < slot + KSTACK_SLOT_SIZE;
	     va += PAGE_SIZE) {
		uint64_t frame = pmm_alloc_frame();
		int err = frame ? 0 : -ENOMEM;

		if (!err)
			err = kmap_map_page(
				va, frame,
				PTE_WRITE | (boot_cpu.nx ? PTE_NX : 0) |
					(boot_cpu.pge ? PTE_GLOBAL : 0));
		KASSERT(!err || err == -ENOMEM, "mapping stack page %#llx: %d",
			(unsigned long long)va, err);
		if (err) {
			/* Out of memory for the page or a table. */
			if (frame)
				pmm_free_frame(frame);
			kstack_free_pages(slot, bottom, va);
			return 0;
		}
	}
	return slot + KSTACK_SLOT_SIZE;
}

void kstack_free(uint64_t top)
{
	KASSERT(top > KSTACK_BASE && top <= KSTACK_SLOTS_END &&
			IS_ALIGNED(top, KSTACK_SLOT_SIZE),
		"%#llx is not a kernel stack top", (unsigned long long)top);
	kstack_free_pages(top - KSTACK_SLOT_SIZE, top - KSTACK_SIZE, top);
}

uint64_t kstack_in_use(void)
{
	return __atomic_load_n(&in_use, __ATOMIC_RELAXED);
}

bool kstack_is_guard(uint64_t va)
{
	if (va < KSTACK_BASE || va >= KSTACK_BASE + KSTACK_WINDOW)
		return false;
	return (va - KSTACK_BASE) % KSTACK_SLOT_SIZE <
	       KSTACK_SLOT_SIZE - KSTACK_SIZE;
}
