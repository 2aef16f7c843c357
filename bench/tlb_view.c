// SPDX-License-Identifier: MIT
#include "bench/tlb_view.h"
#include "kernel/format.h"
#include "kernel/kprintf.h"
#include "kernel/string.h"

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
	const struct tlb_policy *p = &tlb_policy;

	kprintf("bench: tlb pcid=%s invpcid=%s asid_slots=%u lazy=%s "
		"lazy_backoff=%u flush_ceiling=%u flush_info=%s "
		"flush_concurrent=%s kernel_mm_mask=%s lazy_mm=%s tlb_bug=%s\n",
		p->pcid ? "on" : "off", p->invpcid ? "on" : "off",
		p->asid_slots, tlb_lazy_names[p->lazy], p->lazy_backoff,
		p->flush_ceiling, p->flush_info_on_stack ? "stack" : "percpu",
		p->flush_concurrent ? "on" : "off",
		p->kernel_mm_mask_touch ? "touch" : "skip",
		p->lazy_mm == TLB_LAZY_MM_REFCOUNT ? "refcount" : "shootdown",
		tlb_bug_names[p->bug]);
}
