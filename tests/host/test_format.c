// SPDX-License-Identifier: MIT
/*
 * lib/format.c against the C library: every case is formatted by both
 * kvsnprintf and vsnprintf and must give the same text and length, and
 * many are also formatted into exactly-sized heap buffers of every size
 * from 0 to past the full length (ASan sees any write past the end).
 *
 * Where C leaves the result undefined, the cases are not compared: '#'
 * with d i u, '0' with s c p, precision with c p, '+' and ' ' with p
 * (glibc prints "+0x1"), NULL for %s, unknown conversions. The kernel's own
 * choices for some of those are pinned down in kernel_only below; notably
 * NULL %p prints 0x0 where glibc prints (nil).
 */
#include "lib/format.h"
#include "tests/host/host_test.h"

#include <limits.h>
#include <stddef.h>

#define OUT_MAX 256

static unsigned long compared;

/*
 * Formats fmt with both implementations and compares; with truncation,
 * also formats into buffers of every size 0..len+2.
 */
static bool compare_v(const char *file, int line, bool truncation,
		      const char *fmt, va_list ap)
{
	char want[OUT_MAX], got[OUT_MAX];
	va_list a;
	int nw, ng;

	va_copy(a, ap);
	nw = vsnprintf(want, sizeof(want), fmt, a);
	va_end(a);
	if (!host_check(nw >= 0 && nw < OUT_MAX, "reference", file, line,
			"%s: snprintf returned %d (test too big?)",
			host_quote(fmt), nw))
		return false;
	va_copy(a, ap);
	ng = kvsnprintf(got, sizeof(got), fmt, a);
	va_end(a);
	compared++;
	if (!host_check(ng == nw && !memcmp(got, want, (size_t)nw + 1),
			"same output", file, line,
			"%s: got %s (%d), C library %s (%d)", host_quote(fmt),
			host_quote_n(got, (size_t)ng), ng,
			host_quote_n(want, (size_t)nw), nw))
		return false;
	if (!truncation)
		return true;

	for (size_t size = 0; size <= (size_t)nw + 2; size++) {
		/* Exactly size bytes, or none at all for size 0. */
		char *buf = size ? malloc(size) : NULL;
		size_t keep = size ? MIN(size - 1, (size_t)nw) : 0;
		bool ok = true;
		int n;

		if (size)
			memset(buf, '~', size);
		va_copy(a, ap);
		n = kvsnprintf(buf, size, fmt, a);
		va_end(a);
		if (size) {
			ok = !memcmp(buf, want, keep) && buf[keep] == '\0';
			for (size_t i = keep + 1; i < size; i++)
				ok &= buf[i] == '~';
		}
		host_check(n == nw && ok, "truncated", file, line,
			   "%s in %zu bytes: returned %d (want %d), buffer %s",
			   host_quote(fmt), size, n, nw,
			   size ? host_quote_n(buf, size) : "NULL");
		free(buf);
		if (n != nw || !ok)
			return false;
	}
	return true;
}

static __attribute__((format(printf, 4, 5))) bool
compare(const char *file, int line, bool truncation, const char *fmt, ...)
{
	va_list ap;
	bool ok;

	va_start(ap, fmt);
	ok = compare_v(file, line, truncation, fmt, ap);
	va_end(ap);
	return ok;
}

/* Same text as the C library, also at every buffer size. */
#define SAME(fmt, ...) compare(__FILE__, __LINE__, true, fmt, ##__VA_ARGS__)

/*
 * The same for formats -Wformat rejects although C defines them: flags that
 * another flag or a precision overrides, an empty format, int arguments for
 * hh and h (which convert them). Takes at least one argument, as clang's
 * -Wformat-security wants for a format that is not a literal.
 */
