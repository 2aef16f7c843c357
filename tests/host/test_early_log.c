// SPDX-License-Identifier: MIT
/*
 * console/early_log.c: the ring that keeps the screen's lines until it
 * draws. What it hands back is collected into one string and compared with
 * what went in: whole when it fits, the newest whole lines after a
 * "... N bytes lost" line when it does not.
 */
#include "console/early_log.h"
#include "tests/host/host_test.h"

#define OUT_MAX (2 * EARLY_LOG_BYTES)

static char out[OUT_MAX + 1];
static size_t out_used;
static struct early_log log_under_test;

static void collect(const char *s, size_t n)
{
	if (out_used + n > OUT_MAX)
		n = OUT_MAX - out_used;
	memcpy(out + out_used, s, n);
	out_used += n;
	out[out_used] = '\0';
}

static void drain(void)
{
	out_used = 0;
	out[0] = '\0';
	early_log_drain(&log_under_test, collect);
}

/* "line 00042: ....\n", 64 bytes, into buf; returns its length. */
static size_t numbered_line(char *buf, unsigned number)
{
	return (size_t)snprintf(buf, 65, "line %05u: %-51s\n", number,
				"the census, the options, the memory map");
}

HOST_TEST(fitting_text_comes_back_whole)
{
	early_log_keep(&log_under_test, "cpu: census\n", 12);
	early_log_keep(&log_under_test, "memory map\n", 11);
	drain();
	CHECK_STR(out, "cpu: census\nmemory map\n");
	drain();
	CHECK_STR(out, "");
}

HOST_TEST(a_full_log_comes_back_whole)
{
	char line[65];
	unsigned lines = EARLY_LOG_BYTES / 64;

	for (unsigned i = 0; i < lines; i++)
		early_log_keep(&log_under_test, line, numbered_line(line, i));
	drain();
	CHECK_EQ(out_used, EARLY_LOG_BYTES);
	numbered_line(line, 0);
	CHECK(!strncmp(out, line, 64), "starts %s", host_quote_n(out, 64));
}

HOST_TEST(overflow_keeps_the_newest_whole_lines)
{
	char line[65], expected[80];
	unsigned lines = EARLY_LOG_BYTES / 64 + 10;
	size_t total = 0;

	/* A line without its end first, as a boot's first bytes may be. */
	early_log_keep(&log_under_test, "partial", 7);
	total += 7;
	for (unsigned i = 0; i < lines; i++) {
		size_t n = numbered_line(line, i);

		early_log_keep(&log_under_test, line, n);
		total += n;
	}
	drain();
	/* The ring holds the last 16384 bytes, from the start of line 10;
	 * the newline before it is gone, so the log cannot tell that a line
	 * starts there: line 11 is the first whole one it gives back. */
	snprintf(expected, sizeof(expected), "... %zu bytes lost\n",
		 total - (size_t)(lines - 11) * 64);
	CHECK(!strncmp(out, expected, strlen(expected)), "starts %s",
	      host_quote_n(out, 80));
	numbered_line(line, 11);
	CHECK(!strncmp(out + strlen(expected), line, 64), "first kept line %s",
	      host_quote_n(out + strlen(expected), 64));
	numbered_line(line, lines - 1);
	CHECK(out_used >= 64 && !strcmp(out + out_used - 64, line),
	      "last line %s", host_quote_n(out + out_used - 64, 64));
	CHECK_EQ(out_used, strlen(expected) + (size_t)(lines - 11) * 64);
}

HOST_TEST(clear_empties)
{
	early_log_keep(&log_under_test, "gone\n", 5);
	early_log_clear(&log_under_test);
	drain();
	CHECK_STR(out, "");
}
