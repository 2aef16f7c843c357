// SPDX-License-Identifier: MIT
/* kprintf's formatter, built for the kernel (host tests cover it in depth). */
#include "tests/ktest.h"
#include "lib/format.h"
#include "lib/string.h"

static bool formats(struct ktest_context *t, const char *expect,
		    const char *fmt, ...) __printf(3, 4);

static bool formats(struct ktest_context *t, const char *expect,
		    const char *fmt, ...)
{
	char buf[64];
	va_list ap;

	va_start(ap, fmt);
	kvsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return KEXPECT(!strcmp(buf, expect), "'%s' gave '%s', want '%s'", fmt,
		       buf, expect);
}

KTEST(FMT0001, format, "integers, strings and padding format as in C")
{
	formats(t, "42 -7 ff 0X1F 0x1f", "%d %i %x %#X %#x", 42, -7, 255u, 31u,
		31u);
	formats(t, "[  ab][ab  ][00ab]", "[%4s][%-4s][%04x]", "ab", "ab",
		0xabu);
	formats(t, "18446744073709551615", "%llu", ~0ULL);
	formats(t, "-9223372036854775808", "%lld",
		(long long)(-9223372036854775807LL - 1));
	/* volatile: the compiler would warn about a literal NULL for %s. */
	const char *volatile none = NULL;

	formats(t, "(null) %", "%s %%", none);
}

KTEST(FMT0002, format, "output is truncated and terminated, length reported")
{
	char buf[8];
	int n = ksnprintf(buf, sizeof(buf), "%s", "0123456789");

	KEXPECT(n == 10, "returned %d", n);
	KEXPECT(!strcmp(buf, "0123456"), "buffer holds '%s'", buf);
}
