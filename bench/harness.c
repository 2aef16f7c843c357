// SPDX-License-Identifier: MIT
/*
 * The benchmark harness: the registry, the method, the output.
 *
 * Method (docs/bench.md):
 *  1. Time is the TSC read with LFENCE on both sides (bench_clock), so the
 *     read waits for what came before and nothing after starts early; RDTSCP
 *     would do the same for the first half but is not on every CPU.
 *  2. The cost of reading the clock twice is measured once at start-up
 *     (the minimum of many back-to-back pairs) and taken off every timed
 *     sample, so a row reports the operation alone. Under TCG with icount
 *     that makes a row an exact instruction count.
 *  3. Each row first runs a few warm-up samples (caches, TLB, branch
 *     predictors, lazily built state) and drops them, then samples until it
 *     has its maximum count, or at least the minimum count and its time
 *     budget is used up: cheap operations get many samples, slow ones (a
 *     wake-up across emulated CPUs) still finish in bounded time.
 *  4. A row reports the median, p10, p90 (nearest rank, rounded down), the
 *     minimum and the count, in cycles and the median in ns; under icount
 *     also in instructions.
 *  5. Whoever measures keeps its CPU: samples of kernel operations run with
 *     interrupts off or with the CPU's tick stopped (bench/fixture.h), and
 *     the TLB counters of every CPU are summed over the row's samples.
 *
 * Output: a title line per benchmark, a column header, then one line per
 * row, which is both the human table and the machine-readable record:
 *
 *	@ name params unit median p10 p90 min count median_ns insns counters
 *	  cpus=L apic=L types=T smt=S eff_mhz=F smi=N
 *	@ name params n/a: reason
 *
 * Fields are separated by spaces and never contain one (params: key=value
 * pairs joined by commas, "-" for none; counters: name=value pairs of the
 * TLB and IPC path counters that moved, joined by commas, "-" for none;
 * "-" also for ns and insns where they do not apply), except the n/a
 * reason, which runs to the end of the line. After the counters, key=value
 * fields say where the row ran (bench/cpus.h): the CPUs it used, measuring
 * one first, their APIC IDs, core types and shared cores, then the
 * measuring CPU's effective clock (APERF/MPERF) and the SMIs during the
 * samples, "n/a" where the CPU has no such counter; a parser reads them by
 * key, and rows without them are older output. Around them: one `bench:
 * env ...` line (platform, CPUs, TSC, CPU model and features, the CPUs'
 * topology in brief, selection), a `bench: cpu N ...` line per CPU, the
 * `options:` and `bench: tlb ...` lines with every policy in force, a
 * `bench: NAME: N results in T ms` line after each benchmark and `bench:
 * end ...` last. A benchmark may print a figure derived from its rows
 * before its results line (flush_local's `bench: flush_local crossover
 * ...`, bench/flush.c).
 * tools/bench/bench.py reads exactly this.
 */
#include "bench/bench.h"
#include "bench/cpus.h"
#include "bench/fixture.h"
#include "bench/results.h"
#include "bench/summary.h"
#include "bench/tlb_view.h"
#include "cpu/cpu.h"
#include "cpu/cycle_counters.h"
#include "lib/format.h"
#include "console/kprintf.h"
#include "boot/options.h"
#include "lib/option.h"
#include "trap/panic.h"
#include "cpu/platform.h"
#include "lib/string.h"
#include "arch/x86.h"
#include "cpu/percpu.h"

/*
 * Rows sample up to BENCH_SAMPLES_DEFAULT times within BENCH_BUDGET_NS, but
 * at least BENCH_SAMPLES_MIN times: with 11 samples p10 and p90 are still
 * distinct from the extremes. The default suite has about 80 rows (more
 * with more CPUs); at 200 ms each it stays well inside the 2 minutes it
 * may take under TCG on a 2-core host.
 */
