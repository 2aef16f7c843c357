// SPDX-License-Identifier: MIT
#include "bench/tlb_view.h"
#include "lib/format.h"
#include "kernel/kprintf.h"
#include "lib/string.h"
#include "mm/tlb_options.h"

/* Every TLB option with its longest value. */
#define BENCH_POLICY_LINE 320

void bench_counters_read(struct bench_counters *out)
{
	tlb_stats_sum(&out->tlb);
}

void bench_counters_sub(struct bench_counters *a,
			const struct bench_counters *b)
{
	struct tlb_stats before = b->tlb;

	for (size_t i = 0; i < TLB_STATS_COUNT; i++)
		*tlb_stats_field(&a->tlb, i) -= *tlb_stats_field(&before, i);
}

void bench_counters_format(const struct bench_counters *c, char *buf,
			   size_t size)
{
	struct tlb_stats s = c->tlb;
	size_t used = 0;

	strlcpy(buf, "-", size);
	for (size_t i = 0; i < TLB_STATS_COUNT; i++) {
		uint64_t value = *tlb_stats_field(&s, i);

		if (!value || used >= size)
			continue;
		used += (size_t)ksnprintf(buf + used, size - used, "%s%s=%llu",
					  used ? "," : "", tlb_stats_name(i),
					  (unsigned long long)value);
	}
}

void bench_policy_report(void)
{
	char line[BENCH_POLICY_LINE];

	kprintf("bench: tlb %s\n",
		tlb_policy_format(&tlb_policy, line, sizeof(line)));
}
