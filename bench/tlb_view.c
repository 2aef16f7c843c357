// SPDX-License-Identifier: MIT
#include "bench/tlb_view.h"
#include "kernel/format.h"
#include "kernel/kprintf.h"
#include "kernel/string.h"

/* The counters by name: the column names of tlb_stats_print. */
static const struct {
	const char *name;
	size_t offset;
} counters[] = {
	{"ipi-sent", offsetof(struct tlb_stats, ipis_sent)},
	{"ipi-recv", offsetof(struct tlb_stats, ipis_received)},
	{"full", offsetof(struct tlb_stats, flush_full)},
	{"partial", offsetof(struct tlb_stats, flush_partial)},
	{"pages", offsetof(struct tlb_stats, flush_pages)},
	{"kernel", offsetof(struct tlb_stats, flush_kernel)},
	{"current", offsetof(struct tlb_stats, flush_up_to_date)},
	{"asid-hit", offsetof(struct tlb_stats, asid_hits)},
	{"asid-miss", offsetof(struct tlb_stats, asid_misses)},
	{"lazy-skip", offsetof(struct tlb_stats, lazy_skips)},
	{"lazy-leave", offsetof(struct tlb_stats, lazy_leaves)},
	{"catch-up", offsetof(struct tlb_stats, gen_catchups)},
	{"mask-atomic", offsetof(struct tlb_stats, cpumask_atomics)},
	{"cr3-load", offsetof(struct tlb_stats, mm_switches)},
	{"lazy-enter", offsetof(struct tlb_stats, lazy_entries)},
	{"lazy-shoot", offsetof(struct tlb_stats, lazy_shootdowns)},
};

_Static_assert(sizeof(struct tlb_stats) ==
		       ARRAY_SIZE(counters) * sizeof(uint64_t),
	       "every TLB counter has a name here");

static uint64_t *field(struct tlb_stats *s, size_t i)
{
	return (uint64_t *)((char *)s + counters[i].offset);
}

void bench_counters_read(struct bench_counters *out)
{
	tlb_stats_sum(&out->tlb);
}

void bench_counters_sub(struct bench_counters *a,
			const struct bench_counters *b)
{
	struct tlb_stats before = b->tlb;

	for (size_t i = 0; i < ARRAY_SIZE(counters); i++)
		*field(&a->tlb, i) -= *field(&before, i);
}

void bench_counters_format(const struct bench_counters *c, char *buf,
			   size_t size)
{
	struct tlb_stats s = c->tlb;
	size_t used = 0;

	strlcpy(buf, "-", size);
	for (size_t i = 0; i < ARRAY_SIZE(counters); i++) {
		uint64_t value = *field(&s, i);

		if (!value || used >= size)
			continue;
		used += (size_t)ksnprintf(buf + used, size - used, "%s%s=%llu",
					  used ? "," : "", counters[i].name,
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