#define BENCH_SAMPLES_DEFAULT 1001
#define BENCH_SAMPLES_MIN     11
#define BENCH_SAMPLES_FLOOR   3 /* the least a scaled-down row takes */
#define BENCH_BUDGET_NS	      (200 * NSEC_PER_MSEC)
#define BENCH_WARMUP	      5
#define OVERHEAD_PAIRS	      101
#define PERCENT		      100
#define P10		      10
#define P90		      90
/* Under QEMU's -icount shift=1 the TSC counts 2 per instruction. */
#define ICOUNT_CYCLES_PER_INSN 2
#define NS_TENTHS	       10
/* Room for every TLB counter with a large value. */
#define BENCH_COUNTERS_MAX 320
#define KHZ_PER_MHZ	   1000

extern const struct bench bench_table_start[], bench_table_end[];

/* The groups in the order they run; benchmarks sort by name within one. */
static const char *const groups[] = {"prim", "switch", "flush", "scale"};

/* bench=: the groups, then the benchmarks; NULL-terminated for it. */
static const char *choices[BENCH_MAX_CHOICES + 1];
static const struct bench *choice_bench[BENCH_MAX_CHOICES]; /* NULL: group */
static size_t choice_count;

/* The row being measured; only the boot thread writes it. */
static struct {
	const struct bench *bench;
	bool open;
	bool timed;    /* TSC cycles: overhead off, per operation, ns */
	bool external; /* samples come measured: keep them as they are */
	bool measuring;
	const char *unit;
	unsigned batch;
	unsigned warmup_left;
	size_t count;
	uint64_t started;
	char params[BENCH_PARAMS_MAX];
	struct bench_counters before;
	bool frozen; /* delta holds the counters' change: stop reading */
	struct bench_counters delta;
	/* Where it runs: the CPU that began it and the others it uses. */
	unsigned first_cpu;
	struct cpumask others;
	/* APERF/MPERF and SMIs over the samples, read on cycles_cpu. */
	unsigned cycles_cpu;
	bool cycles_moved; /* ended on another CPU: no effective clock */
	struct cpu_cycle_counters cycles_before, cycles_after;
} row;

/* bench_row_cpus: the others of the rows begun from now on. */
static struct cpumask row_others;

static uint64_t samples[BENCH_SAMPLES_DEFAULT * (BENCH_SCALE_MAX / PERCENT)];
static unsigned scale = BENCH_SCALE_DEFAULT;
static bool icount; /* icount: QEMU's TSC counts instructions */
static uint64_t clock_overhead;
static unsigned rows_printed;
/* What bench_last_median answers: the last row bench_end closed. */
static struct {
	bool valid;
	uint64_t median;
} last_row;

/* Linker symbols: compare them as numbers, not as C objects. */
static size_t bench_count(void)
{
	return ((uintptr_t)bench_table_end - (uintptr_t)bench_table_start) /
	       sizeof(struct bench);
}

static void collect_choices(void)
{
	if (choice_count)
		return;
	for (size_t g = 0; g < ARRAY_SIZE(groups); g++)
		choices[choice_count++] = groups[g];
	for (size_t g = 0; g < ARRAY_SIZE(groups); g++) {
		for (size_t i = 0; i < bench_count(); i++) {
			if (strcmp(bench_table_start[i].group, groups[g]))
				continue;
			KASSERT(choice_count < BENCH_MAX_CHOICES,
				"more than %d benchmarks and groups",
				BENCH_MAX_CHOICES);
			choice_bench[choice_count] = &bench_table_start[i];
			choices[choice_count++] = bench_table_start[i].name;
		}
	}
	KASSERT(choice_count == ARRAY_SIZE(groups) + bench_count(),
		"a benchmark names a group not in the groups table");
}

/* --- The options ----------------------------------------------------------- */

enum { OPT_BENCH, OPT_BENCH_SCALE, OPT_ICOUNT, BENCH_OPTION_COUNT };

