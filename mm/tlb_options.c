// SPDX-License-Identifier: MIT
#include "mm/tlb_options.h"
#include "lib/option.h"
#include "lib/format.h"

/* A CHOICE defaults to its first word, so "on" comes first. */
enum { CHOICE_ON, CHOICE_OFF };
static const char *const on_off[] = {"on", "off", NULL};
enum { FLUSH_INFO_PERCPU, FLUSH_INFO_STACK };
static const char *const flush_info_words[] = {"percpu", "stack", NULL};
enum { KERNEL_MM_MASK_SKIP, KERNEL_MM_MASK_TOUCH };
static const char *const kernel_mm_mask_words[] = {"skip", "touch", NULL};
static const char *const lazy_mm_words[] = {"shootdown", "refcount", NULL};

const struct option_desc tlb_option_descs[TLB_OPTION_COUNT] = {
	[TLB_OPT_PCID] = {"pcid", OPTION_CHOICE, on_off, 0, 0, 0,
			  "use PCID when the CPU has it"},
	[TLB_OPT_INVPCID] = {"invpcid", OPTION_CHOICE, on_off, 0, 0, 0,
			     "use INVPCID when the CPU has it"},
	[TLB_OPT_ASID_SLOTS] = {"asid_slots", OPTION_UINT, NULL, 1,
				TLB_ASID_SLOTS_MAX, TLB_ASID_SLOTS_DEFAULT,
				"dynamic ASID slots per CPU (with PCID)"},
	[TLB_OPT_LAZY] = {"lazy", OPTION_CHOICE, tlb_lazy_names, 0, 0, 0,
			  "what idle and kernel threads do with the user mm"},
	[TLB_OPT_LAZY_BACKOFF] = {"lazy_backoff", OPTION_UINT, NULL, 0,
				  TLB_LAZY_BACKOFF_MAX,
				  TLB_LAZY_BACKOFF_DEFAULT,
				  "lazy=dynamic: switches to stay non-lazy"},
	[TLB_OPT_FLUSH_CEILING] = {"flush_ceiling", OPTION_UINT, NULL, 0,
				   TLB_FLUSH_CEILING_MAX,
				   TLB_FLUSH_CEILING_DEFAULT,
				   "largest page count flushed page by page"},
	[TLB_OPT_FLUSH_INFO] = {"flush_info", OPTION_CHOICE, flush_info_words,
				0, 0, 0, "where a flush request lives"},
	[TLB_OPT_FLUSH_CONCURRENT] = {"flush_concurrent", OPTION_CHOICE, on_off,
				      0, 0, 0,
				      "flush locally while remote CPUs flush"},
	[TLB_OPT_KERNEL_MM_MASK] = {"kernel_mm_mask", OPTION_CHOICE,
				    kernel_mm_mask_words, 0, 0, 0,
				    "cpumask atomics on kernel-mm switches"},
	[TLB_OPT_LAZY_MM] = {"lazy_mm", OPTION_CHOICE, lazy_mm_words, 0, 0, 0,
			     "how a lazily loaded mm is kept alive"},
	[TLB_OPT_UNMAP_BATCH] = {"unmap_batch", OPTION_CHOICE,
				 tlb_unmap_batch_names, 0, 0, 0,
				 "how an unmap from many address spaces "
				 "flushes"},
	[TLB_OPT_TLB_BUG] = {"tlb_bug", OPTION_CHOICE, tlb_bug_names, 0, 0, 0,
			     "inject a TLB protocol bug (tests, labs)"},
	[TLB_OPT_TLB_TRACE] = {"tlb_trace", OPTION_FLAG, NULL, 0, 0, 0,
			       "print every TLB flush event"},
};

/*
 * The kernel's command line: what it asks for becomes tlb_policy at once;
 * tlb_boot_init then checks CPUID (pcid= and invpcid= are requests).
 */
static struct option_value tlb_option_values[TLB_OPTION_COUNT];

