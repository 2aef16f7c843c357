// SPDX-License-Identifier: MIT
/*
 * The TLB counters (mm/tlb_stats.h): the sums, and the table the tlb_stats
 * option prints.
 */
#include "lib/format.h"
#include "console/kprintf.h"
#include "lib/option.h"
#include "lib/string.h"
#include "mm/tlb.h"
#include "mm/tlb_stats.h"
#include "mm/tlb_hw.h"

static const struct option_desc tlb_stats_desc = {
	.name = "tlb_stats",
	.type = OPTION_FLAG,
	.help = "print the per-CPU TLB counters when the job ends"};
static struct option_value tlb_stats_option;
OPTION(82, tlb_stats, &tlb_stats_desc, &tlb_stats_option, NULL, NULL);

/* One column per counter, in the order of the list. */
static const struct {
	const char *name;
	size_t offset;
} columns[] = {
#define TLB_STATS_COLUMN(field, name, what) \
	{name, offsetof(struct tlb_stats, field)},
	TLB_STATS_LIST(TLB_STATS_COLUMN)
#undef TLB_STATS_COLUMN
};

_Static_assert(TLB_STATS_COUNT == ARRAY_SIZE(columns),
	       "every counter has a column");

const char *tlb_stats_name(size_t i)
{
	return columns[i].name;
}

uint64_t *tlb_stats_field(struct tlb_stats *s, size_t i)
{
	return (uint64_t *)((char *)s + columns[i].offset);
}

static uint64_t counter(const struct tlb_stats *s, size_t i)
{
	return *(const uint64_t *)((const char *)s + columns[i].offset);
}

void tlb_stats_sum(struct tlb_stats *out)
{
	uint64_t *sum = (uint64_t *)out;
	unsigned cpu;

	*out = (struct tlb_stats){0};
	for_each_cpu (cpu, tlb_hw_online()) {
		for (size_t i = 0; i < ARRAY_SIZE(columns); i++)
			sum[i] += counter(&tlb_cpus[cpu].stats, i);
	}
}

static void print_row(const char *label, const struct tlb_stats *s)
{
	char line[ARRAY_SIZE(columns) * 12 + 16];
	size_t used =
		(size_t)ksnprintf(line, sizeof(line), "tlb_stats: %-5s", label);

	for (size_t i = 0; i < ARRAY_SIZE(columns) && used < sizeof(line); i++)
		used += (size_t)ksnprintf(line + used, sizeof(line) - used,
					  " %*llu",
					  (int)strlen(columns[i].name),
					  (unsigned long long)counter(s, i));
	kprintf("%s\n", line);
}

void tlb_stats_print(void)
{
	char header[ARRAY_SIZE(columns) * 12 + 16];
	size_t used = (size_t)ksnprintf(header, sizeof(header),
					"tlb_stats: %-5s", "cpu");
	struct tlb_stats total;
	unsigned cpu;

	for (size_t i = 0; i < ARRAY_SIZE(columns) && used < sizeof(header);
	     i++)
		used += (size_t)ksnprintf(header + used, sizeof(header) - used,
					  " %s", columns[i].name);
	kprintf("%s\n", header);
	for_each_cpu (cpu, tlb_hw_online()) {
		char label[8];

		ksnprintf(label, sizeof(label), "%u", cpu);
		print_row(label, &tlb_cpus[cpu].stats);
	}
	tlb_stats_sum(&total);
	print_row("all", &total);
}

void tlb_stats_print_if_requested(void)
{
	if (tlb_stats_option.flag)
		tlb_stats_print();
}
