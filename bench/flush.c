// SPDX-License-Identifier: MIT
/*
 * Flushes: what keeping TLBs coherent costs, local and remote, under the
 * policies mm/tlb.c can switch.
 *
 * The flushing thread runs on CPU 0 on an address space of its own
 * (bench/fixture.h) and calls the TLB code's entry points, as the kernel
 * does when it changes mappings: flush_tlb_mm_range directly, or mm_unmap.
 * Other CPUs are made targets of a shootdown by threads of the same
 * address space:
 *   active  a thread spins on the CPU with the address space loaded;
 *   lazy    a thread ran there and blocked, so the idle thread keeps the
 *           address space loaded lazily; before every sample it runs once
 *           more and blocks again, since lazy=ipi sends a lazy CPU away at
 *           its first flush.
 * Rows that vary a policy set it with bench_policy_set; the harness puts
 * the boot's policy back afterwards.
 */
#include "bench/bench.h"
#include "bench/crossover.h"
#include "bench/cpus.h"
#include "bench/fixture.h"
#include "bench/results.h"
#include "cpu/cpu.h"
#include "console/kprintf.h"
#include "lib/format.h"
#include "lib/string.h"
#include "arch/x86.h"
#include "arch/layout.h"
#include "mm/mm.h"
#include "mm/tlb.h"
#include "sched/sched.h"
#include "cpu/percpu.h"
#include "sync/shared.h"

#define SWITCHES_PER_RTT 2
/* The 2019 measurements (Linux 5.2) flushed a single page: the request
 * dominates. */
#define SHOOTDOWN_PAGES 1
/* Enough local work for overlapping it with the remote flushes to show,
 * and still under the flush ceiling (flushed page by page). */
#define CONCURRENT_PAGES 32
#define UNMAP_PAGES	 64

static const unsigned local_counts[] = {
	1, 2, 4, 8, 16, 32, 33, 64, 128, 256, BENCH_SPACE_PAGES_MAX};

/* --- Targets ----------------------------------------------------------------- */

enum target_state {
	TARGET_ACTIVE,
	TARGET_LAZY,
};

/*
 * The threads that keep `count` CPUs targets of flushes of space: the
 * first count of bench_target_cpu's order, other cores before CPU 0's SMT
 * siblings, so that one target is never a CPU sharing the flusher's TLB
 * while another core is there. Arrays are by CPU index.
 */
static struct {
	const struct bench_space *space;
	unsigned count;
	enum target_state state;
	bool stop;
	unsigned round;			/* lazy: bumped to make them run once */
	unsigned seen[MAX_CPUS];	/* lazy: the round each has run */
	struct wait_queue wq[MAX_CPUS]; /* lazy: where each blocks */
} targets;

static void active_target(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&targets.stop, __ATOMIC_RELAXED))
		cpu_relax();
}

static void lazy_target(void *arg)
{
	unsigned cpu = this_cpu_index();
	struct wait_queue *wq = &targets.wq[cpu];
	uint64_t flags = spin_lock_irqsave(&wq->lock);

	(void)arg;
	for (;;) {
		/* Release: this round's run is over when the measuring
		 * thread sees it (it then waits for the CPU to be lazy). */
		__atomic_store_n(&targets.seen[cpu], targets.round,
				 __ATOMIC_RELEASE);
		while (targets.seen[cpu] == targets.round && !targets.stop)
			wait_queue_sleep_locked(wq);
		if (targets.stop)
			break;
	}
	spin_unlock_irqrestore(&wq->lock, flags);
}

/* Starts the targets; active ones are running when this returns. */
static bool targets_start(const struct bench_space *s, unsigned count,
			  enum target_state state)
{
	struct cpumask used;