static void tlb_options_set(const struct option_value *values)
{
	tlb_policy_from_values(&tlb_policy, values);
}
OPTION_TABLE(81, tlb, tlb_option_descs, tlb_option_values, TLB_OPTION_COUNT,
	     NULL, tlb_options_set);

void tlb_policy_from_values(struct tlb_policy *p,
			    const struct option_value values[TLB_OPTION_COUNT])
{
	p->pcid = values[TLB_OPT_PCID].choice == CHOICE_ON;
	p->invpcid = values[TLB_OPT_INVPCID].choice == CHOICE_ON;
	p->asid_slots = (unsigned)values[TLB_OPT_ASID_SLOTS].number;
	p->lazy = (enum tlb_lazy_policy)values[TLB_OPT_LAZY].choice;
	p->lazy_backoff = (unsigned)values[TLB_OPT_LAZY_BACKOFF].number;
	p->flush_ceiling = (unsigned)values[TLB_OPT_FLUSH_CEILING].number;
	p->flush_info_on_stack =
		values[TLB_OPT_FLUSH_INFO].choice == FLUSH_INFO_STACK;
	p->flush_concurrent =
		values[TLB_OPT_FLUSH_CONCURRENT].choice == CHOICE_ON;
	p->kernel_mm_mask_touch =
		values[TLB_OPT_KERNEL_MM_MASK].choice == KERNEL_MM_MASK_TOUCH;
	p->lazy_mm = (enum tlb_lazy_mm)values[TLB_OPT_LAZY_MM].choice;
	p->unmap_batch =
		(enum tlb_unmap_batch)values[TLB_OPT_UNMAP_BATCH].choice;
	p->bug = (enum tlb_bug)values[TLB_OPT_TLB_BUG].choice;
	p->trace = values[TLB_OPT_TLB_TRACE].flag;
}

/* The inverse of tlb_policy_from_values. */
static void values_from_policy(const struct tlb_policy *p,
			       struct option_value values[TLB_OPTION_COUNT])
{
	values[TLB_OPT_PCID].choice = p->pcid ? CHOICE_ON : CHOICE_OFF;
	values[TLB_OPT_INVPCID].choice = p->invpcid ? CHOICE_ON : CHOICE_OFF;
	values[TLB_OPT_ASID_SLOTS].number = p->asid_slots;
	values[TLB_OPT_LAZY].choice = p->lazy;
	values[TLB_OPT_LAZY_BACKOFF].number = p->lazy_backoff;
	values[TLB_OPT_FLUSH_CEILING].number = p->flush_ceiling;
	values[TLB_OPT_FLUSH_INFO].choice =
		p->flush_info_on_stack ? FLUSH_INFO_STACK : FLUSH_INFO_PERCPU;
	values[TLB_OPT_FLUSH_CONCURRENT].choice =
		p->flush_concurrent ? CHOICE_ON : CHOICE_OFF;
	values[TLB_OPT_KERNEL_MM_MASK].choice = p->kernel_mm_mask_touch
							? KERNEL_MM_MASK_TOUCH
							: KERNEL_MM_MASK_SKIP;
	values[TLB_OPT_LAZY_MM].choice = p->lazy_mm;
	values[TLB_OPT_UNMAP_BATCH].choice = p->unmap_batch;
	values[TLB_OPT_TLB_BUG].choice = p->bug;
	values[TLB_OPT_TLB_TRACE].flag = p->trace;
}

const char *tlb_policy_format(const struct tlb_policy *p, char *buf,
			      size_t size)
{
	struct option_value values[TLB_OPTION_COUNT] = {0};
	size_t used = 0;

	values_from_policy(p, values);
	buf[0] = '\0';
	for (size_t i = 0; i < TLB_OPTION_COUNT && used < size; i++) {
		char value[CMDLINE_TOKEN_MAX];

		cmdline_format_value(&tlb_option_descs[i], &values[i], value,
				     sizeof(value));
		used += (size_t)ksnprintf(buf + used, size - used, "%s%s=%s",
					  i ? " " : "",
					  tlb_option_descs[i].name, value);
	}
	return buf;
}
