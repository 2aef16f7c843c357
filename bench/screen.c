// SPDX-License-Identifier: MIT
/*
 * The results screen (bench/screen.h): summary, pages of rows, QR codes.
 *
 * results_screen= chooses what follows the summary:
 *  - summary: nothing; the summary stays on screen (the default under an
 *    emulator, whose serial log has everything);
 *  - once: the pages and the codes once, then the summary again, and the
 *    job ends as done= says (what the tests use);
 *  - cycle: summary, pages and codes over and over until the machine is
 *    switched off (the default on a real machine, where a photograph of a
 *    code that came out blurred can be taken again next time round).
 * Each page stays page_seconds= seconds (the summary twice as long);
 * qr_version= caps the codes' version (smaller codes are easier for a
 * poor camera, at the price of more of them).
 */
#include "bench/screen.h"
#include "bench/qr_codes.h"
#include "bench/results.h"
#include "bench/summary.h"
#include "apic/tsc.h"
#include "console/console.h"
#include "console/kprintf.h"
#include "lib/option.h"
#include "cpu/platform.h"
#include "lib/format.h"
#include "lib/qr.h"
#include "sched/sched.h"

/* A page's lines: the title, the column header, then rows, then the footer. */
#define PAGE_FRAME_LINES   3
#define PAGE_COLUMNS	   80
#define PAGE_SECONDS_MIN   1
#define PAGE_SECONDS_DEF   8
#define PAGE_SECONDS_MAX   600
#define SUMMARY_PAGES	   2 /* the summary stays this many page times */
#define TENTHS		   10
#define SUMMARY_FOOTER_MAX 96

enum screen_mode { MODE_AUTO, MODE_SUMMARY, MODE_ONCE, MODE_CYCLE };

enum { OPT_RESULTS_SCREEN, OPT_PAGE_SECONDS, OPT_QR_VERSION, SCREEN_OPTIONS };

static const char *const mode_words[] = {[MODE_AUTO] = "auto",
					 [MODE_SUMMARY] = "summary",
					 [MODE_ONCE] = "once",
					 [MODE_CYCLE] = "cycle",
					 NULL};

static const struct option_desc screen_descs[SCREEN_OPTIONS] = {
	[OPT_RESULTS_SCREEN] = {"results_screen", OPTION_CHOICE, mode_words, 0,
				0, 0,
				"after the summary: pages of rows and QR codes "
				"(once, cycle) or not (summary)"},
	[OPT_PAGE_SECONDS] = {"page_seconds", OPTION_UINT, NULL,
			      PAGE_SECONDS_MIN, PAGE_SECONDS_MAX,
			      PAGE_SECONDS_DEF,
			      "seconds each page of results stays on screen"},
	[OPT_QR_VERSION] = {"qr_version", OPTION_UINT, NULL, QR_VERSION_MIN,
			    QR_VERSION_MAX, QR_VERSION_MAX,
			    "largest QR code version shown"},
};
static struct option_value screen_options[SCREEN_OPTIONS] = {
	[OPT_PAGE_SECONDS] = {.number = PAGE_SECONDS_DEF},
	[OPT_QR_VERSION] = {.number = QR_VERSION_MAX},
};
OPTION_TABLE(95, results_screen, screen_descs, screen_options, SCREEN_OPTIONS,
	     NULL, NULL);

/* auto: pages and codes where nobody reads a serial log. */
static enum screen_mode screen_mode(void)
{
	enum screen_mode mode =
		(enum screen_mode)screen_options[OPT_RESULTS_SCREEN].choice;

	if (mode != MODE_AUTO)
		return mode;
	return platform_get() == PLATFORM_BARE_METAL ? MODE_CYCLE
						     : MODE_SUMMARY;
}

static void stay(unsigned pages)
{
	sleep_ns(pages * screen_options[OPT_PAGE_SECONDS].number *
		 NSEC_PER_SEC);
}

/* --- Pages of rows ----------------------------------------------------------- */

static unsigned rows_per_page(void)
{
	unsigned columns, rows;

	console_screen_size(&columns, &rows);
	return rows > PAGE_FRAME_LINES ? rows - PAGE_FRAME_LINES : 1;
}

