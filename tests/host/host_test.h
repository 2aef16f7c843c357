/* SPDX-License-Identifier: MIT */
/*
 * A small harness for the host unit tests: each tests/host/test_<name>.c is
 * one program that compiles pure-logic kernel modules against the C library
 * and runs under AddressSanitizer and UBSan (see HOST_TEST_CFLAGS in the
 * Makefile). Output is KTAP version 1, as for the in-kernel tests:
 *
 *	HOST_TEST(parses_flag)
 *	{
 *		CHECK(v.flag, "flag not set by '%s'", line);
 *		CHECK_EQ(problems, 0);
 *	}
 *
 * Tests run in the order they appear in the file; `test_<name> a b` runs
 * only the tests named a and b. A failed CHECK prints a `# file:line:`
 * diagnostic and marks the test `not ok`; the program exits 1 if any test
 * failed. Sanitizer reports abort the program (-fno-sanitize-recover).
 *
 * Include the kernel headers under test before this file: lib/types.h
 * defines some macros the host headers also define (UINT64_MAX, offsetof,
 * va_start...), which is only silent when the system header comes second.
 *
 * Randomised tests draw from host_rand(), seeded with a fixed value unless
 * the environment variable HOST_TEST_SEED is set, so a failure repeats.
 */
#ifndef TESTS_HOST_HOST_TEST_H
#define TESTS_HOST_HOST_TEST_H

#ifndef LIB_TYPES_H
#error "include the kernel headers under test before tests/host/host_test.h"
#endif

#include "lib/lab.h"
#include "lib/random.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOST_TEST_MAX	    128 /* tests per program */
#define HOST_TEST_MAX_SHOWN 12	/* failure messages printed per test */

#define __host_unused __attribute__((unused))

struct host_test {
	const char *name;
	void (*run)(void);
	int line; /* tests run in source order */
};

static struct host_test host_tests[HOST_TEST_MAX];
static size_t host_test_count;
static unsigned long host_test_failures; /* in the running test */

static __host_unused void host_test_register(const char *name,
					     void (*run)(void), int line)
{
	if (host_test_count == HOST_TEST_MAX) {
		fprintf(stderr, "host_test: more than %d tests\n",
			HOST_TEST_MAX);
		abort();
	}
	host_tests[host_test_count++] = (struct host_test){name, run, line};
}

/* Defines test `name` and registers it before main runs. */
#define HOST_TEST(name)                                                     \
	static void host_test_##name(void);                                 \
	__attribute__((constructor)) static void host_test_reg_##name(void) \
	{                                                                   \
		host_test_register(#name, host_test_##name, __LINE__);      \
	}                                                                   \
	static void host_test_##name(void)

static __host_unused __attribute__((format(printf, 5, 6))) bool
host_check(bool ok, const char *cond, const char *file, int line,
	   const char *fmt, ...)
{
	va_list ap;

	if (ok)
		return true;
	if (++host_test_failures <= HOST_TEST_MAX_SHOWN) {
		printf("# %s:%d: CHECK(%s) failed: ", file, line, cond);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		putchar('\n');
	}
	return false;
}

/*
 * Checks cond; on failure prints the place, the condition and the message.
 * Evaluates to cond, so a test can stop early:
 *	if (!CHECK(p, "no buffer")) return;
 */
#define CHECK(cond, fmt, ...) \
	host_check(!!(cond), #cond, __FILE__, __LINE__, fmt, ##__VA_ARGS__)

/* Integers of any type, compared (and printed) as 64-bit values. */
#define CHECK_EQ(a, b)                                                      \
	host_check_eq((unsigned long long)(a), (unsigned long long)(b), #a, \
		      #b, __FILE__, __LINE__)

static __host_unused bool host_check_eq(unsigned long long a,
					unsigned long long b, const char *sa,
					const char *sb, const char *file,
					int line)
{
	return host_check(a == b, "==", file, line,
			  "%s == %s: %lld (%#llx) != %lld (%#llx)", sa, sb,
			  (long long)a, a, (long long)b, b);
}

/*
 * s (n bytes, or up to the NUL when n is SIZE_MAX) quoted as a C string
 * literal, for messages; the result lasts for the next 7 calls.
 */
static __host_unused const char *host_quote_n(const char *s, size_t n)
{
	static char ring[8][640];
	static unsigned next;
	char *buf = ring[next++ % 8];
	size_t used = 0;

	if (!s)
		return "NULL";
	buf[used++] = '"';
	for (size_t i = 0; i < n && (n != SIZE_MAX || s[i]); i++) {
		unsigned char c = (unsigned char)s[i];

		if (used + 8 >= sizeof(ring[0])) {
			used += (size_t)sprintf(buf + used, "...");
			break;
		}
		if (c == '"' || c == '\\')
			used += (size_t)sprintf(buf + used, "\\%c", c);
		else if (c >= 0x20 && c < 0x7f)
			buf[used++] = (char)c;
		else
			used += (size_t)sprintf(buf + used, "\\x%02x", c);
	}
	buf[used++] = '"';
	buf[used] = '\0';
	return buf;
}

static __host_unused const char *host_quote(const char *s)
{
	return host_quote_n(s, SIZE_MAX);
}

/* Strings (either may be NULL), printed quoted on failure. */
#define CHECK_STR(a, b) host_check_str((a), (b), #a, #b, __FILE__, __LINE__)

static __host_unused bool host_check_str(const char *a, const char *b,
					 const char *sa, const char *sb,
					 const char *file, int line)
{
	bool ok = (!a && !b) || (a && b && !strcmp(a, b));

	return host_check(ok, "==", file, line, "%s == %s: %s != %s", sa, sb,
			  host_quote(a), host_quote(b));
}

/*
 * A lab tree's stub was reached (lib/lab.h): the program under test cannot
 * go on, so say which stub and stop, failing (the plan is left unfinished,
 * which the KTAP reader reports too).
 */
void lab_unwritten(const char *lab, const char *handout, const char *function)
{
	printf("# lab %s: %s() is not written yet (%s)\n", lab, function,
	       handout);
	fflush(stdout);
	exit(1);
}

/* Deterministic pseudo-random numbers (lib/random.h). */
static uint64_t host_rand_state;

static __host_unused void host_rand_seed(uint64_t seed)
{
	const char *env = getenv("HOST_TEST_SEED");

	if (env && *env)
		seed = strtoull(env, NULL, 0);
	printf("# seed %llu\n", (unsigned long long)seed);
	host_rand_state = seed;
}

static __host_unused uint64_t host_rand(void)
{
	return random_next(&host_rand_state);
}

/* Uniform enough in [0, n) for tests; n > 0. */
static __host_unused uint64_t host_rand_below(uint64_t n)
{
	return host_rand() % n;
}

static bool host_test_selected(const char *name, int argc, char **argv)
{
	if (argc < 2)
		return true;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], name))
			return true;
	}
	return false;
}