static const struct option_desc bench_descs[BENCH_OPTION_COUNT] = {
	[OPT_BENCH] =
		{.name = "bench",
		 .type = OPTION_LIST,
		 .choices = choices,
		 .help = "run these benchmarks (docs/bench.md), named one by "
			 "one or by group (`prim`, `switch`, `flush`, "
			 "`scale`), print the results, then end; without "
			 "`test=`, `init=` or `bench=` the kernel runs them "
			 "all"},
	[OPT_BENCH_SCALE] = {.name = "bench_scale",
			     .type = OPTION_UINT,
			     .min = BENCH_SCALE_MIN,
			     .max = BENCH_SCALE_MAX,
			     .def = BENCH_SCALE_DEFAULT,
			     .help = "percent of each benchmark row's samples "
				     "and time budget"},
	[OPT_ICOUNT] =
		{.name = "icount",
		 .type = OPTION_FLAG,
		 .help = "QEMU runs with `-icount shift=1` (`ICOUNT=1` passes "
			 "it): the results also show instructions"},
};
static struct option_value bench_options[BENCH_OPTION_COUNT] = {
	[OPT_BENCH_SCALE] = {.number = BENCH_SCALE_DEFAULT},
};

static void bench_options_prepare(void)
{
	collect_choices();
	choices[choice_count] = NULL;
}

static void bench_options_set(const struct option_value *value)
{
	scale = (unsigned)value[OPT_BENCH_SCALE].number;
	icount = value[OPT_ICOUNT].flag;
}
OPTION_TABLE(90, bench, bench_descs, bench_options, BENCH_OPTION_COUNT,
	     bench_options_prepare, bench_options_set);

bool bench_requested(void)
{
	return bench_options[OPT_BENCH].given;
}

bool bench_icount(void)
{
	return icount;
}

/* Benchmark i of the run order is selected by its name or its group. */
static bool selected(size_t i)
{
	const struct option_words *mask = &bench_options[OPT_BENCH].words;

	if (!bench_requested())
		return true; /* the default job: every benchmark */
	for (size_t g = 0; g < ARRAY_SIZE(groups); g++) {
		if (option_words_has(mask, g) &&
		    !strcmp(groups[g], choice_bench[i]->group))
			return true;
	}
	return option_words_has(mask, i);
}

/* --- Samples and statistics ---------------------------------------------- */

unsigned bench_max_samples(void)
{
	return MAX(BENCH_SAMPLES_DEFAULT * scale / PERCENT,
		   BENCH_SAMPLES_FLOOR);
}

unsigned bench_min_samples(void)
{
	return MAX(BENCH_SAMPLES_MIN * scale / PERCENT, BENCH_SAMPLES_FLOOR);
}

uint64_t bench_budget_ns(void)
{
	return BENCH_BUDGET_NS * scale / PERCENT;
}

static void measure_clock_overhead(void)
{
	uint64_t least = UINT64_MAX;

	for (int i = 0; i < OVERHEAD_PAIRS; i++) {
		uint64_t flags = irq_save();
		uint64_t start = bench_clock();
		uint64_t end = bench_clock();

		irq_restore(flags);
		least = MIN(least, end - start);
	}
	clock_overhead = least;
}

static void open_row(bool timed, const char *unit, unsigned batch,
		     const char *fmt, va_list ap)
{
	KASSERT(!row.open, "benchmark %s began a row inside another",
		row.bench->name);
	row.open = true;
	last_row.valid = false;
	row.timed = timed;
	row.external = false;
	row.unit = unit;
	row.batch = batch ? batch : 1;
	row.warmup_left = BENCH_WARMUP;
	row.count = 0;
	row.measuring = false;
	row.frozen = false;
	row.first_cpu = this_cpu_index();
	row.others = row_others;
	if (INJECT_BUILT)
		bench_probe_row_begin();
	if (fmt)
		kvsnprintf(row.params, sizeof(row.params), fmt, ap);
	else
		strlcpy(row.params, "-", sizeof(row.params));
}

void bench_begin(unsigned batch, const char *params, ...)
{
	va_list ap;

	va_start(ap, params);
	open_row(true, "cycles", batch, params, ap);
	va_end(ap);
}

void bench_begin_unit(const char *unit, const char *params, ...)
{
	va_list ap;

	va_start(ap, params);
	open_row(false, unit, 1, params, ap);
	va_end(ap);
}

/* The TLB counters, APERF/MPERF and the SMI count start for the row. */
static void counters_start(void)
{
	bench_counters_read(&row.before);
	row.cycles_cpu = this_cpu_index();
	row.cycles_moved = false;
	cpu_cycle_counters_read(&row.cycles_before);
}

