// SPDX-License-Identifier: MIT
/*
 * The TLB oracle: once a flush call returns, no CPU may use a translation
 * it removed.
 *
 * Versions. A group of pages, in a user address space or in the kernel
 * half, goes through versions 0, 1, 2, ... Each version says of every page
 * whether it is mapped, whether it is writable, and what its first word
 * holds: a pattern naming the group, the page and the version, so a stale
 * read tells which version it came from. A stepper moves a group on:
 *
 *	seq = 2k + 1		the change from version k to k + 1 begins
 *	edit the page tables, then flush_tlb_mm_range / flush_tlb_kernel_range
 *	seq = 2k + 2		every CPU has flushed: only k + 1 may be seen
 *
 * Readers. Threads on every CPU load seq (s1), probe a page (a read, and
 * for groups that become read-only a write, both through the exception
 * table, so a fault is an outcome rather than a crash), and load seq again
 * (s2). An outcome is legal if some version from s1 / 2 to (s2 + 1) / 2
 * explains it. A translation a flush should have removed shows up as a
 * version below s1 / 2: the stale reads this file exists to catch. The
 * bounds come from the order of the loads alone; nothing here is timed.
 *
 * Rounds. Stale entries show by chance (a TLB may drop an entry whenever
 * it likes), so every test repeats its round many times, and before each
 * round the stepper waits until every reader has read the current version,
 * so that their TLBs hold it when the change comes.
 *
 * Threads. Readers of user memory are kernel threads with thread->mm set
 * (each holding a reference): the scheduler switches address spaces for
 * them exactly as for user threads, so the tests drive switch_mm_irqs_off,
 * lazy TLB and ASID recycling as user programs do, while a fault costs a
 * probe's -EFAULT instead of a task. Each is pinned to a CPU by affinity
 * (the migration test moves them on purpose). The variants differ only in
 * what the readers do between reads: spin, yield to other address spaces,
 * park (their CPU idles or runs a kernel thread: lazy), or migrate.
 */
#include "tests/ktest.h"
#include "apic/tsc.h"
#include "kernel/cpu.h"
#include "kernel/errno.h"
#include "kernel/extable.h"
#include "kernel/format.h"
#include "kernel/panic.h"
#include "kernel/platform.h"
#include "kernel/string.h"
#include "kernel/x86.h"
#include "mm/kmap.h"
#include "mm/layout.h"
#include "mm/mm.h"
#include "mm/pagetable.h"
#include "mm/pmm.h"
#include "mm/tlb.h"
#include "sched/sched.h"
#include "sched/thread.h"
#include "sched/wait.h"
#include "smp/call.h"
#include "smp/percpu.h"
#include "smp/spinlock.h"

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
 * A pattern: a magic in bits 63..48 (never zero, never a plausible page
 * table entry), the group in 47..40, the page in 39..28, the version below.
 */
#define PATTERN_MAGIC	     0x7e5b000000000000ULL
#define PATTERN_GROUP_SHIFT  40
#define PATTERN_PAGE_SHIFT   28
#define PATTERN_VERSION_MASK ((1ULL << PATTERN_PAGE_SHIFT) - 1)
#define WRITE_PROBE_OFFSET   8 /* the word write probes hit: never checked */
#define WRITE_PROBE_VALUE    0 /* harmless even in a page reused as a table */
#define NOT_A_PATTERN	     (-1)

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

/*
 * Rounds per test, sized so the suite takes some 15 s under TCG with 4
 * CPUs on a busy 2-core host. A round costs every reader two passes over
 * its pages plus the flush; the slot-recycling round makes every CPU cycle
 * through all its address spaces twice, hence fewer. With more than
 * ROUNDS_CPUS CPUs (more vCPUs than host cores, each round waits on all of
 * them) the rounds shrink in proportion, and Bochs, some 50 times slower
 * than TCG, runs a tenth: every bug an emulator can show is caught in the
 * first rounds (docs/tlb-bugs.md), the rest is for chance.
 */
#define ROUNDS_SHARED	    300
#define ROUNDS_CYCLE	    300
#define ROUNDS_LAZY	    150
#define ROUNDS_ASID	    24
#define ROUNDS_MIGRATE	    100
#define ROUNDS_CEILING	    100
#define ROUNDS_FREED	    150
#define ROUNDS_KERNEL	    150
#define ROUNDS_CONCURRENT   150
#define ROUNDS_SWITCH	    100
#define ROUNDS_BACK_TO_BACK 150
#define ROUNDS_CPUS	    4
#define ROUNDS_MIN	    6
#define BOCHS_DIVISOR	    10

/*
 * Pages per group: enough that a flush is a range (several INVLPGs, or
 * one whole-context flush past the ceiling), few enough that a pass is
 * short and every reader sees the round's change within microseconds.
 */
#define SHARED_PAGES	   4
#define SMALL_PAGES	   2
#define KERNEL_PAGES	   3
#define SWITCH_SPIN_PASSES 8 /* reads between two address-space switches */

/*
 * A reader rests (halts, or blocks if it shares its CPU) after this many
 * passes without news, until the next stepper kicks it. Spinning vCPUs
 * would take the host cores from those with work to do (TCG with more
 * vCPUs than host cores), and resting keeps the TLB as it is: a stale
 * entry is still there when the kick comes. A round takes a few passes,
 * so readers still spin while its flush is sent (what tlb_bug=no_wait
 * needs to show).
 */
#define REST_AFTER_PASSES 64
/*
 * Readers that switch address spaces must still be switching when the
 * flush comes: they rest only after many switches (8 passes apart).
 */
#define SWITCH_REST_AFTER_PASSES 256
/*
 * Readers of the slot-recycling test rest after a few passes: each pass
 * is an address-space switch already, and the round needs only two.
 */
#define ASID_REST_AFTER_PASSES 4

/*
 * How long a wait may last before the run is declared stuck: far beyond
 * any round, even Bochs with 8 CPUs, yet it ends a run that a bug has
 * wedged with a report instead of the runner's timeout.
 */
#define WAIT_LIMIT_NS 30000000000ULL
#define RUN_LIMIT_NS  240000000000ULL
#define REAP_LIMIT_NS 20000000000ULL
#define POLL_NS	      1000000ULL

/* --- Groups and their versions ------------------------------------------- */

enum group_kind {
	GROUP_REMAP,	   /* every version on new frames */
	GROUP_CYCLE,	   /* filled, read-only, unmapped, mapped zeroed */
	GROUP_FREE_TABLES, /* filled, unmapped (tables freed), mapped zeroed */
};

