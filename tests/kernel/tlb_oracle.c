// SPDX-License-Identifier: MIT
/*
 * The TLB oracle (tlb_oracle.h): the versions a group goes through,
 * setting up, running and reporting. What the threads do while it runs is
 * in tlb_oracle_threads.c.
 */
#include "tests/kernel/tlb_oracle_internal.h"
#include "tests/ktest.h"
#include "tests/kernel/threads.h"
#include "apic/tsc.h"
#include "lib/errno.h"
#include "lib/format.h"
#include "lib/random.h"
#include "trap/panic.h"
#include "cpu/platform.h"
#include "lib/string.h"
#include "mm/kmap.h"
#include "arch/layout.h"
#include "mm/mm.h"
#include "mm/pagetable.h"
#include "mm/pmm.h"
#include "mm/tlb.h"
#include "sched/sched.h"
#include "sched/thread.h"
#include "sched/wait.h"
#include "cpu/percpu.h"
#include "sync/spinlock.h"

/*
 * A pattern: a magic in bits 63..48 (never zero, never a plausible page
 * table entry), the group in 47..40, the page in 39..28, the version below.
 */
#define PATTERN_MAGIC	     0x7e5b000000000000ULL
#define PATTERN_GROUP_SHIFT  40
#define PATTERN_PAGE_SHIFT   28
#define PATTERN_VERSION_MASK ((1ULL << PATTERN_PAGE_SHIFT) - 1)
#define NOT_A_PATTERN	     (-1)

/*
 * The rounds a test asks for: with more than ROUNDS_CPUS CPUs (more vCPUs
 * than host cores, each round waits on all of them) they shrink in
 * proportion, and Bochs, some 50 times slower than TCG, runs a tenth:
 * every bug an emulator can show is caught in the first rounds
 * (docs/tlb-bugs.md), the rest is for chance.
 */
#define ROUNDS_CPUS   4
#define ROUNDS_MIN    6
#define BOCHS_DIVISOR 10

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

/* --- Groups and their versions ------------------------------------------- */

static const enum phase cycle_phases[] = {PHASE_FILLED, PHASE_READ_ONLY,
					  PHASE_UNMAPPED, PHASE_ZEROED};
static const enum phase free_tables_phases[] = {PHASE_FILLED, PHASE_UNMAPPED,
						PHASE_ZEROED};

uint64_t oracle_pattern(const struct group *g, unsigned page, uint64_t version)
{
	return PATTERN_MAGIC | (uint64_t)g->id << PATTERN_GROUP_SHIFT |
	       (uint64_t)page << PATTERN_PAGE_SHIFT |
	       (version & PATTERN_VERSION_MASK);
}

/* The version whose pattern value is, or NOT_A_PATTERN. */
static int64_t pattern_version(const struct group *g, unsigned page,
			       uint64_t value)
{
	if ((value & ~PATTERN_VERSION_MASK) != oracle_pattern(g, page, 0))
		return NOT_A_PATTERN;
	return (int64_t)(value & PATTERN_VERSION_MASK);
}

enum phase oracle_phase_of(const struct group *g, uint64_t version)
{
	if (g->kind == GROUP_CYCLE)
		return cycle_phases[version % ARRAY_SIZE(cycle_phases)];
	if (g->kind == GROUP_FREE_TABLES)
		return free_tables_phases[version %
					  ARRAY_SIZE(free_tables_phases)];
	return PHASE_FILLED;
}

struct page_state oracle_state_of(const struct group *g, unsigned page,
				  uint64_t version)
{
	switch (oracle_phase_of(g, version)) {
	case PHASE_READ_ONLY:
		return (struct page_state){
			true, false, oracle_pattern(g, page, version - 1)};
	case PHASE_UNMAPPED:
		return (struct page_state){false, false, 0};
	case PHASE_ZEROED:
		return (struct page_state){true, true, 0};
	case PHASE_FILLED:
		break;
	}
	return (struct page_state){true, true,
				   oracle_pattern(g, page, version)};
}

/* --- Setting up ----------------------------------------------------------- */

struct oracle oracle_instance;

static uint32_t scaled(uint32_t rounds)
{
	rounds = rounds * ROUNDS_CPUS / MAX(cpu_count, (unsigned)ROUNDS_CPUS);
	if (platform_get() == PLATFORM_BOCHS)
		rounds /= BOCHS_DIVISOR;
	return MAX(rounds, (uint32_t)ROUNDS_MIN);
}

struct oracle *oracle_begin(uint32_t rounds)
{
	struct oracle *o = &oracle_instance;

	memset(o, 0, sizeof(*o));
	o->cpus = MIN(cpu_count, (unsigned)ORACLE_CPUS_MAX);
	o->rounds = scaled(rounds);
	o->steppers_per_round = 1;
	o->failure_lock = (struct spinlock)SPINLOCK_INIT;
	wait_queue_init(&o->rest_wq);
	return o;
}

bool oracle_need_cpus(struct ktest_context *t, unsigned n)
{
	if (cpu_count >= n)
		return true;
	ktest_skip(t, "needs 2 or more CPUs (boot with SMP=2 or more)");
	return false;
}

