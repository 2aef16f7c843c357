/* SPDX-License-Identifier: MIT */
/*
 * The TLB oracle: once a flush call returns, no CPU may use a translation
 * it removed. Groups of pages, in user address spaces or in the kernel
 * half, go through versions; a stepper makes each change (page tables,
 * then the flush) under a sequence count, and readers on every CPU probe
 * the pages and check each outcome against the versions the count allows,
 * so a translation that outlived its flush shows as an old version. The
 * protocol, and why it needs no timing: the top of tests/kernel/test_tlb.c.
 *
 * A test builds one oracle and runs it:
 *
 *	struct oracle *o = oracle_begin(rounds);
 *	struct mm *mm = oracle_add_mm(t, o);
 *
 *	oracle_add_anchored_group(t, o, mm, GROUP_REMAP, 0, pages);
 *	for (unsigned cpu = 0; cpu < o->cpus; cpu++)
 *		oracle_add_stepping_reader(o, cpu, mm);
 *	oracle_run(t, o);
 *
 * oracle_run starts the threads, reports (KTAP notes, and a failed
 * expectation for each of the first FAILURES_KEPT failures) and takes it
 * all down. A step of setting up that fails marks the oracle broken:
 * oracle_run then starts no thread.
 *
 *   tlb_oracle.c          versions, setting up, running and reporting
 *   tlb_oracle_threads.c  reading, stepping, the threads' loops
 */
#ifndef TESTS_KERNEL_TLB_ORACLE_H
#define TESTS_KERNEL_TLB_ORACLE_H

#include "lib/types.h"
#include "arch/layout.h"
#include "sched/wait.h"
#include "sync/spinlock.h"

struct ktest_context;
struct mm;
struct thread;

/*
 * Limits. More than ORACLE_CPUS_MAX CPUs would add threads and time but no
 * new case (-smp 16 runs test=all too). ORACLE_MMS_MAX bounds the
 * slot-recycling test at asid_slots + 2 address spaces per CPU.
 */
#define ORACLE_CPUS_MAX	   16
#define ORACLE_MMS_MAX	   12
#define ORACLE_GROUPS_MAX  16
#define ORACLE_WORKERS_MAX (ORACLE_CPUS_MAX * (ORACLE_MMS_MAX + 1) + 1)
#define ORACLE_ANCHORS_MAX ORACLE_GROUPS_MAX /* one per group at most */
#define GROUP_PAGES_MAX	   256 /* 1 MiB: within one page table with its anchor */
#define FAILURES_KEPT	   8

/*
 * Where groups live. User groups get a 2 MiB region (one page table) each
 * in PML4 slot 32, far from where programs are loaded; page 0 of a region
 * is an anchor that stays mapped, so a remap never empties the table. The
 * freed-tables group has PML4 slot 64 to itself: unmapping it frees its
 * page table, page directory and PDPT. Kernel groups use the 1 GiB below
 * the last one of the device window (ioremap fills it from the bottom;
 * MM0003 uses the last 1 GiB).
 */
#define USER_GROUPS_BASE   0x0000100000000000ULL
#define USER_FREEABLE_BASE 0x0000200000000000ULL
#define KERNEL_GROUPS_BASE (IOREMAP_BASE + IOREMAP_SIZE - 2 * HUGE_PAGE_SIZE)
#define ANCHOR_PAGES	   1

/* --- Groups of pages ------------------------------------------------------ */

enum group_kind {
	GROUP_REMAP,	   /* every version on new frames */
	GROUP_CYCLE,	   /* filled, read-only, unmapped, mapped zeroed */
	GROUP_FREE_TABLES, /* filled, unmapped (tables freed), mapped zeroed */
};

struct group {
	/* Set up before the threads start. */
	unsigned id; /* in the patterns */
	enum group_kind kind;
	struct mm *mm; /* NULL: the kernel half */
	uint64_t va;
	unsigned pages;
	/* Atomic: 2k while version k is in force, 2k+1 while changing. */
	uint64_t seq;
	/* Only the stepper of the round uses these. */
	uint64_t new_frames[GROUP_PAGES_MAX];
	uint64_t old_frames[GROUP_PAGES_MAX];
};

static inline uint64_t oracle_page_va(const struct group *g, unsigned page)
{
	return g->va + (uint64_t)page * PAGE_SIZE;
}

/* --- The oracle ----------------------------------------------------------- */

enum worker_kind {
	WORKER_READER,	/* reads without pause (or yields every few passes) */
	WORKER_PARK,	/* reads once a round, then blocks until it ends */
	WORKER_MIGRATE, /* reads, then moves to the next CPU */
	WORKER_BUSY,	/* kernel thread keeping a parked reader's CPU busy */
	WORKER_STEPPER, /* kernel thread that only steps */
	WORKER_WITNESS, /* reads with interrupts off until the round ends */
};