	targets.space = s;
	targets.count = count;
	targets.state = state;
	targets.stop = false;
	targets.round = 0;
	cpumask_clear_all(&used);
	for (unsigned i = 0; i < count; i++)
		cpumask_set(&used, bench_target_cpu(i));
	bench_row_cpus(&used);
	for (unsigned i = 0; i < count; i++) {
		unsigned cpu = bench_target_cpu(i);

		wait_queue_init(&targets.wq[cpu]);
		targets.seen[cpu] = UINT32_MAX;
		if (!bench_thread_start(state == TARGET_LAZY ? lazy_target
							     : active_target,
					NULL, cpu, s->mm))
			return false;
	}
	/* Lazy ones are waited for before every sample (targets_relazy). */
	for (unsigned i = 0; i < count && state == TARGET_ACTIVE; i++)
		bench_wait_loaded(bench_target_cpu(i), s->mm);
	return true;
}

/* Whether CPU cpu has the targets' address space loaded lazily. */
static bool cpu_lazy(unsigned cpu)
{
	const struct tlb_cpu *c = &tlb_cpus[cpu];

	return shared_load(&c->loaded_mm, __ATOMIC_ACQUIRE) ==
		       targets.space->mm &&
	       shared_load(&c->is_lazy, __ATOMIC_RELAXED);
}

/*
 * Lazy targets: each runs once on the address space and blocks again, so
 * its CPU holds it lazily for the next sample (under lazy=ipi the last
 * flush sent it away). Waits until they all do.
 */
static void targets_relazy(void)
{
	if (targets.state != TARGET_LAZY)
		return;
	targets.round++;
	for (unsigned i = 0; i < targets.count; i++)
		wake_all(&targets.wq[bench_target_cpu(i)]);
	for (unsigned i = 0; i < targets.count; i++) {
		unsigned cpu = bench_target_cpu(i);

		while (__atomic_load_n(&targets.seen[cpu], __ATOMIC_ACQUIRE) !=
			       targets.round ||
		       !cpu_lazy(cpu))
			cpu_relax();
	}
}

static void targets_stop(void)
{
	__atomic_store_n(&targets.stop, true, __ATOMIC_RELAXED);
	if (targets.state == TARGET_LAZY) {
		for (unsigned i = 0; i < targets.count; i++)
			wake_all(&targets.wq[bench_target_cpu(i)]);
	}
	bench_row_cpus(NULL);
}

/* --- Shootdown rows ------------------------------------------------------------ */

/* What the flushing thread measures, on its CPU, with the targets up. */
struct shootdown {
	const struct bench_space *space;
	unsigned pages;
	char params[BENCH_PARAMS_MAX];
};

static void shootdown_measure(void *arg)
{
	const struct shootdown *sd = arg;
	const struct bench_space *s = sd->space;
	uint64_t end = bench_page(s, 0) + (uint64_t)sd->pages * PAGE_SIZE;

	bench_begin(1, "%s", sd->params);
	while (bench_more()) {
		uint64_t flags, start;

		targets_relazy();
		flags = irq_save();
		bench_touch(s, 0, sd->pages);
		start = bench_clock();
		flush_tlb_mm_range(s->mm, bench_page(s, 0), end, PAGE_SHIFT,
				   TLB_TABLES_KEPT);
		bench_add(bench_clock() - start);
		irq_restore(flags);
	}
	bench_end();
	targets_stop();
}

/*
 * One row: a flush of `pages` pages from CPU 0, with `count` other CPUs as
 * targets in `state`, under the policy in force.
 */
static void shootdown_row(unsigned count, enum target_state state,
			  unsigned pages, const char *params)
{
	static struct shootdown sd;
	struct bench_space space;
	bool started;

	if (!bench_space_create(&space, BENCH_SPACE_PAGES_MAX)) {
		bench_na("out of memory", "%s", params);
		return;
	}
	sd.space = &space;
	sd.pages = pages;
	strlcpy(sd.params, params, sizeof(sd.params));
	started = targets_start(&space, count, state) &&
		  bench_thread_start(shootdown_measure, &sd, MEASURING_CPU,
				     space.mm);
	if (!started) {
		targets_stop();
		bench_na("out of memory", "%s", params);
	}
	bench_threads_wait();
	bench_space_destroy(&space);
}