bool bench_more(void)
{
	KASSERT(row.open, "bench_more outside a row (%s)", row.bench->name);
	if (row.warmup_left) {
		if (INJECT_BUILT)
			bench_probe_sample_begin();
		return true;
	}
	if (!row.measuring) {
		/* The samples start now: so do the budget and the counters. */
		row.measuring = true;
		counters_start();
		row.started = bench_clock();
	}
	if (row.count >= bench_max_samples())
		return false;
	if (row.count >= bench_min_samples() &&
	    tsc_to_ns(bench_clock() - row.started) >= bench_budget_ns())
		return false;
	if (INJECT_BUILT)
		bench_probe_sample_begin();
	return true;
}

void bench_add(uint64_t value)
{
	if (INJECT_BUILT)
		bench_probe_sample_end();
	if (row.warmup_left) {
		row.warmup_left--;
		return;
	}
	if (row.timed && !row.external)
		value = (value > clock_overhead ? value - clock_overhead : 0) /
			row.batch;
	if (row.count < ARRAY_SIZE(samples))
		samples[row.count++] = value;
}

/* Heapsort: O(n log n) on a few hundred samples, no recursion, in place. */
static void sift_down(uint64_t *v, size_t root, size_t n)
{
	for (size_t child; (child = 2 * root + 1) < n; root = child) {
		uint64_t tmp;

		if (child + 1 < n && v[child + 1] > v[child])
			child++;
		if (v[root] >= v[child])
			return;
		tmp = v[root];
		v[root] = v[child];
		v[child] = tmp;
	}
}

static void sort_samples(uint64_t *v, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift_down(v, i, n);
	for (size_t end = n; end-- > 1;) {
		uint64_t tmp = v[0];

		v[0] = v[end];
		v[end] = tmp;
		sift_down(v, 0, end);
	}
}

/* Nearest rank, rounded down: the median of an even count is the lower. */
static uint64_t percentile(const uint64_t *sorted, size_t n, unsigned p)
{
	return sorted[(n - 1) * p / PERCENT];
}

/* bench/results.h keeps what print_row and the n/a rows print. */
static void keep_row(const uint64_t *sorted, size_t n, uint64_t tenths_of_ns)
{
	struct bench_result r = {
		.bench = row.bench->name,
		.measured = true,
		.timed = row.timed,
		.unit = row.unit,
		.median = percentile(sorted, n, PERCENT / 2),
		.p10 = percentile(sorted, n, P10),
		.p90 = percentile(sorted, n, P90),
		.min = sorted[0],
		.count = n,
		.median_ns_tenths = tenths_of_ns,
	};

	if (row.timed && icount)
		r.insns = r.median / ICOUNT_CYCLES_PER_INSN;

	strlcpy(r.params, row.params, sizeof(r.params));
	bench_results_add(&r);
}

static void keep_na(const char *params, const char *why)
{
	struct bench_result r = {.bench = row.bench->name};

	strlcpy(r.params, params, sizeof(r.params));
	strlcpy(r.why, why, sizeof(r.why));
	bench_results_add(&r);
}

/* The counters' change since the row's samples started. */
static void counters_delta(struct bench_counters *delta)
{
	bench_counters_read(delta);
	bench_counters_sub(delta, &row.before);
	cpu_cycle_counters_read(&row.cycles_after);
	row.cycles_moved = this_cpu_index() != row.cycles_cpu;
}

/*
 * The row's fields after its counters: where it ran (bench/cpus.h), the
 * measuring CPU's effective clock and the SMIs while it measured.
 */
static void format_where(char *buf, size_t size)
{
	const struct cpu_cycle_counters *a = &row.cycles_before;
	const struct cpu_cycle_counters *b = &row.cycles_after;
	char clock[24] = "n/a", smi[24] = "n/a";
	size_t used;
	uint64_t khz, smis;

	bench_cpus_format(row.first_cpu, &row.others, buf, size);
	if (!row.cycles_moved && cpu_effective_khz(a, b, tsc_hz(), &khz))
		ksnprintf(clock, sizeof(clock), "%llu",
			  (unsigned long long)(khz / KHZ_PER_MHZ));
	if (cpu_smis_between(a, b, &smis))
		ksnprintf(smi, sizeof(smi), "%llu", (unsigned long long)smis);
	used = strlen(buf);
	ksnprintf(buf + used, size - used, " eff_mhz=%s smi=%s", clock, smi);
}