enum phase {
	PHASE_FILLED,	 /* writable, first word = pattern of this version */
	PHASE_READ_ONLY, /* the previous version's contents, read-only */
	PHASE_UNMAPPED,
	PHASE_ZEROED, /* just mapped by mm_map_anon: zero-filled */
};

static const enum phase cycle_phases[] = {PHASE_FILLED, PHASE_READ_ONLY,
					  PHASE_UNMAPPED, PHASE_ZEROED};
static const enum phase free_tables_phases[] = {PHASE_FILLED, PHASE_UNMAPPED,
						PHASE_ZEROED};

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

struct page_state {
	bool present;
	bool writable;
	uint64_t value; /* the first word, when present */
};

static uint64_t pattern(const struct group *g, unsigned page, uint64_t version)
{
	return PATTERN_MAGIC | (uint64_t)g->id << PATTERN_GROUP_SHIFT |
	       (uint64_t)page << PATTERN_PAGE_SHIFT |
	       (version & PATTERN_VERSION_MASK);
}

/* The version whose pattern value is, or NOT_A_PATTERN. */
static int64_t pattern_version(const struct group *g, unsigned page,
			       uint64_t value)
{
	if ((value & ~PATTERN_VERSION_MASK) != pattern(g, page, 0))
		return NOT_A_PATTERN;
	return (int64_t)(value & PATTERN_VERSION_MASK);
}

static enum phase phase_of(const struct group *g, uint64_t version)
{
	if (g->kind == GROUP_CYCLE)
		return cycle_phases[version % ARRAY_SIZE(cycle_phases)];
	if (g->kind == GROUP_FREE_TABLES)
		return free_tables_phases[version %
					  ARRAY_SIZE(free_tables_phases)];
	return PHASE_FILLED;
}

static struct page_state state_of(const struct group *g, unsigned page,
				  uint64_t version)
{
	switch (phase_of(g, version)) {
	case PHASE_READ_ONLY:
		return (struct page_state){true, false,
					   pattern(g, page, version - 1)};
	case PHASE_UNMAPPED:
		return (struct page_state){false, false, 0};
	case PHASE_ZEROED:
		return (struct page_state){true, true, 0};
	case PHASE_FILLED:
		break;
	}
	return (struct page_state){true, true, pattern(g, page, version)};
}

static uint64_t page_va(const struct group *g, unsigned page)
{
	return g->va + (uint64_t)page * PAGE_SIZE;
}

/* --- The oracle's state --------------------------------------------------- */

