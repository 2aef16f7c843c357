/* SPDX-License-Identifier: MIT */
/*
 * What the benchmarks found, kept after they print it: the end of the job
 * (bench/summary.c, bench/screen.c) reads its rows again for the summary,
 * the pages of rows and the QR codes a machine with only a screen shows.
 *
 *  - The rows: each result the harness printed, as numbers (a copy of its
 *    `@ ` line), and the figures a benchmark derives from them (the
 *    flush_local crossover).
 *  - The record: the output tools/bench/bench.py reads (`bench:`, `options:` and
 *    `@ ` lines), byte for byte as the serial log has it, so the QR codes
 *    decode to the same results JSON as a serial log (docs/bench.md).
 *
 * Only the boot thread, on CPU 0, writes and reads either (bench/bench.h).
 */
#ifndef BENCH_RESULTS_H
#define BENCH_RESULTS_H

#include "bench/bench.h"
#include "lib/types.h"

/* Longest n/a reason kept (the rest is cut). */
#define BENCH_WHY_MAX 48

struct bench_result {
	const char *bench; /* its benchmark's name */
	char params[BENCH_PARAMS_MAX];
	bool measured;	  /* false: n/a, and why says why */
	bool timed;	  /* in TSC cycles: median_ns_tenths holds */
	const char *unit; /* "cycles", "switch/s", ... */
	uint64_t median, p10, p90, min;
	size_t count;
	uint64_t median_ns_tenths; /* the median in tenths of a ns */
	uint64_t insns;		   /* under icount: the median's instructions */
	char why[BENCH_WHY_MAX];
};

/* flush_local's `bench: flush_local crossover ...` line as numbers. */
struct bench_crossover {
	bool reported; /* flush_local ran to its crossover line */
	bool measured; /* false: n/a (a row without a median) */
	bool found;    /* false: `none`, page by page cheaper throughout */
	unsigned pages, ceiling;
};

/* Room for a duration bench_format_duration writes. */
#define BENCH_DURATION_MAX 24

/* "180 ns", "4.4 ns", "8.3 us", "1.25 ms" from tenths of a ns; buf. */
const char *bench_format_duration(char *buf, uint64_t tenths_of_ns);

/* Forgets the rows of an earlier run. */
void bench_results_reset(void);

/* The harness keeps a row it printed; past the table's size it is lost. */
void bench_results_add(const struct bench_result *r);
size_t bench_results_count(void);
const struct bench_result *bench_results_at(size_t i);

/* The row of benchmark `bench` with exactly these params, or NULL. */
const struct bench_result *bench_results_find(const char *bench,
					      const char *params);

void bench_results_set_crossover(const struct bench_crossover *c);
const struct bench_crossover *bench_results_crossover(void);

/*
 * The record. bench_record_start keeps the serial output from now on (a
 * console tap), bench_record_stop stops; false from start when there is no
 * memory for it (it says so). bench_record_text: the text kept, its
 * length, and whether it is whole (false when it outgrew its buffer).
 */
bool bench_record_start(void);
void bench_record_stop(void);
const char *bench_record_text(size_t *length, bool *whole);

#endif
