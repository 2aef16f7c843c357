// SPDX-License-Identifier: MIT
/*
 * bench/crossover.c: flush_local's crossover on medians made up to tell the
 * definition (docs/bench.md: the smallest i from which full[j] <= by_page[j]
 * for every j >= i, else n) from its near misses: the first count where the
 * whole context wins, without "for every larger count"; ties taken as a
 * loss; n - 1 for "none". The grader's own check (tools/labs/lab_checks.py)
 * sees only the medians a run happens to give, which under TCG are often
 * monotone; these are not. Each array is a heap block of exactly n entries,
 * so ASan sees a read past either end.
 */
#include "bench/crossover.h"
#include "tests/host/host_test.h"

/* Every median of the whole-context series: page by page is then cheaper
 * below FULL, equal at it, dearer above. */
#define FULL	       50
#define CHEAP	       40
#define DEAR	       60
#define COUNTS_MAX     11 /* flush_local's counts: 1, 2, 4, ... 512 */
#define EXHAUSTIVE_LEN 7

/* flush_crossover on copies of the two series, each exactly n long. */
static size_t crossover(const uint64_t *by_page, const uint64_t *full, size_t n)
{
	uint64_t *b = malloc(n ? n * sizeof(*b) : 1);
	uint64_t *f = malloc(n ? n * sizeof(*f) : 1);
	size_t i;

	if (!b || !f)
		abort();
	if (n) {
		memcpy(b, by_page, n * sizeof(*b));
		memcpy(f, full, n * sizeof(*f));
	}
	i = flush_crossover(b, f, n);
	free(b);
	free(f);
	return i;
}

/* The definition, spelled out: every j from i on, the whole context wins. */
static size_t expected(const uint64_t *by_page, const uint64_t *full, size_t n)
{
	for (size_t i = 0; i <= n; i++) {
		bool all = true;

		for (size_t j = i; j < n; j++)
			all = all && full[j] <= by_page[j];
		if (all)
			return i;
	}
	return n;
}

static void check_case(const uint64_t *by_page, size_t n, size_t want,
		       const char *what)
{
	uint64_t full[COUNTS_MAX];
	size_t got;

	for (size_t j = 0; j < n; j++)
		full[j] = FULL;
	got = crossover(by_page, full, n);
	CHECK(got == want, "%s: crossover %zu, expected %zu", what, got, want);
}

HOST_TEST(monotone)
{
	const uint64_t by_page[] = {10, 20, 30, 45, 55, 70, 90};

	check_case(by_page, ARRAY_SIZE(by_page), 4,
		   "page by page dearer from index 4");
}

HOST_TEST(page_by_page_wins_again)
{
	/* The whole context wins at index 2 and loses again at 3: one noisy
	 * count is not a crossover. */
	const uint64_t by_page[] = {10, 20, 60, 40, 90};

	check_case(by_page, ARRAY_SIZE(by_page), 4, "a win, a loss, a win");
}

HOST_TEST(alternating)
{
	const uint64_t by_page[] = {DEAR, CHEAP, DEAR, CHEAP, DEAR, DEAR};

	check_case(by_page, ARRAY_SIZE(by_page), 4, "alternating, then dearer");
}

HOST_TEST(ties_count_as_full_no_slower)
{
	const uint64_t by_page[] = {CHEAP, FULL, FULL, FULL};
	const uint64_t tie_then_dear[] = {CHEAP, FULL, DEAR};

	check_case(by_page, ARRAY_SIZE(by_page), 1,
		   "equal medians from index 1");
	check_case(tie_then_dear, ARRAY_SIZE(tie_then_dear), 1,
		   "equal at index 1, dearer after");
}

HOST_TEST(none_when_page_by_page_wins_last)
{
	const uint64_t by_page[] = {CHEAP, DEAR, DEAR, CHEAP};
	const uint64_t all_cheap[] = {CHEAP, CHEAP, CHEAP};

	check_case(by_page, ARRAY_SIZE(by_page), ARRAY_SIZE(by_page),
		   "page by page cheaper at the largest count");
	check_case(all_cheap, ARRAY_SIZE(all_cheap), ARRAY_SIZE(all_cheap),
		   "page by page always cheaper");
}

HOST_TEST(from_the_first_and_at_the_last)
{
	const uint64_t all_dear[] = {DEAR, DEAR, DEAR};
	const uint64_t last_only[] = {CHEAP, CHEAP, DEAR};
	const uint64_t one[] = {DEAR};

	check_case(all_dear, ARRAY_SIZE(all_dear), 0,
		   "whole context always wins");
	check_case(last_only, ARRAY_SIZE(last_only), 2,
		   "only the largest count");
	check_case(one, 1, 0, "one count, the whole context wins");
}

HOST_TEST(no_counts)
{
	CHECK_EQ(crossover(NULL, NULL, 0), 0);
}

HOST_TEST(every_pattern_of_seven)
{
	/* Each of the 3^7 series of cheaper, equal and dearer medians. */
	uint64_t by_page[EXHAUSTIVE_LEN], full[EXHAUSTIVE_LEN];
	const uint64_t values[] = {CHEAP, FULL, DEAR};
	unsigned patterns = 1, wrong = 0;

	for (size_t j = 0; j < EXHAUSTIVE_LEN; j++) {
		patterns *= ARRAY_SIZE(values);
		full[j] = FULL;
	}
	for (unsigned p = 0; p < patterns; p++) {
		unsigned rest = p;
		size_t got, want;

		for (size_t j = 0; j < EXHAUSTIVE_LEN; j++) {
			by_page[j] = values[rest % ARRAY_SIZE(values)];
			rest /= ARRAY_SIZE(values);
		}
		got = crossover(by_page, full, EXHAUSTIVE_LEN);
		want = expected(by_page, full, EXHAUSTIVE_LEN);
		if (got != want && wrong++ < 3)
			CHECK(false,
			      "by_page %llu %llu %llu %llu %llu %llu %llu: "
			      "%zu, expected %zu",
			      (unsigned long long)by_page[0],
			      (unsigned long long)by_page[1],
			      (unsigned long long)by_page[2],
			      (unsigned long long)by_page[3],
			      (unsigned long long)by_page[4],
			      (unsigned long long)by_page[5],
			      (unsigned long long)by_page[6], got, want);
	}
	CHECK(!wrong, "%u of %u series wrong", wrong, patterns);
}