enum worker_kind {
	WORKER_READER,	/* reads without pause (or yields every few passes) */
	WORKER_PARK,	/* reads once a round, then blocks until it ends */
	WORKER_MIGRATE, /* reads, then moves to the next CPU */
	WORKER_BUSY,	/* kernel thread keeping a parked reader's CPU busy */
	WORKER_STEPPER, /* kernel thread that only steps */
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
	uint64_t passes; /* complete read passes */
	uint32_t parked; /* WORKER_PARK: rounds it has parked for */

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

/* One oracle at a time: tests run one after the other. */
static struct oracle oracle;

static bool stopped(const struct oracle *o)
{
	return __atomic_load_n(&o->stop, __ATOMIC_ACQUIRE);
}

static void record(struct oracle *o, const struct failure *f)
{
	uint64_t flags = spin_lock_irqsave(&o->failure_lock);

	if (o->failures < FAILURES_KEPT)
		o->kept[o->failures] = *f;
	o->failures++;
	spin_unlock_irqrestore(&o->failure_lock, flags);
}

/* Lets w go past `rounds` rounds (never back) and wakes it to look. */
static void release(struct worker *w, uint32_t rounds)
{
	uint64_t flags = spin_lock_irqsave(&w->wq.lock);

	if (rounds > w->released)
		w->released = rounds;
	spin_unlock_irqrestore(&w->wq.lock, flags);
	wake_all(&w->wq);
}

/* The interrupt is the point: it ends a resting reader's HLT. */
static void wake_up(void *arg)
{
	(void)arg;
}

/* Resting readers read again (after a new kicks value is visible). */
static void kick(struct oracle *o)
{
	__atomic_add_fetch(&o->kicks, 1, __ATOMIC_SEQ_CST);
	wake_all(&o->rest_wq);
	smp_call_function_many(&cpu_online_mask, wake_up, NULL,
			       SMP_CALL_NO_WAIT);
}

/* Every thread leaves: blocked and resting ones are woken to see it. */
static void stop_all(struct oracle *o)
{
	__atomic_store_n(&o->stop, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < o->worker_count; i++) {
		struct worker *w = &o->workers[i];

		if (w->kind == WORKER_PARK || w->kind == WORKER_BUSY)
			release(w, 0);
	}
	kick(o);
}

/* One more turn of a wait: false once the run stops or the wait is stuck. */
static bool keep_waiting(struct oracle *o, uint64_t deadline,
			 const struct worker *on, uint32_t round,
			 const char *what)
{
	if (stopped(o))
		return false;
	if (tsc_read_ordered() > deadline) {
		struct failure f = {.kind = FAIL_STUCK,
				    .cpu = on->cpu,
				    .round = round,
				    .what = what};

		record(o, &f);
		stop_all(o);
		return false;
	}
	/* Others on this CPU (readers of other address spaces) must run. */
	yield();
	return true;
}

/* --- Reading -------------------------------------------------------------- */

/* Probes one word; SMAP needs the door open for user pages. */
static int probe_read(const struct group *g, uint64_t va, uint64_t *value)
{
	bool user = g->mm && boot_cpu.smap;
	int err;

	if (user)
		stac();
	err = probe_read_u64((const void *)va, value);
	if (user)
		clac();
	return err;
}

static int probe_write(const struct group *g, uint64_t va)
{
	bool user = g->mm && boot_cpu.smap;
	int err;

	if (user)
		stac();
	err = probe_write_u64((void *)(va + WRITE_PROBE_OFFSET),
			      WRITE_PROBE_VALUE);
	if (user)
		clac();
	return err;
}

/*
 * Whether a read's outcome is explained by a version in [lo, hi]. A remap
 * unmaps each page before it maps the new frame, so a fault is legal while
 * a remap overlapped the read (lo < hi).
 */
static bool read_explained(const struct group *g, unsigned page, uint64_t lo,
			   uint64_t hi, int err, uint64_t value)
{
	if (err && g->kind == GROUP_REMAP && lo < hi)
		return true;
	for (uint64_t k = lo; k <= hi; k++) {
		struct page_state s = state_of(g, page, k);

		if (s.present ? !err && value == s.value : err != 0)
			return true;
	}
	return false;
}

static bool write_explained(const struct group *g, unsigned page, uint64_t lo,
			    uint64_t hi, int err)
{
	for (uint64_t k = lo; k <= hi; k++) {
		struct page_state s = state_of(g, page, k);

		if ((s.present && s.writable) == (err == 0))
			return true;
	}
	return false;
}

/* Reads (and for cycling groups writes) every page of every group w sees. */
static void read_pass(struct oracle *o, struct worker *w)
{
	for (unsigned i = 0; i < o->group_count; i++) {
		const struct group *g = &o->groups[i];
		bool writes = g->kind == GROUP_CYCLE;

		if (g->mm != w->mm)
			continue;
		for (unsigned page = 0; page < g->pages; page++) {
			uint64_t va = page_va(g, page), value = 0, s1, s2;
			int read_err, write_err = 0;
			struct failure f = {
				.cpu = this_cpu_index(),
				.round = __atomic_load_n(&o->round,
							 __ATOMIC_RELAXED),
				.g = g,
				.page = page};

			s1 = __atomic_load_n(&g->seq, __ATOMIC_ACQUIRE);
			read_err = probe_read(g, va, &value);
			if (writes)
				write_err = probe_write(g, va);
			s2 = __atomic_load_n(&g->seq, __ATOMIC_ACQUIRE);
			f.lo = s1 / 2;
			f.hi = (s2 + 1) / 2;
			w->checks += writes ? 2 : 1;
			if (!read_explained(g, page, f.lo, f.hi, read_err,
					    value)) {
				f.kind = FAIL_READ;
				f.err = read_err;
				f.value = value;
				record(o, &f);
			}
			if (writes &&
			    !write_explained(g, page, f.lo, f.hi, write_err)) {
				f.kind = FAIL_WRITE;
				f.err = write_err;
				record(o, &f);
			}
		}
	}
	__atomic_add_fetch(&w->passes, 1, __ATOMIC_RELEASE);
}

/* --- Stepping ------------------------------------------------------------- */

static uint64_t user_pte_flags(void)
{
	return PTE_USER | PTE_WRITE | (boot_cpu.nx ? PTE_NX : 0);
}

static uint64_t kernel_pte_flags(void)
{
	/* As the kernel maps its own data: global, so CR3 loads keep it. */
	return PTE_WRITE | (boot_cpu.nx ? PTE_NX : 0) |
	       (boot_cpu.pge ? PTE_GLOBAL : 0);
}

/* Writes version's patterns into the frames mapped now. */
static int fill(struct group *g, uint64_t version)
{
	uint64_t flags = spin_lock_irqsave(&g->mm->lock);
	int err = 0;

	for (unsigned page = 0; page < g->pages && !err; page++) {
		uint64_t pa;

		err = pt_translate(g->mm->root, page_va(g, page), &pa, NULL);
		if (!err)
			/* One store: a reader sees the old word or the new. */
			__atomic_store_n((uint64_t *)phys_to_virt(pa),
					 pattern(g, page, version),
					 __ATOMIC_RELAXED);
	}
	spin_unlock_irqrestore(&g->mm->lock, flags);
	return err;
}

/* Replaces each page's frame by a new one that already holds next. */
static int step_remap(struct group *g, uint64_t next)
{
	uint64_t end = page_va(g, g->pages);
	struct pt_freed freed = {0};
	int err = 0;

	for (unsigned page = 0; page < g->pages; page++) {
		uint64_t frame = pmm_alloc_frame();

		if (!frame) {
			while (page--)
				pmm_free_frame(g->new_frames[page]);
			return -ENOMEM;
		}
		*(uint64_t *)phys_to_virt(frame) = pattern(g, page, next);
		g->new_frames[page] = frame;
	}
	if (g->mm) {
		uint64_t flags = spin_lock_irqsave(&g->mm->lock);

		for (unsigned page = 0; page < g->pages && !err; page++) {
			uint64_t va = page_va(g, page), old = 0;

			err = pt_unmap(g->mm->root, va, &old, &freed);
			if (!err)
				err = pt_map(g->mm->root, va,
					     g->new_frames[page], PAGE_4K,
					     user_pte_flags());
			g->old_frames[page] = old & PTE_ADDR_MASK;
		}
		spin_unlock_irqrestore(&g->mm->lock, flags);
		flush_tlb_mm_range(g->mm, g->va, end, PAGE_SHIFT,
				   TLB_TABLES_KEPT);
	} else {
		for (unsigned page = 0; page < g->pages && !err; page++) {
			uint64_t va = page_va(g, page), old = 0;

			err = kmap_unmap_page(va, &old, &freed);
			if (!err)
				err = kmap_map_page(va, g->new_frames[page],
						    kernel_pte_flags());
			g->old_frames[page] = old & PTE_ADDR_MASK;
		}
		flush_tlb_kernel_range(g->va, end);
	}
	/* The anchor keeps every table; a half-done remap leaks, loudly. */
	if (!err && freed.count)
		err = -EBUSY;
	for (unsigned page = 0; page < g->pages && !err; page++)
		pmm_free_frame(g->old_frames[page]);
	return err;
}

/* One step of a cycling group, through the address-space calls. */
static int step_cycle(struct group *g, uint64_t next)
{
	uint64_t len = (uint64_t)g->pages * PAGE_SIZE;

	switch (phase_of(g, next)) {
	case PHASE_READ_ONLY:
		return mm_protect(g->mm, g->va, len, MM_PROT_READ);
	case PHASE_UNMAPPED:
		return mm_unmap(g->mm, g->va, len);
	case PHASE_ZEROED:
		return mm_map_anon(g->mm, g->va, len,
				   MM_PROT_READ | MM_PROT_WRITE);
	case PHASE_FILLED:
		break;
	}
	return fill(g, next);
}

/* Moves g to its next version (the protocol at the top of the file). */
static bool step_group(struct oracle *o, struct group *g, uint32_t round)
{
	uint64_t seq = __atomic_load_n(&g->seq, __ATOMIC_RELAXED);
	uint64_t next = seq / 2 + 1;
	int err;

	/* Odd before any table changes, even only after the flush. */
	__atomic_store_n(&g->seq, seq + 1, __ATOMIC_SEQ_CST);
	err = g->kind == GROUP_REMAP ? step_remap(g, next)
				     : step_cycle(g, next);
	__atomic_store_n(&g->seq, seq + 2, __ATOMIC_RELEASE);
	if (err) {
		struct failure f = {.kind = FAIL_STEP,
				    .cpu = this_cpu_index(),
				    .round = round,
				    .g = g,
				    .err = err};

		record(o, &f);
		stop_all(o);
	}
	return !err;
}

/* Which of this round's stepper slots w has, or -1. */
static int stepper_slot(const struct oracle *o, const struct worker *w,
			uint32_t round)
{
	unsigned self = (unsigned)(w - o->workers);

	if (!w->in_rotation)
		return -1;
	for (unsigned j = 0; j < o->steppers_per_round; j++) {
		if (o->rotation[(round + j) % o->rotation_count] == self)
			return (int)j;
	}
	return -1;
}

/* Odd rounds of parked readers with a busy thread run that thread. */
static bool busy_round(const struct worker *w, uint32_t round)
{
	return w->busy && round % 2;
}

/* Whether w is where the round needs it: read lately, or parked. */
static bool worker_ready(const struct oracle *o, const struct worker *w,
			 const struct worker *me, uint32_t round,
			 uint64_t passes_then)
{
	struct thread *running;

	switch (w->kind) {
	case WORKER_READER:
	case WORKER_MIGRATE:
		if (w == me || stepper_slot(o, w, round) >= 0)
			return true;
		/* Two passes: the one under way may have begun too early. */
		return __atomic_load_n(&w->passes, __ATOMIC_ACQUIRE) >=
		       passes_then + 2;
	case WORKER_PARK:
		if (__atomic_load_n(&w->parked, __ATOMIC_ACQUIRE) <= round)
			return false;
		running = __atomic_load_n(&cpus[w->cpu]->current,
					  __ATOMIC_ACQUIRE);
		if (busy_round(w, round))
			return running == w->busy->thread;
		return running != w->thread;
	case WORKER_BUSY:
	case WORKER_STEPPER:
		break;
	}
	return true;
}

static bool wait_ready(struct oracle *o, const struct worker *me,
		       uint32_t round)
{
	uint64_t passes[ORACLE_WORKERS_MAX];
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(WAIT_LIMIT_NS);

	for (unsigned i = 0; i < o->worker_count; i++)
		passes[i] = __atomic_load_n(&o->workers[i].passes,
					    __ATOMIC_ACQUIRE);
	kick(o);
	for (unsigned i = 0; i < o->worker_count; i++) {
		const struct worker *w = &o->workers[i];

		while (!worker_ready(o, w, me, round, passes[i])) {
			if (!keep_waiting(o, deadline, w, round,
					  "a reader to read or park"))
				return false;
		}
	}
	return true;
}

/* The round is over: parked readers go on, and after the last, all stop. */
static void finish_round(struct oracle *o, uint32_t round)
{
	__atomic_store_n(&o->round, round + 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < o->worker_count; i++) {
		if (o->workers[i].kind == WORKER_PARK)
			release(&o->workers[i], round + 1);
	}
	if (round + 1 >= o->rounds)
		stop_all(o);
	else
		kick(o); /* the next stepper may be resting */
}

/*
 * One stepper's part of a round: wait until the readers are ready, meet
 * the other steppers (so their flushes overlap), step this slot's groups.
 */
static void run_round(struct oracle *o, struct worker *me, uint32_t round,
		      unsigned slot)
{
	unsigned k = o->steppers_per_round;

	read_pass(o, me);
	if (!wait_ready(o, me, round))
		return;
	if (k > 1) {
		uint64_t deadline =
			tsc_read_ordered() + ns_to_tsc(WAIT_LIMIT_NS);

		__atomic_add_fetch(&o->arrived, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&o->arrived, __ATOMIC_ACQUIRE) <
		       (round + 1) * k) {
			if (!keep_waiting(o, deadline, me, round,
					  "the other stepper"))
				return;
		}
	}
	for (unsigned g = slot; g < o->group_count; g += k) {
		if (!step_group(o, &o->groups[g], round))
			return;
	}
	if (__atomic_add_fetch(&o->finished, 1, __ATOMIC_ACQ_REL) ==
	    (round + 1) * k)
		finish_round(o, round);
}

