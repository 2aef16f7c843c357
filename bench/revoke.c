// SPDX-License-Identifier: MIT
/*
 * Revocation: one shared-memory object unmapped from K address spaces at
 * once (shm_revoke), under the unmap_batch= value in force.
 *
 * revoke: the object is mapped by K = 1, 4 and 16 address spaces,
 * each with a reader thread on every other CPU that keeps reading it (so
 * every CPU holds translations of every space, in as many PCIDs as it has
 * slots). Per revoke: the time, the IPIs it sent and the flushes it caused,
 * three rows per K. unmap_batch=per_mm sends a round per space (K rounds to
 * the same CPUs); pages and all one round for all of them (the 2015 "send
 * one IPI per CPU to TLB flush all entries after unmapping pages").
 *
 * revoke_refill: what the flush costs afterwards. A thread on CPU 0 keeps
 * REFILL_HOT pages of its address space hot in a loop, while a kernel
 * thread on another core (bench_other_cpu) keeps revoking small objects that space maps: under
 * unmap_batch=pages each revoke costs the loop a few INVLPGs, under all a
 * whole-context flush and REFILL_HOT misses (Ingo Molnar's point in the
 * flush-ceiling debate: an INVLPG is dear, but the refill after a full
 * flush is dearer). Per loop iteration, in cycles.
 */
#include "bench/bench.h"
#include "bench/cpus.h"
#include "bench/fixture.h"
#include "cpu/cpu.h"
#include "arch/extable.h"
#include "arch/x86.h"
#include "mm/mm.h"
#include "mm/tlb.h"
#include "sched/sched.h"
#include "cpu/percpu.h"

#define REVOKE_PAGES 8 /* the object: a range below the flush ceiling */
#define REVOKE_VA    0x60000000ULL /* clear of BENCH_SPACE_BASE's pages */
#define SPACES_MAX   16
#define READ_PASSES  4 /* reader passes between yields */

/* revoke_refill: the hot set, and the object revoked meanwhile. */
#define REFILL_HOT   256
#define REFILL_ITERS 32 /* loop iterations per sample: revokes land in it */
#define REFILL_PAGES 4
/* Between two revokes, spun (a sleep lasts a tick): about one loop
 * iteration, so that most iterations follow a flush. */
#define REFILL_GAP_NS 20000

/*
 * Under icount QEMU runs the CPUs in turn, and here the readers' CPU stops
 * making progress while CPU 0 waits for their passes (seen with QEMU 7.2:
 * the run never ends), so these rows need real parallel CPUs.
 */
#define ICOUNT_STALLS "icount with several CPUs (the readers stall)"

static struct {
	bool stop; /* atomic */
	uint64_t passes[MAX_CPUS];
} rd;

static void read_object(void)
{
	uint64_t value;

	if (boot_cpu.smap)
		stac();
	for (unsigned p = 0; p < REVOKE_PAGES; p++)
		/* Between revoke and the next map, the pages fault. */
		probe_read_u64((const void *)(REVOKE_VA + p * PAGE_SIZE),
			       &value);
	if (boot_cpu.smap)
		clac();
}

static void reader(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&rd.stop, __ATOMIC_ACQUIRE)) {
		for (unsigned i = 0; i < READ_PASSES; i++)
			read_object();
		__atomic_add_fetch(&rd.passes[this_cpu_index()], 1,
				   __ATOMIC_RELAXED);
		yield(); /* the other spaces' readers on this CPU */
	}
}

/* Every CPU but this one made a pass since *last (updated). */
static void wait_passes(uint64_t *last)
{
	unsigned cpu;

	for_each_cpu (cpu, &cpu_online_mask) {
		if (cpu == MEASURING_CPU)
			continue;
		while (__atomic_load_n(&rd.passes[cpu], __ATOMIC_RELAXED) ==
		       last[cpu])
			yield();
		last[cpu] = __atomic_load_n(&rd.passes[cpu], __ATOMIC_RELAXED);
	}
}

/* A fresh object mapped in every space; NULL when out of memory. */
static struct shm *map_object(struct mm **mms, unsigned k, unsigned pages)
{
	struct shm *shm = shm_create(pages * PAGE_SIZE);

	for (unsigned i = 0; shm && i < k; i++) {
		if (mm_map_shared(mms[i], shm, REVOKE_VA, MM_PROT_READ)) {
			shm_revoke(shm);
			shm_put(shm);
			return NULL;
		}
	}
	return shm;
}

enum what { WHAT_TIME, WHAT_IPIS, WHAT_FLUSHES };

static uint64_t flushes(const struct tlb_stats *s)
{
	return s->flush_full + s->flush_partial;
}

/* The measuring thread: one row of what for K spaces. */
static void spaces_row(struct mm **mms, unsigned k, enum what what)
{
	static const char *const names[] = {"time", "ipis", "flushes"};
	static uint64_t last[MAX_CPUS]; /* one measuring thread at a time */

	if (what == WHAT_TIME)
		bench_begin(1, "spaces=%u", k);
	else
		bench_begin_unit(names[what], "spaces=%u", k);
	for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++)
		last[cpu] = __atomic_load_n(&rd.passes[cpu], __ATOMIC_RELAXED);
	while (bench_more()) {
		struct shm *shm = map_object(mms, k, REVOKE_PAGES);
		struct tlb_stats before, after;
		uint64_t start;

		if (!shm)
			break;
		/* Every reader's CPU holds the new translations. */
		wait_passes(last);
		wait_passes(last);
		tlb_stats_sum(&before);
		start = bench_clock();
		shm_revoke(shm);
		if (what == WHAT_TIME)
			bench_add(bench_clock() - start);
		tlb_stats_sum(&after);
		if (what == WHAT_IPIS)
			bench_add(after.batch_ipis - before.batch_ipis);
		if (what == WHAT_FLUSHES)
			bench_add(flushes(&after) - flushes(&before));
		shm_put(shm);
	}
	bench_end();
}