static void set_lazy(enum tlb_lazy_policy lazy)
{
	struct tlb_policy p = tlb_policy;

	p.lazy = lazy;
	bench_policy_set(&p);
}

BENCH(shootdown, flush,
      "remote shootdown of one page against the number of target CPUs, "
      "active or lazy (lazy=skip leaves lazy CPUs alone, lazy=ipi "
      "interrupts them)")
{
	char params[BENCH_PARAMS_MAX];

	bench_show_wasted_ipis();
	if (cpu_count < 2) {
		bench_na("one CPU", "targets=1,state=active");
		return;
	}
	for (unsigned n = 1; n < cpu_count; n++) {
		ksnprintf(params, sizeof(params), "targets=%u,state=active", n);
		shootdown_row(n, TARGET_ACTIVE, SHOOTDOWN_PAGES, params);
	}
	for (unsigned lazy = TLB_LAZY_SKIP; lazy <= TLB_LAZY_IPI; lazy++) {
		set_lazy((enum tlb_lazy_policy)lazy);
		for (unsigned n = 1; n < cpu_count; n++) {
			ksnprintf(params, sizeof(params),
				  "targets=%u,state=lazy,lazy=%s", n,
				  tlb_lazy_names[lazy]);
			shootdown_row(n, TARGET_LAZY, SHOOTDOWN_PAGES, params);
		}
	}
}

BENCH(flush_info, flush,
      "where a flush request lives: per CPU, or on the flushing thread's "
      "stack (2019, Linux 5.2), one page to every other CPU")
{
	struct tlb_policy p = tlb_policy;
	char params[BENCH_PARAMS_MAX];

	for (int on_stack = 0; on_stack <= 1; on_stack++) {
		p.flush_info_on_stack = on_stack;
		bench_policy_set(&p);
		ksnprintf(params, sizeof(params), "info=%s,targets=%u",
			  on_stack ? "stack" : "percpu", cpu_count - 1);
		shootdown_row(cpu_count - 1, TARGET_ACTIVE, SHOOTDOWN_PAGES,
			      params);
	}
}

BENCH(flush_concurrent, flush,
      "the local flush after the remote ones, or while they run (Linux 5.13): "
      "32 pages, every other CPU active")
{
	struct tlb_policy p = tlb_policy;
	char params[BENCH_PARAMS_MAX];

	if (cpu_count < 2) {
		bench_na("one CPU", "concurrent=on");
		bench_na("one CPU", "concurrent=off");
		return;
	}
	for (int concurrent = 1; concurrent >= 0; concurrent--) {
		p.flush_concurrent = concurrent;
		bench_policy_set(&p);
		ksnprintf(params, sizeof(params),
			  "concurrent=%s,pages=%u,targets=%u",
			  concurrent ? "on" : "off", CONCURRENT_PAGES,
			  cpu_count - 1);
		shootdown_row(cpu_count - 1, TARGET_ACTIVE, CONCURRENT_PAGES,
			      params);
	}
}

/* --- Local flushes ---------------------------------------------------------- */

/*
 * The medians of flush_local's rows, by local_counts index: [0] page by
 * page, [1] the whole context; measured[] says which rows had samples.
 */
enum { LOCAL_BY_PAGE, LOCAL_FULL, LOCAL_HOWS };
static struct {
	uint64_t median[LOCAL_HOWS][ARRAY_SIZE(local_counts)];
	bool measured[LOCAL_HOWS][ARRAY_SIZE(local_counts)];
} local;

static void flush_local_rows(void *arg)
{
	const struct bench_space *s = arg;
	unsigned how = tlb_policy.flush_ceiling ? LOCAL_BY_PAGE : LOCAL_FULL;

	for (size_t i = 0; i < ARRAY_SIZE(local_counts); i++) {
		unsigned n = local_counts[i];

		bench_begin(1, "pages=%u,how=%s", n,
			    how == LOCAL_BY_PAGE ? "pages" : "full");
		/* refill's loop (prim.c) with a flush in it: no call through a
		 * pointer in the timed part, so each keeps its own copy. */
		while (bench_more()) {
			uint64_t flags = irq_save(), start;

			bench_touch(s, 0, s->pages);
			start = bench_clock();
			flush_tlb_mm_range(s->mm, bench_page(s, 0),
					   bench_page(s, n), PAGE_SHIFT,
					   TLB_TABLES_KEPT);
			bench_touch(s, 0, s->pages);
			bench_add(bench_clock() - start);
			irq_restore(flags);
		}
		bench_end();
		local.measured[how][i] =
			bench_last_median(&local.median[how][i]);
	}
}