/* --- The threads ---------------------------------------------------------- */

/*
 * Waits for the next kick. Alone on its CPU a reader halts, keeping its
 * address space loaded and active (flushes still come to it, and wake it);
 * readers that share a CPU block, so the others get it.
 */
static void rest(struct oracle *o, const struct worker *w, uint32_t kicks)
{
	uint64_t flags;

	if (!w->yield_every) {
		/* STI's one-instruction shadow: no kick slips in before HLT. */
		cli();
		if (__atomic_load_n(&o->kicks, __ATOMIC_ACQUIRE) == kicks &&
		    !stopped(o))
			sti_hlt();
		else
			sti();
		return;
	}
	flags = spin_lock_irqsave(&o->rest_wq.lock);
	while (__atomic_load_n(&o->kicks, __ATOMIC_ACQUIRE) == kicks &&
	       !stopped(o))
		wait_queue_sleep_locked(&o->rest_wq);
	spin_unlock_irqrestore(&o->rest_wq.lock, flags);
}

static void reader_loop(struct oracle *o, struct worker *w)
{
	uint32_t kicks_seen = 0;
	unsigned passes = 0;

	for (;;) {
		uint32_t round = __atomic_load_n(&o->round, __ATOMIC_ACQUIRE);
		uint32_t kicks = __atomic_load_n(&o->kicks, __ATOMIC_ACQUIRE);
		int slot;

		if (round >= o->rounds || stopped(o))
			break;
		slot = stepper_slot(o, w, round);
		if (slot >= 0 && w->stepped <= round) {
			w->stepped = round + 1;
			run_round(o, w, round, (unsigned)slot);
			continue;
		}
		if (kicks != kicks_seen) {
			kicks_seen = kicks;
			passes = 0;
		}
		if (passes >= w->rest_after)
			rest(o, w, kicks);
		read_pass(o, w);
		passes++;
		if (w->yield_every && passes % w->yield_every == 0)
			yield();
	}
	read_pass(o, w); /* after the last flush */
}

/* Blocks until released past `rounds` or the run stops. */
static void park(struct oracle *o, struct worker *w, uint32_t rounds)
{
	uint64_t flags = spin_lock_irqsave(&w->wq.lock);

	__atomic_store_n(&w->parked, rounds, __ATOMIC_RELEASE);
	while (w->released < rounds && !stopped(o))
		wait_queue_sleep_locked(&w->wq);
	spin_unlock_irqrestore(&w->wq.lock, flags);
}