struct worker {
	/* Set up before the threads start. */
	enum worker_kind kind;
	unsigned cpu; /* pinned there (WORKER_MIGRATE: where it is now) */
	struct mm *mm;
	unsigned yield_every; /* WORKER_READER: passes per yield, 0: never */
	unsigned rest_after;  /* WORKER_READER: passes before it rests */
	bool in_rotation;     /* takes turns as the stepper */
	struct worker *busy;  /* WORKER_PARK: its CPU's busy thread, or NULL */
	struct thread *thread;

	/* Atomic, read by steppers. */
	uint64_t passes;  /* complete read passes */
	uint32_t parked;  /* WORKER_PARK: rounds it has parked for */
	uint32_t holding; /* WORKER_WITNESS: rounds it has held for */

	struct wait_queue wq; /* WORKER_PARK and WORKER_BUSY sleep here */
	uint32_t released;    /* guarded by wq.lock: rounds it may go past */

	/* The thread's own; read by the test once it has exited. */
	uint32_t stepped; /* one past the last round it stepped */
	uint64_t checks;
};

enum failure_kind {
	FAIL_READ,  /* a read saw what no allowed version holds */
	FAIL_WRITE, /* a write went through where it must fault, or faulted */
	FAIL_STEP,  /* changing the page tables failed */
	FAIL_STUCK, /* a wait outlived WAIT_LIMIT_NS */
};

struct failure {
	enum failure_kind kind;
	unsigned cpu;
	uint32_t round;
	const struct group *g;
	unsigned page;
	uint64_t lo, hi; /* the versions allowed */
	int err;	 /* the probe's or the step's */
	uint64_t value;	 /* what the read returned */
	const char *what;
};

struct oracle {
	/* Built by the test before the threads start; read-only after. */
	unsigned cpus;
	uint32_t rounds;
	unsigned steppers_per_round;
	struct mm *mms[ORACLE_MMS_MAX];
	unsigned mm_count;
	struct group groups[ORACLE_GROUPS_MAX];
	unsigned group_count;
	uint64_t kernel_anchors[ORACLE_ANCHORS_MAX];
	unsigned kernel_anchor_count;
	struct worker workers[ORACLE_WORKERS_MAX];
	unsigned worker_count;
	unsigned rotation[ORACLE_WORKERS_MAX]; /* workers taking turns */
	unsigned rotation_count;
	bool broken; /* setting up failed: do not run */

	/* Atomic while the threads run. */
	uint32_t round;	   /* rounds completed */
	uint32_t arrived;  /* steppers that reached a round's barrier */
	uint32_t finished; /* steppers that finished their part of a round */
	uint32_t stop;	   /* every thread leaves */
	uint32_t exited;   /* threads that returned */
	uint32_t kicks;	   /* wake-ups of resting readers so far */
	struct wait_queue rest_wq; /* readers sharing a CPU rest here */

	struct spinlock failure_lock;
	unsigned failures; /* guarded by failure_lock */
	struct failure kept[FAILURES_KEPT];
};

/* --- Setting up and running ----------------------------------------------- */

/* The oracle, cleared, for `rounds` rounds (fewer beyond 4 CPUs, on Bochs). */
struct oracle *oracle_begin(uint32_t rounds);
/* Whether there are n CPUs or more; if not, the test is skipped. */
bool oracle_need_cpus(struct ktest_context *t, unsigned n);
/* A new address space, or NULL (the oracle is then broken). */
struct mm *oracle_add_mm(struct ktest_context *t, struct oracle *o);
/* A group at va, mapped at version 0, in mm or (NULL) the kernel half. */
void oracle_add_group(struct ktest_context *t, struct oracle *o, struct mm *mm,
		      enum group_kind kind, uint64_t va, unsigned pages);
/* A group in region `region` of mm's (or the kernel's), behind its anchor. */
void oracle_add_anchored_group(struct ktest_context *t, struct oracle *o,
			       struct mm *mm, enum group_kind kind,
			       unsigned region, unsigned pages);
/* A thread of `kind` pinned to cpu; its other fields may then be set. */
struct worker *oracle_add_worker(struct oracle *o, enum worker_kind kind,
				 unsigned cpu, struct mm *mm);
/* A kernel thread that does nothing but step, round after round. */
void oracle_add_stepper(struct oracle *o, unsigned cpu);
/* A reader that spins and takes its turn as stepper. */
struct worker *oracle_add_stepping_reader(struct oracle *o, unsigned cpu,
					  struct mm *mm);
/*
 * A reader that holds interrupts off from its read before the round's
 * step until the round ends, or for WITNESS_HOLD_NS: a flush that returns
 * without waiting for its CPU is then seen by its next read, every round.
 */
struct worker *oracle_add_witness(struct oracle *o, unsigned cpu,
				  struct mm *mm);
/* Runs the threads the test set up, reports, and takes it all down. */
void oracle_run(struct ktest_context *t, struct oracle *o);

#endif