/*
 * `bench: flush_local crossover pages=N ceiling=C` (or `none`, or `n/a`
 * when a row has no median), C being the boot's flush_ceiling: the value
 * the measurement argues for, beside the one in force.
 */
static void print_crossover(unsigned ceiling)
{
	size_t n = ARRAY_SIZE(local_counts), from;
	struct bench_crossover c = {.ceiling = ceiling};

	for (size_t i = 0; i < n; i++) {
		if (!local.measured[LOCAL_BY_PAGE][i] ||
		    !local.measured[LOCAL_FULL][i]) {
			kprintf("bench: flush_local crossover n/a ceiling=%u\n",
				ceiling);
			bench_results_set_crossover(&c);
			return;
		}
	}
	c.measured = true;
	from = flush_crossover(local.median[LOCAL_BY_PAGE],
			       local.median[LOCAL_FULL], n);
	if (from == n) {
		kprintf("bench: flush_local crossover none ceiling=%u\n",
			ceiling);
	} else {
		c.found = true;
		c.pages = local_counts[from];
		kprintf("bench: flush_local crossover pages=%u ceiling=%u\n",
			c.pages, ceiling);
	}
	bench_results_set_crossover(&c);
}

BENCH(flush_local, flush,
      "local flush of N of 512 pages in use, page by page or the whole "
      "context, plus refilling the 512: the crossover behind the 33-page "
      "ceiling (2014, Linux 3.17)")
{
	struct tlb_policy p = tlb_policy;
	unsigned ceiling = tlb_policy.flush_ceiling;

	/* A series that cannot run leaves no stale medians behind. */
	memset(&local, 0, sizeof(local));
	for (int by_page = 1; by_page >= 0; by_page--) {
		p.flush_ceiling = by_page ? TLB_FLUSH_CEILING_MAX : 0;
		bench_policy_set(&p);
		bench_on_space(flush_local_rows, BENCH_SPACE_PAGES_MAX,
			       "how=%s", by_page ? "pages" : "full");
	}
	print_crossover(ceiling);
}

/* --- Unmapping --------------------------------------------------------------- */

struct unmap_job {
	const struct bench_space *space;
	bool remote;
};

/* How unmap_rows unmaps the batch: one row each. */
enum unmap_mode {
	UNMAP_BATCHED,	/* one mm_unmap of the 64 pages */
	UNMAP_PER_PAGE, /* one mm_unmap per page, a flush each */
	/*
	 * One mm_unmap from the first page to the top of the user half: the
	 * rest of the page table walked, the absent tables above it stepped
	 * over (mm/mm.c, "Bounded work with interrupts off").
	 */
	UNMAP_TO_TOP,
	UNMAP_MODES,
};

static const char *const unmap_mode_names[UNMAP_MODES] = {
	[UNMAP_BATCHED] = "batched",
	[UNMAP_PER_PAGE] = "per_page",
	[UNMAP_TO_TOP] = "to_top",
};

/* Maps UNMAP_PAGES pages after the space's own (same page table). */
static bool map_batch(const struct bench_space *s)
{
	uint64_t va = bench_page(s, s->pages);

	if (mm_map_anon(s->mm, va, UNMAP_PAGES * PAGE_SIZE,
			MM_PROT_READ | MM_PROT_WRITE))
		return false;
	if (boot_cpu.smap)
		stac();
	for (unsigned i = 0; i < UNMAP_PAGES; i++)
		(void)*(volatile const uint64_t *)(va + i * PAGE_SIZE);
	if (boot_cpu.smap)
		clac();
	return true;
}