/*
 * Reads, then parks while the round's step happens: its CPU goes idle or
 * runs the busy kernel thread, lazily keeping the address space loaded
 * (lazy=skip, ipi, dynamic) or leaving it (lazy=off). Coming back, it
 * must catch up before it reads again.
 */
static void park_loop(struct oracle *o, struct worker *w)
{
	for (uint32_t round = 0;; round++) {
		read_pass(o, w);
		if (round >= o->rounds || stopped(o))
			break;
		if (busy_round(w, round))
			release(w->busy, round + 1);
		park(o, w, round + 1);
	}
}

/* Holds a parked reader's CPU, as a kernel thread, until the round ends. */
static void busy_loop(struct oracle *o, struct worker *w)
{
	uint32_t seen = 0;

	for (;;) {
		uint64_t flags = spin_lock_irqsave(&w->wq.lock);

		while (w->released == seen && !stopped(o))
			wait_queue_sleep_locked(&w->wq);
		seen = w->released;
		spin_unlock_irqrestore(&w->wq.lock, flags);
		if (stopped(o))
			break;
		while (__atomic_load_n(&o->round, __ATOMIC_ACQUIRE) < seen &&
		       !stopped(o))
			cpu_relax();
	}
}

static void migrate_loop(struct oracle *o, struct worker *w)
{
	struct cpumask next;

	while (__atomic_load_n(&o->round, __ATOMIC_ACQUIRE) < o->rounds &&
	       !stopped(o)) {
		read_pass(o, w);
		w->cpu = (w->cpu + 1) % o->cpus;
		cpumask_clear_all(&next);
		cpumask_set(&next, w->cpu);
		sched_set_affinity(&next);
	}
	read_pass(o, w);
}

static void stepper_loop(struct oracle *o, struct worker *w)
{
	for (uint32_t round = 0; round < o->rounds && !stopped(o); round++)
		run_round(o, w, round, 0);
}

static void worker_main(void *arg)
{
	struct worker *w = arg;
	struct oracle *o = &oracle;

	switch (w->kind) {
	case WORKER_READER:
		reader_loop(o, w);
		break;
	case WORKER_PARK:
		park_loop(o, w);
		break;
	case WORKER_MIGRATE:
		migrate_loop(o, w);
		break;
	case WORKER_BUSY:
		busy_loop(o, w);
		break;
	case WORKER_STEPPER:
		stepper_loop(o, w);
		break;
	}
	/* Its checks are final: the test reads them after this. */
	__atomic_add_fetch(&o->exited, 1, __ATOMIC_RELEASE);
}

/* --- Setting up ----------------------------------------------------------- */

static uint32_t scaled(uint32_t rounds)
{
	rounds = rounds * ROUNDS_CPUS / MAX(cpu_count, (unsigned)ROUNDS_CPUS);
	if (platform_get() == PLATFORM_BOCHS)
		rounds /= BOCHS_DIVISOR;
	return MAX(rounds, (uint32_t)ROUNDS_MIN);
}

static struct oracle *oracle_begin(uint32_t rounds)
{
	struct oracle *o = &oracle;

	memset(o, 0, sizeof(*o));
	o->cpus = MIN(cpu_count, (unsigned)ORACLE_CPUS_MAX);
	o->rounds = scaled(rounds);
	o->steppers_per_round = 1;
	o->failure_lock = (struct spinlock)SPINLOCK_INIT;
	wait_queue_init(&o->rest_wq);
	return o;
}

static bool need_cpus(struct ktest_context *t, unsigned n)
{
	if (cpu_count >= n)
		return true;
	ktest_skip(t, "needs 2 or more CPUs (boot with SMP=2 or more)");
	return false;
}

static struct mm *add_mm(struct ktest_context *t, struct oracle *o)
{
	struct mm *mm = o->mm_count < ORACLE_MMS_MAX ? mm_create() : NULL;

	if (!KEXPECT(mm, "no address space (%u made)", o->mm_count)) {
		o->broken = true;
		return NULL;
	}
	o->mms[o->mm_count++] = mm;
	return mm;
}

/* Maps the page that keeps va's page table alive under remaps. */
static void add_anchor(struct ktest_context *t, struct oracle *o, struct mm *mm,
		       uint64_t va)
{
	uint64_t frame = 0;
	int err;

	if (o->broken)
		return;
	if (mm) {
		err = mm_map_anon(mm, va, PAGE_SIZE, MM_PROT_READ);
	} else {
		frame = pmm_alloc_frame();
		err = frame ? kmap_map_page(va, frame, kernel_pte_flags())
			    : -ENOMEM;
		if (!err)
			o->kernel_anchors[o->kernel_anchor_count++] = va;
		else if (frame)
			pmm_free_frame(frame);
	}
	if (!KEXPECT(err == 0, "anchor page at %#llx: error %d",
		     (unsigned long long)va, err))
		o->broken = true;
}

/* A group mapped at version 0 (kernel groups: the anchor comes first). */
static void add_group(struct ktest_context *t, struct oracle *o, struct mm *mm,
		      enum group_kind kind, uint64_t va, unsigned pages)
{
	struct group *g = &o->groups[o->group_count];
	int err = 0;

	if (o->broken)
		return;
	KASSERT(o->group_count < ORACLE_GROUPS_MAX && pages <= GROUP_PAGES_MAX,
		"group %u of %u pages is beyond the oracle's limits",
		o->group_count, pages);
	*g = (struct group){.id = o->group_count,
			    .kind = kind,
			    .mm = mm,
			    .va = va,
			    .pages = pages};
	if (mm) {
		err = mm_map_anon(mm, va, (uint64_t)pages * PAGE_SIZE,
				  MM_PROT_READ | MM_PROT_WRITE);
		if (!err)
			err = fill(g, 0);
	} else {
		for (unsigned page = 0; page < pages && !err; page++) {
			uint64_t frame = pmm_alloc_frame();

			if (!frame) {
				err = -ENOMEM;
				break;
			}
			*(uint64_t *)phys_to_virt(frame) = pattern(g, page, 0);
			err = kmap_map_page(page_va(g, page), frame,
					    kernel_pte_flags());
			if (err)
				pmm_free_frame(frame);
		}
	}
	/* Counted even when half made: the end unmaps what is there. */
	o->group_count++;
	if (!KEXPECT(err == 0, "mapping group %u at %#llx: error %d", g->id,
		     (unsigned long long)va, err))
		o->broken = true;
}