int main(int argc, char **argv)
{
	size_t selected = 0, number = 0, failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Source order (constructors may run in any order). */
	for (size_t i = 1; i < host_test_count; i++) {
		struct host_test t = host_tests[i];
		size_t j = i;

		while (j && host_tests[j - 1].line > t.line) {
			host_tests[j] = host_tests[j - 1];
			j--;
		}
		host_tests[j] = t;
	}
	for (int i = 1; i < argc; i++) {
		bool known = false;

		for (size_t j = 0; j < host_test_count; j++)
			known |= !strcmp(argv[i], host_tests[j].name);
		if (!known) {
			fprintf(stderr, "%s: no test named %s\n", argv[0],
				argv[i]);
			return 2;
		}
	}
	for (size_t i = 0; i < host_test_count; i++)
		selected += host_test_selected(host_tests[i].name, argc, argv);

	printf("KTAP version 1\n1..%zu\n", selected);
	for (size_t i = 0; i < host_test_count; i++) {
		const struct host_test *t = &host_tests[i];

		if (!host_test_selected(t->name, argc, argv))
			continue;
		host_test_failures = 0;
		t->run();
		if (host_test_failures > HOST_TEST_MAX_SHOWN)
			printf("# ...and %lu more failed checks\n",
			       host_test_failures - HOST_TEST_MAX_SHOWN);
		printf("%sok %zu %s\n", host_test_failures ? "not " : "",
		       ++number, t->name);
		failed += host_test_failures != 0;
	}
	printf("# %zu passed, %zu failed\n", selected - failed, failed);
	return failed ? 1 : 0;
}

/*
 * Messages that a module under test reports through its report callback:
 * pass capture as the callback and &messages as its context. A test reads
 * messages.text[i] for i < messages.count (at most MAX_MESSAGES are kept)
 * and clears them with memset(&messages, 0, sizeof(messages)).
 */
#define MAX_MESSAGES 16

static struct {
	char text[MAX_MESSAGES][512];
	int count;
} messages;

/* Called for every message; a test file may set it to check each one. */
static void (*check_message)(const char *text);

static __host_unused __attribute__((format(printf, 2, 3))) void
capture(void *ctx, const char *fmt, ...)
{
	va_list ap;

	CHECK(ctx == &messages, "report got ctx %p", ctx);
	if (messages.count < MAX_MESSAGES) {
		va_start(ap, fmt);
		vsnprintf(messages.text[messages.count],
			  sizeof(messages.text[0]), fmt, ap);
		va_end(ap);
		if (check_message)
			check_message(messages.text[messages.count]);
	}
	messages.count++;
}

#endif