static void unmap_rows(void *arg)
{
	const struct unmap_job *job = arg;
	const struct bench_space *s = job->space;
	uint64_t va = bench_page(s, s->pages);

	for (unsigned mode = 0; mode < UNMAP_MODES; mode++) {
		bench_begin(1, "mode=%s,pages=%u,remote=%d",
			    unmap_mode_names[mode], UNMAP_PAGES, job->remote);
		while (bench_more()) {
			uint64_t start;

			if (!map_batch(s))
				break;
			start = bench_clock();
			if (mode == UNMAP_BATCHED) {
				mm_unmap(s->mm, va, UNMAP_PAGES * PAGE_SIZE);
			} else if (mode == UNMAP_TO_TOP) {
				mm_unmap(s->mm, va, USER_TOP - va);
			} else {
				for (unsigned i = 0; i < UNMAP_PAGES; i++)
					mm_unmap(s->mm, va + i * PAGE_SIZE,
						 PAGE_SIZE);
			}
			bench_add(bench_clock() - start);
		}
		bench_end();
	}
	targets_stop();
}

BENCH(batch_unmap, flush,
      "unmapping 64 pages with one batched flush, page by page with a "
      "flush each (mmu_gather), or up to the top of the user half, alone "
      "or with another CPU active")
{
	static struct unmap_job job;
	struct bench_space space;

	for (int remote = 0; remote <= 1; remote++) {
		if (remote && cpu_count < 2) {
			for (unsigned mode = 0; mode < UNMAP_MODES; mode++)
				bench_na("one CPU", "mode=%s,pages=%u,remote=1",
					 unmap_mode_names[mode], UNMAP_PAGES);
			return;
		}
		/* One page stays mapped: the page table is never freed. */
		if (!bench_space_create(&space, 1)) {
			bench_na("out of memory", "remote=%d", remote);
			continue;
		}
		job = (struct unmap_job){&space, remote};
		if (!targets_start(&space, (unsigned)remote, TARGET_ACTIVE) ||
		    !bench_thread_start(unmap_rows, &job, MEASURING_CPU,
					space.mm))
			targets_stop();
		bench_threads_wait();
		bench_space_destroy(&space);
	}
}

/* --- madvise bounce ------------------------------------------------------------ */

/*
 * Map a page, touch it, unmap it (the flush), move to the other CPU: the
 * CPU left behind holds the address space lazily, so the next unmap's
 * flush finds it lazy (the shape of the 2018 lazy-TLB measurements behind
 * Linux 4.20, with
 * madvise(MADV_DONTNEED) as the unmap).
 */
static void bounce_rows(void *arg)
{
	const struct bench_space *s = arg;
	uint64_t va = bench_page(s, s->pages);
	struct cpumask cpu[2] = {bench_cpu_mask(MEASURING_CPU),
				 bench_cpu_mask(bench_other_cpu())};
	unsigned side = 0;

	bench_row_cpus(&cpu[1]);
	bench_begin(1, "lazy=%s", tlb_lazy_names[tlb_policy.lazy]);
	while (bench_more()) {
		uint64_t start = bench_clock();

		if (mm_map_anon(s->mm, va, PAGE_SIZE,
				MM_PROT_READ | MM_PROT_WRITE))
			break;
		if (boot_cpu.smap)
			stac();
		*(volatile uint64_t *)va = start;
		if (boot_cpu.smap)
			clac();
		mm_unmap(s->mm, va, PAGE_SIZE);
		side ^= 1;
		sched_set_affinity(&cpu[side]);
		bench_add(bench_clock() - start);
	}
	bench_end();
}

BENCH(madvise, flush,
      "touch a page, unmap it, migrate to the other CPU, under each lazy= "
      "policy: the CPU left behind is lazy (per round)")
{
	if (cpu_count < 2) {
		for (unsigned i = 0; tlb_lazy_names[i]; i++)
			bench_na("one CPU", "lazy=%s", tlb_lazy_names[i]);
		return;
	}
	for (unsigned i = 0; tlb_lazy_names[i]; i++) {
		set_lazy((enum tlb_lazy_policy)i);
		bench_on_space(bounce_rows, 1, "lazy=%s", tlb_lazy_names[i]);
	}
}