static void print_header(void)
{
	kprintf("# %-16s %-30s %-8s %9s %9s %9s %9s %6s %9s %7s %s\n",
		"benchmark", "parameters", "unit", "median", "p10", "p90",
		"min", "count", "median_ns", "insns",
		"counters, then where: cpus apic types smt eff_mhz smi");
}

static void print_row(const uint64_t *sorted, size_t n,
		      const struct bench_counters *delta)
{
	static char where[BENCH_CPU_FIELDS_MAX + 48];
	char ns[24] = "-", insns[24] = "-", counters[BENCH_COUNTERS_MAX];
	uint64_t median = percentile(sorted, n, PERCENT / 2);
	uint64_t tenths_of_ns = 0;

	if (row.timed) {
		uint64_t tenths = tsc_to_ns(median * NS_TENTHS);

		tenths_of_ns = tenths;
		ksnprintf(ns, sizeof(ns), "%llu.%llu",
			  (unsigned long long)(tenths / NS_TENTHS),
			  (unsigned long long)(tenths % NS_TENTHS));
		if (icount)
			ksnprintf(insns, sizeof(insns), "%llu",
				  (unsigned long long)(median /
						       ICOUNT_CYCLES_PER_INSN));
	}
	keep_row(sorted, n, tenths_of_ns);
	bench_counters_format(delta, counters, sizeof(counters));
	format_where(where, sizeof(where));
	kprintf("@ %-16s %-30s %-8s %9llu %9llu %9llu %9llu %6zu %9s %7s %s "
		"%s\n",
		row.bench->name, row.params, row.unit,
		(unsigned long long)median,
		(unsigned long long)percentile(sorted, n, P10),
		(unsigned long long)percentile(sorted, n, P90),
		(unsigned long long)sorted[0], n, ns, insns, counters, where);
	rows_printed++;
}

static void close_row(void)
{
	if (!row.frozen)
		counters_delta(&row.delta);
	if (!row.count) {
		kprintf("@ %-16s %-30s n/a: no samples were taken\n",
			row.bench->name, row.params);
		keep_na(row.params, "no samples were taken");
		rows_printed++;
	} else {
		sort_samples(samples, row.count);
		print_row(samples, row.count, &row.delta);
		last_row.median = percentile(samples, row.count, PERCENT / 2);
		last_row.valid = true;
	}
	if (INJECT_BUILT)
		bench_probe_row_end(row.bench->name, row.params, row.batch);
	row.open = false;
}

void bench_end(void)
{
	KASSERT(row.open, "bench_end outside a row (%s)", row.bench->name);
	if (!row.measuring)
		counters_start();
	close_row();
}

bool bench_last_median(uint64_t *median)
{
	if (last_row.valid)
		*median = last_row.median;
	return last_row.valid;
}

void bench_row_cpus(const struct cpumask *others)
{
	if (others)
		row_others = *others;
	else
		cpumask_clear_all(&row_others);
}

void bench_na(const char *why, const char *params, ...)
{
	char text[BENCH_PARAMS_MAX];
	va_list ap;

	va_start(ap, params);
	kvsnprintf(text, sizeof(text), params, ap);
	va_end(ap);
	kprintf("@ %-16s %-30s n/a: %s\n", row.bench->name, text, why);
	keep_na(text, why);
	last_row.valid = false;
	rows_printed++;
}

void bench_begin_external(const char *params, ...)
{
	va_list ap;

	va_start(ap, params);
	open_row(true, "cycles", 1, params, ap);
	va_end(ap);
	row.external = true;
	row.warmup_left = 0;
	row.measuring = true;
	counters_start();
}

void bench_external_window(bool measuring)
{
	KASSERT(row.open && row.external,
		"bench_external_window outside an external row");
	if (measuring)
		counters_start();
	else if (!row.frozen)
		counters_delta(&row.delta);
	row.frozen = !measuring;
}

/* --- The run ---------------------------------------------------------------- */

static const char *platform_name(void)
{
	if (platform_get() == PLATFORM_QEMU_TCG && icount)
		return "tcg+icount";
	return platform_accel_name();
}

