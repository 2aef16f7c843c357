/* SPDX-License-Identifier: MIT */
/*
 * In-kernel tests. Each test has a stable ID (suite prefix and number,
 * e.g. MM0003) and a one-line description, and lives in a linker section
 * sorted by suite and ID, so the registry needs no list to maintain:
 *
 *	KTEST(MM0001, mm, "frames are page-aligned and distinct")
 *	{
 *		KEXPECT(a != b, "got %#llx twice", a);
 *	}
 *
 * `test=all` or `test=mm,trap` runs suites and prints KTAP version 1 (the
 * format of Linux KUnit): one subtest per suite, one line per test.
 */
#ifndef TESTS_KTEST_H
#define TESTS_KTEST_H

#include "lib/cmdline.h"
#include "lib/types.h"

#define KTEST_MAX_SUITES OPTION_LIST_MAX /* test= names them in one list */

struct ktest_context {
	const char *id;
	bool failed;
	bool skipped;
	const char *skip_reason;
};

struct ktest {
	const char *id;
	const char *suite;
	const char *description;
	void (*run)(struct ktest_context *t);
};

#define KTEST(test_id, suite_name, desc)                             \
	static void ktest_run_##test_id(struct ktest_context *t);    \
	static const struct ktest ktest_##test_id __used __section(  \
		".ktest." #suite_name "." #test_id) __aligned(8) = { \
		#test_id, #suite_name, desc, ktest_run_##test_id};   \
	static void ktest_run_##test_id(struct ktest_context *t)

/*
 * Checks cond; on failure prints a KTAP diagnostic with the condition, the
 * place and the message, and marks the test failed. Evaluates to cond, so a
 * test can stop: `if (!KEXPECT(p, "no memory")) return;`.
 */
#define KEXPECT(cond, fmt, ...) \
	ktest_check(t, !!(cond), #cond, __FILE__, __LINE__, fmt, ##__VA_ARGS__)

bool ktest_check(struct ktest_context *t, bool ok, const char *cond,
		 const char *file, int line, const char *fmt, ...)
	__printf(6, 7);

/* Marks the test skipped (KTAP "# SKIP reason"); the test should return. */
void ktest_skip(struct ktest_context *t, const char *reason);

/* Prints a KTAP diagnostic line ("# ...") inside the current test. */
void ktest_note(const char *fmt, ...) __printf(1, 2);

/* test= was given: the tests are the job (tests/ktest.c declares it). */
bool ktest_requested(void);

/* test_seed=: 0, or the seed tests draw their choices from. */
uint64_t ktest_seed(void);

/* Runs the suites test= names; returns true if none failed. */
bool ktest_run_requested(void);

#endif