/* --- Flush storm against a CPU going in and out of lazy mode ---------------- */

struct storm {
	const struct bench_space *space;
	bool stop;
};

/* The other CPU: a thread of the address space and a kernel thread hand
 * it to each other, so it is lazy half of the time. */
static void storm_user(void *arg)
{
	struct storm *st = arg;

	while (!__atomic_load_n(&st->stop, __ATOMIC_RELAXED))
		yield();
}

static void storm_flusher(void *arg)
{
	struct storm *st = arg;
	const struct bench_space *s = st->space;

	bench_wait_loaded(bench_other_cpu(), s->mm);
	bench_begin(1, "lazy=%s", tlb_lazy_names[tlb_policy.lazy]);
	while (bench_more()) {
		uint64_t flags = irq_save(), start = bench_clock();

		flush_tlb_mm_range(s->mm, bench_page(s, 0), bench_page(s, 1),
				   PAGE_SHIFT, TLB_TABLES_KEPT);
		bench_add(bench_clock() - start);
		irq_restore(flags);
	}
	bench_end();
	__atomic_store_n(&st->stop, true, __ATOMIC_RELAXED);
}

BENCH(lazy_storm, flush,
      "flushes from CPU 0 while another CPU switches between a user and a "
      "kernel thread: lazy-mode IPIs (lazy-leave) against CR3 loads")
{
	static const enum tlb_lazy_policy policies[] = {
		TLB_LAZY_IPI, TLB_LAZY_DYNAMIC, TLB_LAZY_SKIP};
	static struct storm st;
	struct bench_space space;
	unsigned other_cpu = bench_other_cpu();
	struct cpumask other = bench_cpu_mask(other_cpu);

	if (cpu_count < 2) {
		for (size_t i = 0; i < ARRAY_SIZE(policies); i++)
			bench_na("one CPU", "lazy=%s",
				 tlb_lazy_names[policies[i]]);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(policies); i++) {
		set_lazy(policies[i]);
		if (!bench_space_create(&space, 1)) {
			bench_na("out of memory", "lazy=%s",
				 tlb_lazy_names[policies[i]]);
			continue;
		}
		st = (struct storm){&space, false};
		/* Only the two threads decide when the other CPU switches. */
		bench_ticks_stop(&other);
		bench_row_cpus(&other);
		if (!bench_thread_start(storm_user, &st, other_cpu, space.mm) ||
		    !bench_thread_start(storm_user, &st, other_cpu, NULL) ||
		    !bench_thread_start(storm_flusher, &st, MEASURING_CPU,
					space.mm))
			st.stop = true;
		bench_threads_wait();
		bench_ticks_restart(&other);
		bench_space_destroy(&space);
	}
}

/* --- cpumask atomics ------------------------------------------------------------ */

BENCH(cpumask, flush,
      "a user thread to a kernel thread and back under lazy=off, with the "
      "kernel mm's CPU mask kept or not (kernel_mm_mask=, Linux 4.19; per "
      "switch; see mask-atomic)")
{
	struct tlb_policy p = tlb_policy;
	struct bench_space space;
	struct bench_pingpong pp;

	for (int touch = 0; touch <= 1; touch++) {
		p.lazy = TLB_LAZY_OFF;
		p.kernel_mm_mask_touch = touch;
		bench_policy_set(&p);
		if (!bench_space_create(&space, 0)) {
			bench_na("out of memory", "kernel_mm_mask=%s",
				 touch ? "touch" : "skip");
			continue;
		}
		pp = (struct bench_pingpong){{space.mm, NULL}, {NULL, NULL}, 0};
		bench_begin(SWITCHES_PER_RTT, "kernel_mm_mask=%s",
			    touch ? "touch" : "skip");
		bench_pingpong(MEASURING_CPU, &pp);
		bench_end();
		bench_space_destroy(&space);
	}
}
