/* SPDX-License-Identifier: MIT */
/*
 * The in-kernel benchmarks. Each benchmark lives in a linker section, like
 * the tests (tests/ktest.h), under a group and a name, and says which
 * experiment it reproduces:
 *
 *	BENCH(cr3, prim, "CR3 write with and without the no-flush bit")
 *	{
 *		bench_begin(1, "noflush=%d", 0);
 *		while (bench_more()) {
 *			uint64_t flags = irq_save(), start = bench_clock();
 *
 *			write_cr3(cr3);
 *			bench_add(bench_clock() - start);
 *			irq_restore(flags);
 *		}
 *		bench_end();
 *	}
 *
 * A benchmark produces rows ("results"): one per set of parameters. A row is
 * a series of samples: bench_more() says whether another sample is wanted
 * (the first few are a warm-up and are dropped; then samples are taken
 * until the row has enough of them or has used its time budget), and
 * bench_end() prints the median, p10, p90, minimum and count. A row that
 * cannot be measured here (no PCID, one CPU) is printed by bench_na() with
 * the reason, so it never silently disappears. bench/harness.c describes
 * the method and the output format (also docs/bench.md).
 *
 * Benchmarks run in the boot thread on CPU 0, one at a time, with nothing
 * else running but what they start.
 */
#ifndef BENCH_BENCH_H
#define BENCH_BENCH_H

#include "apic/tsc.h"
#include "bench/probe.h"
#include "lib/cmdline.h"
#include "lib/types.h"
#include "sync/cpumask.h"

struct bench {
	const char *name;
	const char *group;
	const char *experiment; /* what it measures and reproduces */
	void (*run)(void);
};

#define BENCH(bench_name, group_name, desc)                              \
	static void bench_run_##bench_name(void);                        \
	static const struct bench bench_##bench_name __used __section(   \
		".bench." #group_name "." #bench_name) __aligned(8) = {  \
		#bench_name, #group_name, desc, bench_run_##bench_name}; \
	static void bench_run_##bench_name(void)

/* The most benchmarks plus groups bench= can name: one list option. */
#define BENCH_MAX_CHOICES OPTION_LIST_MAX

/* bench_scale=: percent of the default samples and time budget per row. */
#define BENCH_SCALE_MIN	    1
#define BENCH_SCALE_DEFAULT 100
#define BENCH_SCALE_MAX	    1000

/* The harness declares bench=, bench_scale= and icount (bench/harness.c). */

/* bench= was given. */
bool bench_requested(void);

/* icount: QEMU counts instructions, running the CPUs one at a time. */
bool bench_icount(void);

/*
 * Runs the benchmarks bench= selected, or every one without bench=, each
 * row's sample count and time budget scaled by bench_scale= (the tests run
 * with few samples). Returns true when every one printed at least one
 * result.
 */
bool bench_run_requested(void);

/* --- Writing a benchmark ------------------------------------------------ */

/* The TSC, ordered against the instructions before and after it. */
static inline uint64_t bench_clock(void)
{
	uint64_t now = tsc_read_ordered();

	/* The injection kernel notes the read for the grade (bench/probe.h). */
	if (INJECT_BUILT)
		bench_probe_clock();
	return now;
}

/* Longest parameter text of a row ("pcid=on,pages=512"). */
#define BENCH_PARAMS_MAX 48

/*
 * Starts a row timed in TSC cycles. batch: operations in one sample; the
 * row reports the cost of one (sample / batch, after the cost of reading
 * the clock twice is taken off). params: printf-style, "key=value" pairs
 * separated by commas, or NULL for none.
 */
void bench_begin(unsigned batch, const char *params, ...) __printf(2, 3);

/* Starts a row counted in another unit (no clock overhead, no batch). */
void bench_begin_unit(const char *unit, const char *params, ...) __printf(2, 3);

/*
 * True while the row wants another sample. The first calls are the
 * warm-up: bench_add drops what they measure.
 */
bool bench_more(void);

/* One sample: TSC cycles for a timed row, a count for the others. */
void bench_add(uint64_t value);

/* Ends the row: statistics, TLB counters, one line of output. */
void bench_end(void);

/*
 * The median of the row bench_end closed last, in its unit, per operation,
 * as printed: for a benchmark that derives a figure from its own rows (the
 * flush_local crossover). False when that row took no samples, or a row
 * was begun or printed n/a since.
 */
bool bench_last_median(uint64_t *median);

/*
 * The CPUs besides the measuring one that the rows begun from now on use
 * (NULL: none): each row names them, with their APIC IDs and cores. The
 * harness forgets them when the benchmark ends.
 */
void bench_row_cpus(const struct cpumask *others);

/* A row that cannot be measured here, and why ("no PCID"). */
void bench_na(const char *why, const char *params, ...) __printf(2, 3);

/*
 * Starts a row measured elsewhere (by a user program), in TSC cycles: the
 * TLB counters start now; each bench_add is then one operation with the
 * clock's cost already taken off (the producer did its own warm-up and
 * kept to bench_max_samples, bench_min_samples and bench_budget_ns).
 */
void bench_begin_external(const char *params, ...) __printf(1, 2);

/*
 * An external row's producer starts measuring (true: the TLB counters
 * start over) or has stopped (false: they stop), so that the counters
 * cover its samples and not its start and end.
 */
void bench_external_window(bool measuring);

/*
 * How many samples a row of this benchmark takes at most, and its time
 * budget, after bench_scale= (a benchmark sizing its own loops, e.g. a
 * user program, asks here).
 */
unsigned bench_max_samples(void);
unsigned bench_min_samples(void);
uint64_t bench_budget_ns(void);

#endif