static struct worker *add_worker(struct oracle *o, enum worker_kind kind,
				 unsigned cpu, struct mm *mm)
{
	struct worker *w = &o->workers[o->worker_count++];

	KASSERT(o->worker_count <= ORACLE_WORKERS_MAX,
		"more than %d oracle threads", ORACLE_WORKERS_MAX);
	w->kind = kind;
	w->cpu = cpu;
	w->mm = mm;
	w->rest_after = REST_AFTER_PASSES;
	wait_queue_init(&w->wq);
	return w;
}

/* A kernel thread that does nothing but step, round after round. */
static void add_stepper(struct oracle *o, unsigned cpu)
{
	add_worker(o, WORKER_STEPPER, cpu, NULL);
}

/* A reader that spins (yield_every 0) and takes its turn as stepper. */
static struct worker *add_stepping_reader(struct oracle *o, unsigned cpu,
					  struct mm *mm)
{
	struct worker *w = add_worker(o, WORKER_READER, cpu, mm);

	w->in_rotation = true;
	o->rotation[o->rotation_count++] = (unsigned)(w - o->workers);
	return w;
}

static uint64_t region_va(uint64_t base, unsigned region)
{
	return base + (uint64_t)region * LARGE_PAGE_SIZE;
}

/* A user group in its own region, behind the anchor. */
static void add_anchored_group(struct ktest_context *t, struct oracle *o,
			       struct mm *mm, enum group_kind kind,
			       unsigned region, unsigned pages)
{
	uint64_t base = mm ? USER_GROUPS_BASE : KERNEL_GROUPS_BASE;
	uint64_t anchor = region_va(base, region);

	add_anchor(t, o, mm, anchor);
	add_group(t, o, mm, kind, anchor + ANCHOR_PAGES * PAGE_SIZE, pages);
}

/* --- Running and reporting ---------------------------------------------- */

static void start_threads(struct ktest_context *t, struct oracle *o)
{
	static const char *const names[] = {
		[WORKER_READER] = "tlb-read",	  [WORKER_PARK] = "tlb-park",
		[WORKER_MIGRATE] = "tlb-migrate", [WORKER_BUSY] = "tlb-busy",
		[WORKER_STEPPER] = "tlb-step",
	};
	unsigned created;

	for (created = 0; created < o->worker_count; created++) {
		struct worker *w = &o->workers[created];
		struct cpumask pin;

		cpumask_clear_all(&pin);
		cpumask_set(&pin, w->cpu);
		w->thread = thread_create(worker_main, w, names[w->kind], &pin);
		if (!w->thread)
			break;
		if (w->mm) {
			/* The thread's reference: thread_reap drops it. */
			mm_get(w->mm);
			w->thread->mm = w->mm;
		}
	}
	if (!KEXPECT(created == o->worker_count, "thread %u of %u not created",
		     created, o->worker_count))
		/* Those made leave at once. */
		stop_all(o);
	/* Counted out of the total, so waiting for them ends. */
	o->worker_count = created;
	for (unsigned i = 0; i < created; i++)
		sched_start_thread(o->workers[i].thread);
}

/* Waits for every thread to return, then for each to be reaped. */
static void wait_threads(struct ktest_context *t, struct oracle *o,
			 unsigned threads_before)
{
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(RUN_LIMIT_NS);

	while (__atomic_load_n(&o->exited, __ATOMIC_ACQUIRE) <
	       o->worker_count) {
		if (tsc_read_ordered() > deadline) {
			/* The threads still use `oracle`: no test may go on. */
			panic("tlb oracle: %u of %u threads still running "
			      "after %llu s",
			      o->worker_count - o->exited, o->worker_count,
			      (unsigned long long)(RUN_LIMIT_NS / 1000000000));
		}
		sleep_ns(POLL_NS);
	}
	deadline = tsc_read_ordered() + ns_to_tsc(REAP_LIMIT_NS);
	while (thread_count() > threads_before &&
	       tsc_read_ordered() < deadline) {
		sleep_ns(POLL_NS);
		thread_reap();
	}
	KEXPECT(thread_count() <= threads_before,
		"%u oracle threads not reaped",
		thread_count() - threads_before);
}

/* Describes what version k holds at g's page into buf. */
static void describe_state(char *buf, size_t size, const struct group *g,
			   unsigned page, uint64_t k)
{
	struct page_state s = state_of(g, page, k);

	if (!s.present)
		ksnprintf(buf, size, "unmapped: a fault");
	else
		ksnprintf(buf, size, "%s %#llx", s.writable ? "rw" : "ro",
			  (unsigned long long)s.value);
}

static void report_failure(struct ktest_context *t, const struct failure *f)
{
	char want[48], saw[48];
	bool stale = true;

	switch (f->kind) {
	case FAIL_READ:
		describe_state(want, sizeof(want), f->g, f->page, f->lo);
		if (f->err) {
			ksnprintf(saw, sizeof(saw), "a fault");
		} else {
			int64_t v = pattern_version(f->g, f->page, f->value);

			if (v == NOT_A_PATTERN)
				ksnprintf(saw, sizeof(saw), "%#llx",
					  (unsigned long long)f->value);
			else
				ksnprintf(saw, sizeof(saw),
					  "%#llx (version %lld)",
					  (unsigned long long)f->value,
					  (long long)v);
		}
		KEXPECT(!stale,
			"CPU %u round %u: read of %#llx saw %s; version "
			"%llu..%llu wanted (%s)",
			f->cpu, f->round,
			(unsigned long long)page_va(f->g, f->page), saw,
			(unsigned long long)f->lo, (unsigned long long)f->hi,
			want);
		break;
	case FAIL_WRITE:
		describe_state(want, sizeof(want), f->g, f->page, f->lo);
		KEXPECT(!stale,
			"CPU %u round %u: write to %#llx %s; version "
			"%llu..%llu wanted (%s)",
			f->cpu, f->round,
			(unsigned long long)page_va(f->g, f->page),
			f->err ? "faulted" : "went through",
			(unsigned long long)f->lo, (unsigned long long)f->hi,
			want);
		break;
	case FAIL_STEP:
		KEXPECT(!stale, "CPU %u round %u: changing group %u failed: %d",
			f->cpu, f->round, f->g->id, f->err);
		break;
	case FAIL_STUCK:
		KEXPECT(!stale,
			"round %u: waited %llu s for %s on CPU %u: stuck",
			f->round,
			(unsigned long long)(WAIT_LIMIT_NS / 1000000000),
			f->what, f->cpu);
		break;
	}
}