static void print_environment(void)
{
	const struct cpu_features *f = &boot_cpu;
	char list[256], cpus[BENCH_CPUS_ENV_MAX], smi[24] = "n/a";
	char target[BENCH_OTHER_TEXT_MAX];
	struct cpu_cycle_counters now;
	size_t used = 0;

	for (size_t i = ARRAY_SIZE(groups); i < choice_count; i++) {
		if (selected(i))
			used += (size_t)ksnprintf(
				list + MIN(used, sizeof(list)),
				sizeof(list) - MIN(used, sizeof(list)), "%s%s",
				used ? "," : "", choices[i]);
	}
	bench_cpus_env(cpus, sizeof(cpus));
	cpu_cycle_counters_read(&now);
	if (now.smi_known)
		ksnprintf(smi, sizeof(smi), "%llu",
			  (unsigned long long)now.smi);
	kprintf("bench: env platform=%s cpus=%u tsc_hz=%llu tsc_source=%s "
		"invariant_tsc=%d clock_overhead=%llu scale=%u vendor=%s "
		"family=%u model=%u stepping=%u pcid=%d invpcid=%d pge=%d "
		"x2apic=%d tsc_deadline=%d smep=%d smap=%d xsave=%d "
		"hypervisor=%s %s eff_clock=%s smi_count=%s selected=%s "
		"brand=%s\n",
		platform_name(), cpu_count, (unsigned long long)tsc_hz(),
		tsc_source(), f->invariant_tsc,
		(unsigned long long)clock_overhead, scale, f->vendor, f->family,
		f->model, f->stepping, f->pcid, f->invpcid, f->pge, f->x2apic,
		f->tsc_deadline, f->smep, f->smap, f->xsave,
		f->hypervisor[0] ? f->hypervisor : "-", cpus,
		cpu_has_aperf_mperf() ? "aperf_mperf" : "n/a", smi, list,
		f->brand);
	bench_cpus_report();
	kprintf("bench: one-target rows flush %s\n",
		bench_other_describe(target));
	options_report();
	bench_policy_report();
}

bool bench_run_requested(void)
{
	uint64_t start = bench_clock();
	unsigned ran = 0;
	bool every_one_reported = true;
	struct tlb_policy boot_policy;

	collect_choices();
	KASSERT(this_cpu_index() == 0, "benchmarks run on CPU 0, not %u",
		this_cpu_index());
	measure_clock_overhead();
	cpu_cycle_counters_probe();
	bench_cpus_choose();
	bench_results_reset();
	bench_record_start();
	kprintf("bench: shootdown benchmarks (docs/bench.md); rows: @ name "
		"params unit median p10 p90 min count median_ns insns "
		"counters cpus apic types smt eff_mhz smi\n");
	print_environment();
	for (size_t i = ARRAY_SIZE(groups); i < choice_count; i++) {
		const struct bench *b = choice_bench[i];
		unsigned rows_before = rows_printed;
		uint64_t begun = bench_clock();

		if (!selected(i))
			continue;
		row.bench = b;
		kprintf("bench: %s (%s): %s\n", b->name, b->group,
			b->experiment);
		print_header();
		boot_policy = tlb_policy;
		b->run();
		KASSERT(!row.open, "benchmark %s left a row open", b->name);
		bench_row_cpus(NULL);
		if (bench_policy_changed()) {
			bench_policy_set(&boot_policy);
			bench_policy_changed();
		}
		if (rows_printed == rows_before) {
			kprintf("bench: %s printed no result\n", b->name);
			every_one_reported = false;
		}
		kprintf("bench: %s: %u results in %llu ms\n", b->name,
			rows_printed - rows_before,
			(unsigned long long)(tsc_to_ns(bench_clock() - begun) /
					     NSEC_PER_MSEC));
		ran++;
	}
	kprintf("bench: end benchmarks=%u results=%u seconds=%llu\n", ran,
		rows_printed,
		(unsigned long long)(tsc_to_ns(bench_clock() - start) /
				     NSEC_PER_SEC));
	bench_summary_print();
	bench_record_stop();
	return every_one_reported;
}