static unsigned page_count(void)
{
	size_t per = rows_per_page();

	return (unsigned)((bench_results_count() + per - 1) / per);
}

/* A timed statistic as a duration: cycles to tenths of a ns. */
static const char *stat(char *buf, const struct bench_result *r, uint64_t value)
{
	if (r->timed)
		return bench_format_duration(buf, tsc_to_ns(value * TENTHS));
	ksnprintf(buf, BENCH_DURATION_MAX, "%llu", (unsigned long long)value);
	return buf;
}

static void show_row(const struct bench_result *r)
{
	char median[BENCH_DURATION_MAX], p10[BENCH_DURATION_MAX];
	char p90[BENCH_DURATION_MAX], params[BENCH_PARAMS_MAX + 16];

	if (!r->measured) {
		kprintf_screen("%-16.16s %-31.31s n/a: %.25s\n", r->bench,
			       r->params, r->why);
		return;
	}
	/* Rows counted in another unit than time say which. */
	ksnprintf(params, sizeof(params), r->timed ? "%s" : "%s [%s]",
		  r->params, r->unit);
	kprintf_screen("%-16.16s %-31.31s %9s %9s %9s\n", r->bench, params,
		       stat(median, r, r->median), stat(p10, r, r->p10),
		       stat(p90, r, r->p90));
}

static void show_page(unsigned page, unsigned pages, unsigned codes)
{
	size_t per = rows_per_page(), first = (size_t)page * per;
	size_t last = MIN(first + per, bench_results_count());

	console_screen_clear();
	kprintf_screen(
		"shootdown results, page %u of %u: rows %zu-%zu of %zu\n",
		page + 1, pages, first + 1, last, bench_results_count());
	kprintf_screen("%-16s %-31s %9s %9s %9s\n", "benchmark", "parameters",
		       "median", "p10", "p90");
	for (size_t i = first; i < last; i++)
		show_row(bench_results_at(i));
	if (page + 1 < pages)
		kprintf_screen(
			"(next page in %llu s)",
			(unsigned long long)screen_options[OPT_PAGE_SECONDS]
				.number);
	else if (codes)
		kprintf_screen("(then the complete results in %u QR codes)",
			       codes);
}

/* --- The cycle ------------------------------------------------------------------- */

static void show_summary(unsigned pages, unsigned codes)
{
	char footer[SUMMARY_FOOTER_MAX];

	if (pages || codes)
		ksnprintf(
			footer, sizeof(footer),
			"Next: every row in %u pages, then %u QR codes of the "
			"complete results, %llu s each.",
			pages, codes,
			(unsigned long long)screen_options[OPT_PAGE_SECONDS]
				.number);
	bench_summary_show(pages || codes ? footer : NULL);
	kprintf_serial("screen: summary\n");
}

void bench_screen_show(void)
{
	enum screen_mode mode = screen_mode();
	unsigned columns, rows, pages, codes;

	if (mode == MODE_SUMMARY)
		return;
	console_screen_size(&columns, &rows);
	if (!columns) {
		kprintf_serial("screen: none (no display, or console=serial): "
			       "the rows are on serial only\n");
		return;
	}
	pages = page_count();
	codes = qr_codes_prepare(
		(unsigned)screen_options[OPT_QR_VERSION].number);
	kprintf_serial(
		"screen: %s: the summary, %u pages of rows, %u QR "
		"codes, %llu s each\n",
		mode_words[mode], pages, codes,
		(unsigned long long)screen_options[OPT_PAGE_SECONDS].number);
	do {
		show_summary(pages, codes);
		stay(SUMMARY_PAGES);
		for (unsigned p = 0; p < pages; p++) {
			show_page(p, pages, codes);
			kprintf_serial("screen: page %u/%u\n", p + 1, pages);
			stay(1);
		}
		for (unsigned k = 0; k < codes; k++) {
			if (!qr_codes_show(k))
				break;
			kprintf_serial("screen: qr %u/%u\n", k + 1, codes);
			stay(1);
		}
	} while (mode == MODE_CYCLE);
	show_summary(0, 0);
}