struct mm *oracle_add_mm(struct ktest_context *t, struct oracle *o)
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
		err = frame ? kmap_map_page(va, frame,
					    oracle_kernel_pte_flags())
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
void oracle_add_group(struct ktest_context *t, struct oracle *o, struct mm *mm,
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
			err = oracle_fill(g, 0);
	} else {
		for (unsigned page = 0; page < pages && !err; page++) {
			uint64_t frame = pmm_alloc_frame();

			if (!frame) {
				err = -ENOMEM;
				break;
			}
			*(uint64_t *)phys_to_virt(frame) =
				oracle_pattern(g, page, 0);
			err = kmap_map_page(oracle_page_va(g, page), frame,
					    oracle_kernel_pte_flags());
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

struct worker *oracle_add_worker(struct oracle *o, enum worker_kind kind,
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
void oracle_add_stepper(struct oracle *o, unsigned cpu)
{
	oracle_add_worker(o, WORKER_STEPPER, cpu, NULL);
}

/* A reader that spins (yield_every 0) and takes its turn as stepper. */
struct worker *oracle_add_stepping_reader(struct oracle *o, unsigned cpu,
					  struct mm *mm)
{
	struct worker *w = oracle_add_worker(o, WORKER_READER, cpu, mm);

	w->in_rotation = true;
	o->rotation[o->rotation_count++] = (unsigned)(w - o->workers);
	return w;
}

struct worker *oracle_add_witness(struct oracle *o, unsigned cpu, struct mm *mm)
{
	return oracle_add_worker(o, WORKER_WITNESS, cpu, mm);
}

static uint64_t region_va(uint64_t base, unsigned region)
{
	return base + (uint64_t)region * LARGE_PAGE_SIZE;
}

/* A user group in its own region, behind the anchor. */
void oracle_add_anchored_group(struct ktest_context *t, struct oracle *o,
			       struct mm *mm, enum group_kind kind,
			       unsigned region, unsigned pages)
{
	uint64_t base = mm ? USER_GROUPS_BASE : KERNEL_GROUPS_BASE;
	uint64_t anchor = region_va(base, region);

	add_anchor(t, o, mm, anchor);
	oracle_add_group(t, o, mm, kind, anchor + ANCHOR_PAGES * PAGE_SIZE,
			 pages);
}

/* --- Running and reporting ---------------------------------------------- */

/*
 * test_seed=: the order in which the stepping readers take their turns,
 * shuffled, so other seeds put flushes and switches in other places.
 */
static void shuffle_rotation(struct oracle *o)
{
	uint64_t state = ktest_seed();

	if (!state)
		return;
	ktest_note("stepping order drawn from test_seed=%llu",
		   (unsigned long long)state);
	for (unsigned i = o->rotation_count; i > 1; i--) {
		unsigned j = (unsigned)random_below(&state, i), kept;

		kept = o->rotation[i - 1];
		o->rotation[i - 1] = o->rotation[j];
		o->rotation[j] = kept;
	}
}

static void start_threads(struct ktest_context *t, struct oracle *o)
{
	static const char *const names[] = {
		[WORKER_READER] = "tlb-read",
		[WORKER_PARK] = "tlb-park",
		[WORKER_MIGRATE] = "tlb-migrate",
		[WORKER_BUSY] = "tlb-busy",
		[WORKER_STEPPER] = "tlb-step",
		[WORKER_WITNESS] = "tlb-witness",
	};
	unsigned created;

	shuffle_rotation(o);
	for (created = 0; created < o->worker_count; created++) {
		struct worker *w = &o->workers[created];

		w->thread = test_thread_create(oracle_worker_main, w, w->cpu,
					       names[w->kind], w->mm);
		if (!w->thread)
			break;
	}
	if (!KEXPECT(created == o->worker_count, "thread %u of %u not created",
		     created, o->worker_count))
		/* Those made leave at once. */
		oracle_stop_all(o);
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
	struct page_state s = oracle_state_of(g, page, k);

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
			(unsigned long long)oracle_page_va(f->g, f->page), saw,
			(unsigned long long)f->lo, (unsigned long long)f->hi,
			want);
		break;
	case FAIL_WRITE:
		describe_state(want, sizeof(want), f->g, f->page, f->lo);
		KEXPECT(!stale,
			"CPU %u round %u: write to %#llx %s; version "
			"%llu..%llu wanted (%s)",
			f->cpu, f->round,
			(unsigned long long)oracle_page_va(f->g, f->page),
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

/* Unmaps a kernel page, flushes it, frees its frame; the tables stay. */
static void unmap_kernel_page(uint64_t va)
{
	uint64_t old;

	if (kmap_unmap_page(va, &old))
		return;
	flush_tlb_kernel_range(va, va + PAGE_SIZE);
	pmm_free_frame(old & PTE_ADDR_MASK);
}

/* Unmaps the kernel groups and anchors, one flushed page at a time. */
static void unmap_kernel_pages(struct oracle *o)
{
	for (unsigned i = 0; i < o->group_count; i++) {
		const struct group *g = &o->groups[i];

		for (unsigned page = 0; page < g->pages && !g->mm; page++)
			unmap_kernel_page(oracle_page_va(g, page));
	}
	for (unsigned i = 0; i < o->kernel_anchor_count; i++)
		unmap_kernel_page(o->kernel_anchors[i]);
}

/* Runs the threads the test set up, reports, and takes it all down. */
void oracle_run(struct ktest_context *t, struct oracle *o)
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
