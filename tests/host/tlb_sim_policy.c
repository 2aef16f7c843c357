// SPDX-License-Identifier: MIT
/*
 * Policies as the kernel command line spells them ("pcid=off lazy=ipi"),
 * so a policy set reads like a boot line and a lab can try any mix with
 * tlb_sim -p. The words and their parsing are the kernel's own
 * (mm/tlb_options.c, lib/cmdline.c). Words not given keep the kernel's
 * defaults, with PCID, INVPCID and INVLPGB present (the simulated CPU has
 * them all), settled against that CPU as at boot (tlb_policy_settle in
 * mm/tlb.c: INVPCID and INVLPGB only with PCID).
 */
#include "tests/host/tlb_sim.h"
#include "cpu/cpu.h"
#include "mm/tlb_options.h"

#include <stdarg.h>
#include <stdio.h>

struct parse_errors {
	char *buf;
	size_t size;
	int count;
};

/* The parser's complaint; the first one is what the user sees. */
static void report(void *ctx, const char *fmt, ...)
{
	struct parse_errors *e = ctx;
	va_list ap;

	if (e->count++)
		return;
	va_start(ap, fmt);
	vsnprintf(e->buf, e->size, fmt, ap);
	va_end(ap);
}

bool policy_parse(const char *text, struct tlb_policy *p, char *err,
		  size_t size)
{
	struct option_value values[TLB_OPTION_COUNT];
	struct parse_errors errors = {err, size, 0};

	cmdline_parse(text, tlb_option_descs, TLB_OPTION_COUNT, values, report,
		      &errors);
	if (errors.count)
		return false;
	tlb_policy_from_values(p, values);
	*p = tlb_policy_settle(p, &boot_cpu);
	return true;
}
