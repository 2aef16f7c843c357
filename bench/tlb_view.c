// SPDX-License-Identifier: MIT
#include "bench/tlb_view.h"
#include "lib/format.h"
#include "console/kprintf.h"
#include "lib/string.h"
#include "mm/tlb_options.h"

/* Every TLB option with its longest value. */
#define BENCH_POLICY_LINE 320

void bench_counters_read(struct bench_counters *out)
{
	tlb_stats_sum(&out->tlb);
	ipc_path_stats_read(&out->ipc);
}

void bench_counters_sub(struct bench_counters *a,
			const struct bench_counters *b)
{
	struct tlb_stats before = b->tlb;

	for (size_t i = 0; i < TLB_STATS_COUNT; i++)
		*tlb_stats_field(&a->tlb, i) -= *tlb_stats_field(&before, i);
	a->ipc.fast -= b->ipc.fast;
	a->ipc.direct -= b->ipc.direct;
	a->ipc.resumed -= b->ipc.resumed;
	for (int why = 0; why < IPC_DECLINE_COUNT; why++)
		a->ipc.declined[why] -= b->ipc.declined[why];
}

/* Appends name=value to buf (size bytes, used so far) when value moved,
 * or always. */
static size_t append_if(bool always, char *buf, size_t size, size_t used,
			const char *prefix, const char *name, uint64_t value)
{
	if ((!value && !always) || used >= size)
		return used;
	return used + (size_t)ksnprintf(buf + used, size - used, "%s%s%s=%llu",
					used ? "," : "", prefix, name,
					(unsigned long long)value);
}

static size_t append(char *buf, size_t size, size_t used, const char *prefix,
		     const char *name, uint64_t value)
{
	return append_if(false, buf, size, used, prefix, name, value);
}

static bool is_wasted_ipi_counter(size_t i)
{
	struct tlb_stats probe = {0};

	return tlb_stats_field(&probe, i) == &probe.ipis_not_loaded ||
	       tlb_stats_field(&probe, i) == &probe.ipis_covered;
}

void bench_counters_format(const struct bench_counters *c, bool wasted_ipis,
			   char *buf, size_t size)
{
	struct tlb_stats s = c->tlb;
	size_t used = 0;

	strlcpy(buf, "-", size);
	for (size_t i = 0; i < TLB_STATS_COUNT; i++)
		used = append_if(wasted_ipis && is_wasted_ipi_counter(i), buf,
				 size, used, "", tlb_stats_name(i),
				 *tlb_stats_field(&s, i));
	/* The IPC rows say which path their halves took (docs/user.md). */
	used = append(buf, size, used, "ipc-", "fast", c->ipc.fast);
	used = append(buf, size, used, "ipc-", "direct", c->ipc.direct);
	used = append(buf, size, used, "ipc-", "resumed", c->ipc.resumed);
	for (int why = IPC_DECLINE_OFF; why < IPC_DECLINE_COUNT; why++)
		used = append(buf, size, used, "ipc-slow-",
			      ipc_decline_names[why], c->ipc.declined[why]);
}

void bench_policy_report(void)
{
	char line[BENCH_POLICY_LINE];

	kprintf("bench: tlb %s\n",
		tlb_policy_format(&tlb_policy, line, sizeof(line)));
}
