/* SPDX-License-Identifier: MIT */
/*
 * Page faults on user addresses: is this one real, or spurious?
 *
 * The CPU may fault on an access that the page tables in memory allow: a
 * TLB entry or a cached walk older than a change that gave rights (SDM
 * Vol. 3A 4.10.4.3; the kernel flushes only where rights shrink, and a
 * change is in flight until its flush returns). mm_fault_check is the one
 * rule for telling the two apart, used by the kernel's fault paths
 * (proc/task.c) and, compiled unchanged, by tests/host/tlb_sim.
 */
#ifndef MM_FAULT_H
#define MM_FAULT_H

#include "lib/types.h"

struct mm;

/* What the faulting access was (from the page-fault error code). */
enum mm_fault_access {
	MM_FAULT_READ = 0,
	MM_FAULT_WRITE = 1 << 0, /* a write (PF_WRITE) */
	MM_FAULT_FETCH = 1 << 1, /* an instruction fetch (PF_FETCH) */
	MM_FAULT_USER = 1 << 2,	 /* made in user mode (PF_USER) */
};

enum mm_fault_verdict {
	MM_FAULT_RETRY,	  /* spurious: flushed here, run the access again */
	MM_FAULT_REFUSED, /* the page tables refuse it: a real fault */
	MM_FAULT_LOOPING, /* allowed, yet spurious too often in a row */
};

/*
 * Spurious faults in a row at one page before the next one counts as real.
 * One is the rule (the fault and the flush drop everything that made it);
 * a second needs another change of the same page to land in between, and
 * each of those bumps the generation, which restarts the count. Four in a
 * row under one generation means the hardware refuses what the rule says
 * it allows: looping on it would hang the thread for good.
 */
#define MM_FAULT_RETRIES_MAX 4

/*
 * The spurious faults of one thread (the kernel: struct thread; the
 * simulator: one per simulated CPU). Only its owner uses it. Zero: none.
 */
struct mm_fault_history {
	uint64_t context_id; /* the address space of the last one */
	uint64_t page;	     /* its page */
	uint64_t gen;	     /* the space's tlb_gen when it was retried */
	unsigned count;	     /* spurious faults in a row there */
};

/*
 * Decides a page fault at va in mm, which must be loaded and active on
 * this CPU (the faulting thread's own): the page tables are walked again
 * under mm->lock, and when they allow the access (access: enum
 * mm_fault_access bits) this CPU's stale entries for va are flushed
 * (flush_tlb_spurious_fault) and the answer is MM_FAULT_RETRY, unless
 * history says it is the (MM_FAULT_RETRIES_MAX + 1)th in a row there:
 * MM_FAULT_LOOPING. Otherwise MM_FAULT_REFUSED. Interrupts off, mm->lock
 * not held.
 */
enum mm_fault_verdict mm_fault_check(struct mm *mm, uint64_t va,
				     unsigned access,
				     struct mm_fault_history *history);

#endif
