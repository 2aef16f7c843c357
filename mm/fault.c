// SPDX-License-Identifier: MIT
/*
 * Spurious page faults: the rule that decides whether a fault on a user
 * address is real.
 *
 * Why they happen. A CPU may keep a translation after the page tables
 * changed until something invalidates it (SDM Vol. 3A 4.10.4). When rights
 * shrink the kernel flushes before it relies on the change (mm/tlb.c), so
 * a stale entry can only ever give fewer rights than the tables do: a
 * read-only entry for a page made writable, a cached walk through an entry
 * since changed, or nothing for a page since mapped. Using one, the CPU
 * faults on an access the tables allow ("spurious" in 4.10.4.3). It happens
 * while a change is in flight (its page-table stores are visible, its
 * flush has not reached this CPU yet) and after any change that gives
 * rights, if it was not flushed.
 *
 * The rule (mm_fault_check):
 *   1. walk the address space's tables under mm->lock, so that no change
 *      is half made, and look at the leaf entry for va: present, writable
 *      for a write, not NX for a fetch, a user page for a user-mode access.
 *      (Only leaves carry rights here: every user-half table entry above
 *      them is present, writable and user, mm/pagetable.c.)
 *   2. refused: a real fault; the caller kills the task or returns -EFAULT.
 *   3. allowed: the fault was spurious. Flush va on this CPU
 *      (flush_tlb_spurious_fault: INVLPG, counted as `spurious`, traced)
 *      and run the access again.
 *   4. the bound: the same page faulting spuriously again and again, with
 *      no change of the space in between (its generation unchanged), means
 *      the CPU refuses what step 1 allows. After MM_FAULT_RETRIES_MAX
 *      retries in a row it is treated as real, and the caller says why.
 *
 * Why one local flush is enough. The fault itself already dropped the
 * TLB entries for va's page and the cached walks that translate va in the
 * current PCID (SDM 4.10.4.1, "page faults invalidate ..."), so that the
 * fault cannot recur unless memory causes it. Other CPUs do not matter:
 * the access runs again here. What the fault leaves is cached walks of
 * other addresses through tables the change touched, which another access
 * of the same instruction (the other page of a split access, the
 * instruction fetch) may use and fault on in turn. The INVLPG drops every
 * cached walk of the current PCID whatever its address (4.10.4.1), and
 * va's TLB entries once more: the retry walks memory for all of them.
 * INVLPG and not INVPCID type 0, which drops only the walks for va.
 *
 * Nothing here races a flush: a change made after the walk of step 1 is
 * the next fault's business (a real one, if it took rights away).
 */
#include "mm/fault.h"
#include "arch/layout.h"
#include "mm/mm.h"
#include "mm/pagetable.h"
#include "mm/tlb.h"
#include "sync/shared.h"
#include "sync/spinlock.h"

/* Step 1: what the leaf entry pte allows, against what was tried. */
static bool pte_allows(uint64_t pte, unsigned access)
{
	if (!(pte & PTE_PRESENT))
		return false;
	if ((access & MM_FAULT_WRITE) && !(pte & PTE_WRITE))
		return false;
	if ((access & MM_FAULT_FETCH) && (pte & PTE_NX))
		return false;
	/* A kernel fetch from a user page is never allowed (SMEP). */
	if ((access & MM_FAULT_FETCH) && !(access & MM_FAULT_USER))
		return false;
	return !(access & MM_FAULT_USER) || (pte & PTE_USER);
}

static bool tables_allow(struct mm *mm, uint64_t va, unsigned access)
{
	uint64_t flags, pte = 0;
	bool allowed;

	if (!user_range_ok(va, 1))
		return false;
	flags = spin_lock_irqsave(&mm->lock);
	allowed = !pt_translate(mm->root, va, NULL, &pte) &&
		  pte_allows(pte, access);
	spin_unlock_irqrestore(&mm->lock, flags);
	return allowed;
}

/* Step 4: counts this spurious fault; true while retrying is still fine. */
static bool within_bound(struct mm *mm, uint64_t page,
			 struct mm_fault_history *h)
{
	/* Relaxed: the generation only tells one run of faults from the
	 * next. A change in flight may not have bumped it yet; its bump then
	 * restarts the count at the next fault, later than it could. */
	uint64_t gen = shared_load(&mm->tlb_gen, __ATOMIC_RELAXED);

	if (h->context_id != mm->context_id || h->page != page ||
	    h->gen != gen) {
		*h = (struct mm_fault_history){
			.context_id = mm->context_id, .page = page, .gen = gen};
	}
	return ++h->count <= MM_FAULT_RETRIES_MAX;
}

enum mm_fault_verdict mm_fault_check(struct mm *mm, uint64_t va,
				     unsigned access,
				     struct mm_fault_history *history)
{
	uint64_t page = ALIGN_DOWN(va, PAGE_SIZE);

	if (!tables_allow(mm, va, access)) {
		*history = (struct mm_fault_history){0};
		return MM_FAULT_REFUSED;
	}
	if (!within_bound(mm, page, history)) {
		*history = (struct mm_fault_history){0};
		return MM_FAULT_LOOPING;
	}
	flush_tlb_spurious_fault(mm, page);
	return MM_FAULT_RETRY;
}