/* Unmaps the kernel groups and anchors, one flushed page at a time. */
static void unmap_kernel_pages(struct oracle *o)
{
	for (unsigned i = 0; i < o->group_count; i++) {
		const struct group *g = &o->groups[i];

		for (unsigned page = 0; page < g->pages && !g->mm; page++) {
			struct pt_freed freed = {0};
			uint64_t va = page_va(g, page), old;

			if (kmap_unmap_page(va, &old, &freed))
				continue;
			flush_tlb_kernel_range(va, va + PAGE_SIZE);
			pt_freed_release(&freed);
			pmm_free_frame(old & PTE_ADDR_MASK);
		}
	}
	for (unsigned i = 0; i < o->kernel_anchor_count; i++) {
		struct pt_freed freed = {0};
		uint64_t va = o->kernel_anchors[i], old;

		if (kmap_unmap_page(va, &old, &freed))
			continue;
		flush_tlb_kernel_range(va, va + PAGE_SIZE);
		pt_freed_release(&freed);
		pmm_free_frame(old & PTE_ADDR_MASK);
	}
}

/* Runs the threads the test set up, reports, and takes it all down. */
static void oracle_run(struct ktest_context *t, struct oracle *o)
{
	unsigned threads_before = thread_count();
	struct tlb_stats before, after;
	uint64_t checks = 0;

	tlb_stats_sum(&before);
	if (o->broken)
		o->worker_count = 0; /* none started */
	else
		start_threads(t, o);
	wait_threads(t, o, threads_before);
	tlb_stats_sum(&after);

	for (unsigned i = 0; i < o->worker_count; i++)
		checks += o->workers[i].checks;
	ktest_note("%llu checks by %u threads on %u CPUs, %u of %u rounds, "
		   "%u failed",
		   (unsigned long long)checks, o->worker_count, o->cpus,
		   o->round, o->rounds, o->failures);
	ktest_note(
		"flush IPIs %llu, full %llu, partial %llu, lazy skips "
		"%llu, catch-ups %llu, ASID hits %llu, misses %llu",
		(unsigned long long)(after.ipis_sent - before.ipis_sent),
		(unsigned long long)(after.flush_full - before.flush_full),
		(unsigned long long)(after.flush_partial -
				     before.flush_partial),
		(unsigned long long)(after.lazy_skips - before.lazy_skips),
		(unsigned long long)(after.gen_catchups - before.gen_catchups),
		(unsigned long long)(after.asid_hits - before.asid_hits),
		(unsigned long long)(after.asid_misses - before.asid_misses));
	for (unsigned i = 0; i < MIN(o->failures, (unsigned)FAILURES_KEPT); i++)
		report_failure(t, &o->kept[i]);
	KEXPECT(o->failures <= FAILURES_KEPT, "and %u failures more",
		o->failures - FAILURES_KEPT);
	KEXPECT(o->broken || o->round == o->rounds || o->failures,
		"the run ended after %u of %u rounds", o->round, o->rounds);

	unmap_kernel_pages(o);
	for (unsigned i = 0; i < o->mm_count; i++)
		mm_put(o->mms[i]);
}

/* --- The tests ------------------------------------------------------------- */

KTEST(TLB0001, tlb, "one address space on every CPU: remapped pages read new")
{
	struct oracle *o = oracle_begin(ROUNDS_SHARED);
	struct mm *mm;

	/* SMAP: Bochs then walks the tables for each kernel access to a
	 * user page, so only the kernel-mapping test can see stale entries
	 * there (docs/tlb-bugs.md). */
	ktest_note("pcid=%d invpcid=%d smap=%d asid_slots=%u lazy=%s "
		   "ceiling=%u tlb_bug=%s",
		   tlb_policy.pcid, tlb_policy.invpcid, boot_cpu.smap,
		   tlb_policy.asid_slots, tlb_lazy_names[tlb_policy.lazy],
		   tlb_policy.flush_ceiling, tlb_bug_names[tlb_policy.bug]);
	mm = add_mm(t, o);
	add_anchored_group(t, o, mm, GROUP_REMAP, 0, SHARED_PAGES);
	for (unsigned cpu = 0; cpu < o->cpus; cpu++)
		add_stepping_reader(o, cpu, mm);
	oracle_run(t, o);
}

KTEST(TLB0002, tlb, "write-protect, unmap, map again: no CPU keeps old rights")
{
	struct oracle *o = oracle_begin(ROUNDS_CYCLE);
	struct mm *mm = add_mm(t, o);

	add_anchored_group(t, o, mm, GROUP_CYCLE, 0, SMALL_PAGES);
	for (unsigned cpu = 0; cpu < o->cpus; cpu++)
		add_stepping_reader(o, cpu, mm);
	oracle_run(t, o);
}

KTEST(TLB0003, tlb, "lazy CPUs (idle or in a kernel thread) catch up on return")
{
	struct oracle *o = oracle_begin(ROUNDS_LAZY);
	struct mm *mm = add_mm(t, o);
	struct worker *busy[ORACLE_CPUS_MAX] = {0};

	add_anchored_group(t, o, mm, GROUP_REMAP, 0, SHARED_PAGES);
	/* The stepper is a kernel thread: its own CPU is lazy as it flushes. */
	add_stepper(o, 0);
	for (unsigned cpu = 1; cpu < o->cpus; cpu++)
		busy[cpu] = add_worker(o, WORKER_BUSY, cpu, NULL);
	for (unsigned cpu = 0; cpu < o->cpus; cpu++)
		add_worker(o, WORKER_PARK, cpu, mm)->busy = busy[cpu];
	oracle_run(t, o);
}

KTEST(TLB0004, tlb, "more address spaces than ASID slots, cycled on each CPU")
{
	struct oracle *o = oracle_begin(ROUNDS_ASID);
	unsigned mms = MIN(tlb_policy.asid_slots + 2, (unsigned)ORACLE_MMS_MAX);

	if (mms <= tlb_policy.asid_slots)
		ktest_note("asid_slots=%u: %u address spaces recycle no slot",
			   tlb_policy.asid_slots, mms);
	/* The same address in each: one translation for another is seen. */
	for (unsigned i = 0; i < mms; i++) {
		struct mm *mm = add_mm(t, o);

		if (!mm)
			break;
		add_anchored_group(t, o, mm, GROUP_REMAP, 0, SMALL_PAGES);
	}
	add_stepper(o, 0);
	for (unsigned cpu = 0; cpu < o->cpus; cpu++) {
		for (unsigned i = 0; i < o->mm_count; i++) {
			struct worker *w =
				add_worker(o, WORKER_READER, cpu, o->mms[i]);

			w->yield_every = 1;
			w->rest_after = ASID_REST_AFTER_PASSES;
		}
	}
	oracle_run(t, o);
}