struct spaces_job {
	struct mm **mms;
	unsigned k;
};

static void spaces_rows(void *arg)
{
	const struct spaces_job *job = arg;

	for (enum what w = WHAT_TIME; w <= WHAT_FLUSHES; w++)
		spaces_row(job->mms, job->k, w);
	__atomic_store_n(&rd.stop, true, __ATOMIC_RELEASE);
}

static void spaces_run(unsigned k)
{
	static struct spaces_job job;
	struct mm *mms[SPACES_MAX] = {0};
	bool started = true;
	unsigned made = 0, cpu;

	for (; made < k; made++) {
		mms[made] = mm_create();
		if (!mms[made])
			break;
	}
	if (made < k) {
		bench_na("out of memory", "spaces=%u", k);
		goto out;
	}
	rd.stop = false;
	for_each_cpu (cpu, &cpu_online_mask) {
		if (cpu == MEASURING_CPU)
			continue;
		for (unsigned i = 0; started && i < k; i++)
			started = bench_thread_start(reader, NULL, cpu, mms[i]);
	}
	job = (struct spaces_job){mms, k};
	if (!started ||
	    !bench_thread_start(spaces_rows, &job, MEASURING_CPU, NULL))
		__atomic_store_n(&rd.stop, true, __ATOMIC_RELEASE);
	bench_threads_wait();
out:
	for (unsigned i = 0; i < made; i++)
		mm_put(mms[i]);
}

BENCH(revoke, flush,
      "one object revoked from 1, 4 and 16 address spaces read on every "
      "CPU: time, IPIs and flushes per revoke, under unmap_batch= (2015, "
      "one IPI per CPU for a batch)")
{
	static const unsigned ks[] = {1, 4, SPACES_MAX};

	bench_show_wasted_ipis();
	if (cpu_count < 2) {
		bench_na("one CPU", "spaces=1");
		return;
	}
	if (bench_icount()) {
		bench_na(ICOUNT_STALLS, "spaces=1");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(ks); i++)
		spaces_run(ks[i]);
}

/* --- The refill cost ---------------------------------------------------------- */

struct refill_job {
	struct bench_space *space;
	bool stop; /* atomic */
};

/* The other CPU: revoke an object the measured space maps, again and again. */
static void revoker(void *arg)
{
	struct refill_job *job = arg;

	while (!__atomic_load_n(&job->stop, __ATOMIC_ACQUIRE)) {
		struct shm *shm = map_object(&job->space->mm, 1, REFILL_PAGES);

		uint64_t until = bench_clock() + ns_to_tsc(REFILL_GAP_NS);

		if (!shm)
			break;
		while (bench_clock() < until &&
		       !__atomic_load_n(&job->stop, __ATOMIC_RELAXED))
			cpu_relax();
		shm_revoke(shm);
		shm_put(shm);
	}
}

/* CPU 0, in the space: the hot loop, the cost of one iteration. */
static void refill_rows(void *arg)
{
	struct refill_job *job = arg;

	bench_touch(job->space, 0, REFILL_HOT);
	bench_begin(REFILL_ITERS, "hot=%u", REFILL_HOT);
	while (bench_more()) {
		uint64_t start = bench_clock();

		for (unsigned i = 0; i < REFILL_ITERS; i++)
			bench_touch(job->space, 0, REFILL_HOT);
		bench_add(bench_clock() - start);
	}
	bench_end();
	__atomic_store_n(&job->stop, true, __ATOMIC_RELEASE);
}

BENCH(revoke_refill, flush,
      "a loop over 256 hot pages while another CPU revokes objects its "
      "address space maps: the refill after whole-context flushes against "
      "INVLPGs (Molnar's INVLPG vs refill cost)")
{
	static struct refill_job job;
	struct bench_space space;
	struct cpumask other;

	if (cpu_count < 2) {
		bench_na("one CPU", "hot=%u", REFILL_HOT);
		return;
	}
	if (bench_icount()) {
		bench_na(ICOUNT_STALLS, "hot=%u", REFILL_HOT);
		return;
	}
	if (!bench_space_create(&space, REFILL_HOT)) {
		bench_na("out of memory", "hot=%u", REFILL_HOT);
		return;
	}
	job = (struct refill_job){&space, false};
	other = bench_cpu_mask(bench_other_cpu());
	bench_row_cpus(&other);
	if (!bench_thread_start(revoker, &job, bench_other_cpu(), NULL) ||
	    !bench_thread_start(refill_rows, &job, MEASURING_CPU, space.mm))
		__atomic_store_n(&job.stop, true, __ATOMIC_RELEASE);
	bench_threads_wait();
	bench_space_destroy(&space);
}
