// SPDX-License-Identifier: MIT
/*
 * The benchmarks' results, kept for the end of the job (bench/results.h).
 */
#include "bench/results.h"
#include "console/console.h"
#include "console/kprintf.h"
#include "lib/format.h"
#include "lib/string.h"
#include "mm/heap.h"

/*
 * The default suite prints about 90 rows on two CPUs, a few more for each
 * further CPU (the shootdown rows): 1024 leave room for 255 CPUs.
 */
#define BENCH_RESULTS_MAX 1024
/* The record of the default suite is about 20 KB on two CPUs. */
#define BENCH_RECORD_BYTES (512 * 1024)

#define TENTHS	  10
#define NS_PER_US 1000
#define NS_PER_MS 1000000

static struct bench_result rows[BENCH_RESULTS_MAX];
static size_t row_count;
static struct bench_crossover crossover;

/* Two or three significant figures: enough to compare, few to read. */
const char *bench_format_duration(char *buf, uint64_t tenths)
{
	uint64_t ns = tenths / TENTHS;

	if (ns < TENTHS)
		ksnprintf(buf, BENCH_DURATION_MAX, "%llu.%llu ns",
			  (unsigned long long)ns,
			  (unsigned long long)(tenths % TENTHS));
	else if (ns < NS_PER_US)
		ksnprintf(buf, BENCH_DURATION_MAX, "%llu ns",
			  (unsigned long long)ns);
	else if (ns < NS_PER_MS)
		ksnprintf(buf, BENCH_DURATION_MAX, "%llu.%llu us",
			  (unsigned long long)(ns / NS_PER_US),
			  (unsigned long long)(ns % NS_PER_US / 100));
	else
		ksnprintf(buf, BENCH_DURATION_MAX, "%llu.%02llu ms",
			  (unsigned long long)(ns / NS_PER_MS),
			  (unsigned long long)(ns % NS_PER_MS / 10000));
	return buf;
}

void bench_results_reset(void)
{
	row_count = 0;
	crossover = (struct bench_crossover){0};
}

void bench_results_add(const struct bench_result *r)
{
	if (row_count < BENCH_RESULTS_MAX)
		rows[row_count++] = *r;
}

size_t bench_results_count(void)
{
	return row_count;
}

const struct bench_result *bench_results_at(size_t i)
{
	return i < row_count ? &rows[i] : NULL;
}

const struct bench_result *bench_results_find(const char *bench,
					      const char *params)
{
	for (size_t i = 0; i < row_count; i++) {
		if (!strcmp(rows[i].bench, bench) &&
		    !strcmp(rows[i].params, params))
			return &rows[i];
	}
	return NULL;
}

void bench_results_set_crossover(const struct bench_crossover *c)
{
	crossover = *c;
	crossover.reported = true;
}

const struct bench_crossover *bench_results_crossover(void)
{
	return &crossover;
}

/* --- The record ---------------------------------------------------------------- */

/*
 * Lines the tap keeps: what tools/bench/bench.py's parser reads. Everything else
 * the serial port gets meanwhile (a warning, tlb_trace lines from other
 * CPUs) is left out.
 */
static const char *const kept_prefixes[] = {"bench: ", "options: ", "@ "};

static struct {
	char *text;
	size_t length;	   /* bytes of whole, kept lines, and the current one */
	size_t line_start; /* where the current line began */
	bool overflowed;
} record;

static bool line_kept(const char *line, size_t length)
{
	for (size_t i = 0; i < ARRAY_SIZE(kept_prefixes); i++) {
		size_t n = strlen(kept_prefixes[i]);

		if (length >= n && !memcmp(line, kept_prefixes[i], n))
			return true;
	}
	return false;
}

/* Under the console lock (console/console.h), for every write to serial. */
static void record_tap(const char *s, size_t n)
{
	for (size_t i = 0; i < n && !record.overflowed; i++) {
		if (record.length == BENCH_RECORD_BYTES) {
			record.overflowed = true;
			record.length = record.line_start;
			break;
		}
		record.text[record.length++] = s[i];
		if (s[i] != '\n')
			continue;
		if (!line_kept(record.text + record.line_start,
			       record.length - record.line_start))
			record.length = record.line_start;
		record.line_start = record.length;
	}
}

bool bench_record_start(void)
{
	if (!record.text)
		record.text = kmalloc(BENCH_RECORD_BYTES);
	if (!record.text) {
		kprintf("bench: no memory to keep the results for the screen's "
			"QR codes\n");
		return false;
	}
	record.length = 0;
	record.line_start = 0;
	record.overflowed = false;
	console_set_tap(record_tap);
	return true;
}

void bench_record_stop(void)
{
	console_set_tap(NULL);
	/* A line cut off by the stop is not one the parser could read. */
	record.length = record.line_start;
}

const char *bench_record_text(size_t *length, bool *whole)
{
	*length = record.text ? record.length : 0;
	*whole = record.text && !record.overflowed;
	return record.text;
}