#define SAME_NOWARN(fmt, ...)                                           \
	do {                                                            \
		const char *volatile fmt_ = (fmt);                      \
		compare(__FILE__, __LINE__, true, fmt_, ##__VA_ARGS__); \
	} while (0)

/* The kernel's result where C has none (or a different one). */
#define KERNEL_GIVES(want, fmt, ...) \
	kernel_gives(__FILE__, __LINE__, want, fmt, ##__VA_ARGS__)

static __attribute__((format(printf, 4, 5))) void
kernel_gives(const char *file, int line, const char *want, const char *fmt, ...)
{
	char got[OUT_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kvsnprintf(got, sizeof(got), fmt, ap);
	va_end(ap);
	host_check(n == (int)strlen(want) && !strcmp(got, want), "kernel", file,
		   line, "%s: got %s (%d), want %s", host_quote(fmt),
		   host_quote(got), n, host_quote(want));
}

HOST_TEST(plain_text)
{
	SAME_NOWARN("", 0);
	SAME("hello, world");
	SAME("tab\there\nnewline");
	SAME("%%");
	SAME("100%% sure %%%d%%", 5);
	SAME("%d", 0);
	SAME("[%d] [%i] [%u] [%x] [%X] [%o]", 42, -42, 42u, 0xbeefu, 0xbeefu,
	     0755u);
}

HOST_TEST(integer_limits)
{
	SAME("%d %d %d", INT_MIN, INT_MAX, -1);
	SAME("%u %x %o", UINT_MAX, UINT_MAX, UINT_MAX);
	SAME("%lld", (long long)INT64_MIN);
	SAME("%lli", (long long)INT64_MIN);
	SAME("%+lld|%25lld|%-25lld|%025lld|%.22lld", (long long)INT64_MIN,
	     (long long)INT64_MIN, (long long)INT64_MIN, (long long)INT64_MIN,
	     (long long)INT64_MIN);
	SAME("%lld %llu %llx %llo", (long long)INT64_MAX,
	     (unsigned long long)-1, (unsigned long long)INT64_MIN,
	     (unsigned long long)-1);
	SAME("%ld %lu %lx", LONG_MIN, ULONG_MAX, ULONG_MAX);
	SAME("%hd %hu %hx", (short)SHRT_MIN, (unsigned short)USHRT_MAX,
	     (unsigned short)USHRT_MAX);
	SAME("%hhd %hhu %hhx", (signed char)SCHAR_MIN, (unsigned char)UCHAR_MAX,
	     (unsigned char)UCHAR_MAX);
	SAME("%zd %zu %zx", (ptrdiff_t)PTRDIFF_MIN, (size_t)SIZE_MAX,
	     (size_t)SIZE_MAX);
	SAME("%td %tu %tx", (ptrdiff_t)PTRDIFF_MIN, (size_t)PTRDIFF_MAX,
	     (size_t)-1);
}

HOST_TEST(length_modifiers_convert)
{
	/* The argument is an int; hh and h convert it to char and short. */
	SAME_NOWARN("%hhd %hhd %hhu %hhx", 200, -129, 300u, 0x1234u);
	SAME_NOWARN("%hd %hd %hu %ho", 70000, -32769, 70000u, 0x12345u);
	/* Each conversion takes an argument of its own size. */
	SAME("%hhd %hd %d %ld %lld %zd %td %s", (signed char)-1, (short)-2, -3,
	     -4L, -5LL, (ptrdiff_t)-6, (ptrdiff_t)-7, "end");
	SAME("%llx %x %llx", 0x1122334455667788ULL, 0x99u,
	     0xaabbccddeeff0011ULL);
}

HOST_TEST(zero_with_precision_zero)
{
	SAME("[%.0d] [%.d] [%.0i] [%.0u] [%.0x] [%.0X] [%.0o]", 0, 0, 0, 0u, 0u,
	     0u, 0u);
	SAME_NOWARN("[%5.0d] [%-5.0u] [%+.0d] [% .0d] [%05.0d]", 0, 0u, 0, 0,
		    0);
	SAME("[%#.0x] [%#.0o] [%#5.0o] [%#x] [%#o] [%#.3x]", 0u, 0u, 0u, 0u, 0u,
	     0u);
	SAME("[%.0d] [%.0x]", 1, 1u);
}

HOST_TEST(flags_and_widths)
{
	SAME_NOWARN("[%5d] [%-5d] [%05d] [%-05d] [%+d] [% d] [%+ d] [% +d]", 42,
		    42, 42, 42, 42, 42, 42, 42);
	SAME("[%5d] [%-5d] [%05d] [%+05d] [% 05d]", -42, -42, -42, 42, 42);
	SAME("[%#x] [%#X] [%#o] [%#08x] [%#-8x] [%#8o] [%#08o]", 0xabu, 0xabu,
	     8u, 0xabu, 0xabu, 8u, 8u);
	SAME("[%#.5o] [%#.3o] [%#.2o] [%#.1o] [%#5.3o]", 8u, 8u, 8u, 8u, 8u);
	SAME_NOWARN("[%08.3d] [%-8.3d] [%.5d] [%8.5x] [%-+8.3d]", -5, 5, -5,
		    0xau, 5);
	SAME("[%1d] [%2d] [%1s]", 12345, -12345, "long");
	SAME("[%30d] [%-30u]", INT_MIN, UINT_MAX);
}

HOST_TEST(star_width_precision)
{
	SAME("[%*d] [%*d] [%-*d]", 6, 42, -6, 42, -6, 42);
	SAME("[%.*d] [%.*d] [%.*d]", 4, 42, 0, 0, -1, 0);
	SAME("[%*.*d] [%*.*x] [%-*.*o]", 8, 4, -42, -8, 3, 0xfu, 7, 5, 8u);
	SAME("[%0*d] [%0*d]", 6, -42, -6, -42);
	SAME("[%*s] [%-*s] [%.*s] [%*.*s]", 6, "ab", 6, "ab", 3, "abcdef", 5, 1,
	     "xyz");
	SAME("[%*c] [%*c]", 4, 'q', -4, 'q');
	SAME("%*d%*d%*d", 1, 1, 2, 2, 3, 3);
}

HOST_TEST(strings)
{
	SAME("[%s] [%s]", "", "hello");
	SAME("[%10s] [%-10s] [%.3s] [%10.3s] [%-10.3s] [%.0s] [%.10s]", "hello",
	     "hello", "hello", "hello", "hello", "hello", "hi");
	SAME("%s%s%s", "a", "", "c");
	/* Precision: may read no further than that many bytes. */
	static const char unterminated[3] = {'a', 'b', 'c'};

	SAME("[%.3s] [%.2s]", unterminated, unterminated);
}

HOST_TEST(characters)
{
	SAME("[%c] [%3c] [%-3c] [%c%c%c]", 'a', 'b', 'c', 'x', 'y', 'z');
	SAME("[%c] [%c] [%c]", 0x7f, 0xff, 0x141);
	/* A NUL character is output like any other. */
	SAME("[%c]", 0);
	SAME("[%3c] [%-3c]", 0, 0);
	SAME("%c", 0);
}

HOST_TEST(pointers)
{
	int object;
	void *p = &object;

	SAME("%p", p);
	SAME("[%p] [%30p] [%-30p]", (void *)0x1234, (void *)0x1234,
	     (void *)0x1234);
	SAME("[%p] [%p]", (void *)UINTPTR_MAX, (void *)1);
	SAME("[%2p]", (void *)0xabcdef);
	/* glibc: (nil); the kernel keeps the 0x form. */
	KERNEL_GIVES("0x0", "%p", NULL);
	KERNEL_GIVES("[  0x0] [0x0  ]", "[%5p] [%-5p]", NULL, NULL);
}

/*
 * Our own answers where the C standard has none: these are what kprintf
 * users see and should not change by accident.
 */
HOST_TEST(kernel_only)
{
	/* volatile: GCC rejects a literal NULL for %s. */
	const char *volatile none = NULL;
	/* Non-literal formats: GCC would warn about these at compile time. */
	const char *volatile unknown = "%q|%k";
	const char *volatile trailing = "abc%";
	const char *volatile plus_p = "%+p % p";

	KERNEL_GIVES("(null)", "%s", none);
	KERNEL_GIVES("[    (null)]", "[%10s]", none);
	KERNEL_GIVES("(nu", "%.3s", none);
	KERNEL_GIVES("%q|%k", unknown, 1, 2);
	KERNEL_GIVES("abc%", trailing, 0);
	KERNEL_GIVES("0x1 0x1", plus_p, (void *)1, (void *)1);
}

/* format_to hands every character to the sink, in order, and counts them. */
struct collect {
	char buf[OUT_MAX];
	size_t n;
	int calls;
};

static void collect_sink(char c, void *ctx)
{
	struct collect *col = ctx;

	if (col->n < sizeof(col->buf))
		col->buf[col->n++] = c;
	col->calls++;
}

static __attribute__((format(printf, 2, 3))) int
format_collect(struct collect *col, const char *fmt, ...)
{
	va_list ap;
	int n;

	memset(col, 0, sizeof(*col));
	va_start(ap, fmt);
	n = format_to(collect_sink, col, fmt, ap);
	va_end(ap);
	return n;
}

HOST_TEST(format_to_sink)
{
	struct collect col;
	int n = format_collect(&col, "%s=%-4d|%c%c", "x", -7, 0, 'z');

	/* x = - 7 sp sp | NUL z */
	CHECK_EQ(n, 9);
	CHECK_EQ(col.calls, 9);
	CHECK(col.n == 9 && !memcmp(col.buf, "x=-7  |\0z", 9), "sink saw %s",
	      host_quote_n(col.buf, col.n));
	n = format_collect(&col, "%s", "");
	CHECK_EQ(n, 0);
	CHECK_EQ(col.calls, 0);
}

HOST_TEST(size_zero_and_null_buffer)
{
	char byte = '~';
	int n;

	n = ksnprintf(NULL, 0, "%d-%s", 12345, "abc");
	CHECK_EQ(n, 9);
	n = ksnprintf(&byte, 0, "%d", 7);
	CHECK_EQ(n, 1);
	CHECK(byte == '~', "size 0 wrote %#x", byte);
	n = ksnprintf(&byte, 1, "%d", 7);
	CHECK_EQ(n, 1);
	CHECK(byte == '\0', "size 1 left %#x", byte);
}

/*
 * The table: every numeric conversion with every length modifier, every
 * combination of the five flags (plus a few orders and repeats), widths and
 * precisions (numbers, '*', negative '*') and values around every limit,
 * compared with the C library; one case in TRUNCATE_EVERY also at every
 * buffer size.
 */
#define TRUNCATE_EVERY 61

static const uint64_t table_values[] = {
	0,
	1,
	7,
	8,
	10,
	42,
	0x7f,
	0x80,
	0xff,
	0x100,
	0x7fff,
	0x8000,
	0xffff,
	0x10000,
	0x7fffffff,
	0x80000000,
	0xffffffff,
	0x100000000ULL,
	0x123456789abcdefULL,
	0x7fffffffffffffffULL,
	0x8000000000000000ULL,
	0xfffffffffffffffeULL,
	0xffffffffffffffffULL,
	(uint64_t)-42,
};

enum arg_kind {
	ARG_INT,
	ARG_LONG,
	ARG_LLONG,
	ARG_SIZE,
	ARG_PTRDIFF,
	ARG_STRING,  /* value is the pointer */
	ARG_POINTER, /* value is the address */
};

static const struct {
	const char *text;
	enum arg_kind kind;
} table_lengths[] = {
	{"", ARG_INT},	   {"hh", ARG_INT}, {"h", ARG_INT},	{"l", ARG_LONG},
	{"ll", ARG_LLONG}, {"z", ARG_SIZE}, {"t", ARG_PTRDIFF},
};

/* A width or precision, and the '*' argument it takes (if star). */
struct field {
	const char *text;
	bool star;
	int arg;
};

static const struct field table_widths[] = {
	{"", false, 0},	  {"1", false, 0}, {"7", false, 0},
	{"24", false, 0}, {"*", true, 9},  {"*", true, -9},
};

static const struct field table_precisions[] = {
	{"", false, 0},	  {".", false, 0},  {".0", false, 0},
	{".1", false, 0}, {".3", false, 0}, {".21", false, 0},
	{".*", true, 5},  {".*", true, -1}, {".*", true, 0},
};

static const char *const extra_flags[] = {"0-",	   " +", "#0",
					  "-#0+ ", "00", "--"};

struct table_case {
	char fmt[40];
	const struct field *width, *precision;
	enum arg_kind kind;
	bool is_signed;
	bool truncation;
};

/* The same arguments for both implementations, typed by length modifier. */
#define CALL_WITH(T, value)                                              \
	do {                                                             \
		T v_ = (T)(value);                                       \
		if (tc->width->star && tc->precision->star)              \
			ok = compare(__FILE__, __LINE__, tc->truncation, \
				     tc->fmt, tc->width->arg,            \
				     tc->precision->arg, v_);            \
		else if (tc->width->star)                                \
			ok = compare(__FILE__, __LINE__, tc->truncation, \
				     tc->fmt, tc->width->arg, v_);       \
		else if (tc->precision->star)                            \
			ok = compare(__FILE__, __LINE__, tc->truncation, \
				     tc->fmt, tc->precision->arg, v_);   \
		else                                                     \
			ok = compare(__FILE__, __LINE__, tc->truncation, \
				     tc->fmt, v_);                       \
	} while (0)

static bool table_one(const struct table_case *tc, uint64_t value)
{
	bool ok = false;

	switch (tc->kind) {
	case ARG_INT:
		if (tc->is_signed)
			CALL_WITH(int, value);
		else
			CALL_WITH(unsigned int, value);
		break;
	case ARG_LONG:
		if (tc->is_signed)
			CALL_WITH(long, value);
		else
			CALL_WITH(unsigned long, value);
		break;
	case ARG_LLONG:
		if (tc->is_signed)
			CALL_WITH(long long, value);
		else
			CALL_WITH(unsigned long long, value);
		break;
	case ARG_SIZE:
		if (tc->is_signed)
			CALL_WITH(ptrdiff_t, value);
		else
			CALL_WITH(size_t, value);
		break;
	case ARG_PTRDIFF:
		if (tc->is_signed)
			CALL_WITH(ptrdiff_t, value);
		else
			CALL_WITH(size_t, value);
		break;
	case ARG_STRING:
		CALL_WITH(const char *, (uintptr_t)value);
		break;
	case ARG_POINTER:
		CALL_WITH(void *, (uintptr_t)value);
		break;
	}
	return ok;
}

HOST_TEST(table_integers)
{
	static const char conversions[] = "diuxXo";
	unsigned long n = 0, before = compared;
	unsigned long failed = 0;

	for (const char *conv = conversions; *conv; conv++) {
		bool is_signed = *conv == 'd' || *conv == 'i';

		for (size_t fl = 0; fl < 32 + ARRAY_SIZE(extra_flags); fl++) {
			char flags[8] = "";
			size_t used = 0;

			if (fl < 32) {
				for (int b = 0; b < 5; b++) {
					if (fl & (1u << b))
						flags[used++] = "-0+ #"[b];
				}
			} else {
				strcpy(flags, extra_flags[fl - 32]);
			}
			/* '#' with d i u is undefined in C. */
			if (strchr(flags, '#') && (is_signed || *conv == 'u'))
				continue;
			for (size_t l = 0; l < ARRAY_SIZE(table_lengths); l++) {
				for (size_t w = 0; w < ARRAY_SIZE(table_widths);
				     w++) {
					for (size_t p = 0;
					     p < ARRAY_SIZE(table_precisions);
					     p++) {
						struct table_case tc = {
							.width = &table_widths
									 [w],
							.precision =
								&table_precisions
									[p],
							.kind = table_lengths[l]
									.kind,
							.is_signed = is_signed,
						};

						snprintf(tc.fmt, sizeof(tc.fmt),
							 "[%%%s%s%s%s%c]",
							 flags,
							 table_widths[w].text,
							 table_precisions[p]
								 .text,
							 table_lengths[l].text,
							 *conv);
						for (size_t v = 0;
						     v <
						     ARRAY_SIZE(table_values);
						     v++) {
							tc.truncation =
								++n % TRUNCATE_EVERY ==
								0;
							failed += !table_one(
								&tc,
								table_values
									[v]);
						}
					}
				}
			}
		}
	}
	printf("# %lu integer cases compared, %lu differ\n", compared - before,
	       failed);
}

HOST_TEST(table_strings_chars_pointers)
{
	static const char *const strings[] = {"", "a", "hello",
					      "a longer string of text"};
	static const int chars[] = {'a', 0, 0xff, 0x141, ' '};
	static const uintptr_t pointers[] = {1, 0x1234, 0xffff800000001000,
					     UINTPTR_MAX};
	unsigned long n = 0, before = compared, failed = 0;

	for (int left = 0; left < 2; left++) {
		const char *flags = left ? "-" : "";

		for (size_t w = 0; w < ARRAY_SIZE(table_widths); w++) {
			struct table_case tc = {.width = &table_widths[w],
						.is_signed = true};

			/* %s with every precision. */
			tc.kind = ARG_STRING;
			for (size_t p = 0; p < ARRAY_SIZE(table_precisions);
			     p++) {
				tc.precision = &table_precisions[p];
				snprintf(tc.fmt, sizeof(tc.fmt), "[%%%s%s%ss]",
					 flags, table_widths[w].text,
					 table_precisions[p].text);
				for (size_t s = 0; s < ARRAY_SIZE(strings);
				     s++) {
					tc.truncation = ++n % 7 == 0;
					failed += !table_one(
						&tc, (uintptr_t)strings[s]);
				}
			}
			/* %c and %p: no precision. */
			tc.precision = &table_precisions[0];
			tc.kind = ARG_INT;
			snprintf(tc.fmt, sizeof(tc.fmt), "[%%%s%sc]", flags,
				 table_widths[w].text);
			for (size_t c = 0; c < ARRAY_SIZE(chars); c++) {
				tc.truncation = ++n % 7 == 0;
				failed += !table_one(&tc, (uint64_t)chars[c]);
			}
			tc.kind = ARG_POINTER;
			snprintf(tc.fmt, sizeof(tc.fmt), "[%%%s%sp]", flags,
				 table_widths[w].text);
			for (size_t q = 0; q < ARRAY_SIZE(pointers); q++) {
				tc.truncation = ++n % 7 == 0;
				failed += !table_one(&tc, pointers[q]);
			}
		}
	}
	printf("# %lu string, character and pointer cases compared, "
	       "%lu differ\n",
	       compared - before, failed);
}

/* Every buffer size for a few long outputs. */
HOST_TEST(truncation_long)
{
	SAME("%s|%-20d|%#llx|%c|%%|%20s", "start", INT_MIN,
	     0xfedcba9876543210ULL, 'Z', "end");
	SAME("%0200d", 1);
	SAME("%-200s|", "x");
}