KTEST(TLB0005, tlb, "threads migrating between CPUs see only new translations")
{
	struct oracle *o;
	struct mm *mm;

	if (!need_cpus(t, 2))
		return;
	o = oracle_begin(ROUNDS_MIGRATE);
	mm = add_mm(t, o);
	add_anchored_group(t, o, mm, GROUP_REMAP, 0, SMALL_PAGES);
	add_stepper(o, 0);
	for (unsigned cpu = 0; cpu < o->cpus; cpu++)
		add_worker(o, WORKER_MIGRATE, cpu, mm);
	oracle_run(t, o);
}

KTEST(TLB0006, tlb, "ranges below, at and above the flush ceiling")
{
	struct oracle *o = oracle_begin(ROUNDS_CEILING);
	unsigned ceiling = tlb_policy.flush_ceiling;
	/* Below it (the largest the test maps, if the ceiling is higher). */
	const unsigned sizes[] = {1, MIN(ceiling, (unsigned)GROUP_PAGES_MAX),
				  ceiling + 1, 2 * ceiling + 1};
	unsigned region = 0, last = 0;
	struct mm *mm = add_mm(t, o);

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		if (sizes[i] == 0 || sizes[i] <= last)
			continue;
		if (sizes[i] > GROUP_PAGES_MAX) {
			ktest_note("ceiling %u: a range of %u pages is beyond "
				   "the test's %u",
				   ceiling, sizes[i], GROUP_PAGES_MAX);
			continue;
		}
		add_anchored_group(t, o, mm, GROUP_REMAP, region++, sizes[i]);
		last = sizes[i];
	}
	for (unsigned cpu = 0; cpu < o->cpus; cpu++)
		add_stepping_reader(o, cpu, mm);
	oracle_run(t, o);
}

KTEST(TLB0007, tlb, "unmaps that free page tables, with lazy CPUs about")
{
	struct oracle *o = oracle_begin(ROUNDS_FREED);
	struct mm *mm = add_mm(t, o);

	/* No anchor: each unmap empties the PT, PD and PDPT of the group. */
	add_group(t, o, mm, GROUP_FREE_TABLES, USER_FREEABLE_BASE, SMALL_PAGES);
	/* Even CPUs spin and step; odd ones go lazy between rounds. */
	for (unsigned cpu = 0; cpu < o->cpus; cpu++) {
		if (cpu % 2)
			add_worker(o, WORKER_PARK, cpu, mm);
		else
			add_stepping_reader(o, cpu, mm);
	}
	oracle_run(t, o);
}

KTEST(TLB0008, tlb, "kernel mappings (global pages) remapped on every CPU")
{
	struct oracle *o = oracle_begin(ROUNDS_KERNEL);
	unsigned large =
		MIN(tlb_policy.flush_ceiling + 1, (unsigned)GROUP_PAGES_MAX);

	add_anchored_group(t, o, NULL, GROUP_REMAP, 0, KERNEL_PAGES);
	if (large > KERNEL_PAGES)
		add_anchored_group(t, o, NULL, GROUP_REMAP, 1, large);
	for (unsigned cpu = 0; cpu < o->cpus; cpu++)
		add_stepping_reader(o, cpu, NULL);
	oracle_run(t, o);
}

KTEST(TLB0009, tlb, "two CPUs flush one address space at once")
{
	struct oracle *o;
	struct mm *mm;

	if (!need_cpus(t, 2))
		return;
	o = oracle_begin(ROUNDS_CONCURRENT);
	mm = add_mm(t, o);
	/* Side by side in one page table, each with its own stepper. */
	add_anchored_group(t, o, mm, GROUP_REMAP, 0, SMALL_PAGES);
	add_group(t, o, mm, GROUP_REMAP,
		  page_va(&o->groups[0], o->groups[0].pages), SMALL_PAGES);
	o->steppers_per_round = 2;
	for (unsigned cpu = 0; cpu < o->cpus; cpu++)
		add_stepping_reader(o, cpu, mm);
	oracle_run(t, o);
}

KTEST(TLB0010, tlb, "CPUs switching address spaces while the flush is sent")
{
	struct oracle *o;
	struct mm *x, *y;

	if (!need_cpus(t, 2))
		return;
	o = oracle_begin(ROUNDS_SWITCH);
	x = add_mm(t, o);
	y = add_mm(t, o);
	add_anchored_group(t, o, x, GROUP_REMAP, 0, SMALL_PAGES);
	add_anchored_group(t, o, y, GROUP_REMAP, 0, SMALL_PAGES);
	/* CPU 0 steps both; the others run x a while, then y, and back. */
	add_stepping_reader(o, 0, x);
	for (unsigned cpu = 1; cpu < o->cpus; cpu++) {
		struct worker *in_x = add_worker(o, WORKER_READER, cpu, x);
		struct worker *in_y = add_worker(o, WORKER_READER, cpu, y);

		in_x->yield_every = SWITCH_SPIN_PASSES;
		in_x->rest_after = SWITCH_REST_AFTER_PASSES;
		in_y->yield_every = 1;
		in_y->rest_after =
			SWITCH_REST_AFTER_PASSES / SWITCH_SPIN_PASSES;
	}
	oracle_run(t, o);
}

/*
 * A flush call may return only once its request is done with: the next
 * call reuses the request (flush_info=percpu: the CPU's one request;
 * flush_info=stack: the same stack frame). Here every round flushes x,
 * which every CPU reads, and at once y, which no CPU runs.
 */
KTEST(TLB0011, tlb, "back-to-back flushes of two address spaces both complete")
{
	struct oracle *o = oracle_begin(ROUNDS_BACK_TO_BACK);
	struct mm *x = add_mm(t, o), *y = add_mm(t, o);

	add_anchored_group(t, o, x, GROUP_REMAP, 0, SMALL_PAGES);
	add_anchored_group(t, o, y, GROUP_REMAP, 0, SMALL_PAGES);
	for (unsigned cpu = 0; cpu < o->cpus; cpu++)
		add_stepping_reader(o, cpu, x);
	oracle_run(t, o);
}
