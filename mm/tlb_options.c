// SPDX-License-Identifier: MIT
/*
 * The TLB policies: the values in force, their words, and the options that
 * set them from the command line.
 */
#include "mm/tlb_options.h"
#include "lib/option.h"
#include "lib/format.h"
#include "mm/tlb_bug.h"
#include "cpu/cpu.h"

struct tlb_policy tlb_policy = {
	.asid_slots = TLB_ASID_SLOTS_DEFAULT,
	.lazy = TLB_LAZY_SKIP,
	.lazy_backoff = TLB_LAZY_BACKOFF_DEFAULT,
	.flush_ceiling = TLB_FLUSH_CEILING_DEFAULT,
	.flush_concurrent = true,
	.global_asids = TLB_GLOBAL_ASIDS_MAX,
	.global_asid_cpus = TLB_GLOBAL_ASID_CPUS_DEFAULT,
};

enum tlb_bug tlb_bug_choice;

const char *const tlb_lazy_names[] = {"skip", "ipi", "dynamic", "off", NULL};
const char *const tlb_unmap_batch_names[] = {"pages", "all", "per_mm", NULL};
const char *const tlb_bug_names[TLB_BUG_COUNT + 1] = {
	[TLB_BUG_NONE] = "none",
	[TLB_BUG_SKIP_REMOTE] = "skip_remote",
	[TLB_BUG_NO_WAIT] = "no_wait",
	[TLB_BUG_ACK_BEFORE_FLUSH] = "ack_before_flush",
	[TLB_BUG_NO_GEN_CHECK] = "no_gen_check",
	[TLB_BUG_REUSE_ASID_NOFLUSH] = "reuse_asid_noflush",
	[TLB_BUG_LAZY_SKIP_FREED_TABLES] = "lazy_skip_freed_tables",
	[TLB_BUG_FREE_BEFORE_ACK] = "free_before_ack",
	[TLB_BUG_BATCH_FIRST_MM_ONLY] = "batch_first_mm_only",
	[TLB_BUG_REVOKE_SKIPS_CLEARED] = "revoke_skips_cleared",
	[TLB_BUG_MAP_NO_WAIT] = "map_no_wait",
	[TLB_BUG_TLBSYNC_SKIPPED] = "tlbsync_skipped",
	[TLB_BUG_GLOBAL_ASID_REUSE_NOFLUSH] = "global_asid_reuse_noflush",
	[TLB_BUG_INVLPGB_WITHOUT_PCID] = "invlpgb_without_pcid",
	[TLB_BUG_TRANSITION_SKIPS_SWITCHING] = "transition_skips_switching",
	[TLB_BUG_TLBSYNC_AFTER_MIGRATE] = "tlbsync_after_migrate",
	[TLB_BUG_COUNT] = NULL,
};

/* A CHOICE defaults to its first word, so "on" comes first. */
enum { CHOICE_ON, CHOICE_OFF };
static const char *const on_off[] = {"on", "off", NULL};
enum { FLUSH_INFO_PERCPU, FLUSH_INFO_STACK };
static const char *const flush_info_words[] = {"percpu", "stack", NULL};
enum { KERNEL_MM_MASK_SKIP, KERNEL_MM_MASK_TOUCH };
static const char *const kernel_mm_mask_words[] = {"skip", "touch", NULL};
static const char *const lazy_mm_words[] = {"shootdown", "refcount", NULL};

const struct option_desc tlb_option_descs[TLB_OPTION_COUNT] = {
	[TLB_OPT_PCID] =
		{.name = "pcid",
		 .type = OPTION_CHOICE,
		 .choices = on_off,
		 .help = "use PCID (tagged TLB entries, ASID slots) when the "
			 "CPU has it and global pages, and no quirk forbids "
			 "it; `off` flushes on every CR3 load"},
	[TLB_OPT_INVPCID] =
		{.name = "invpcid",
		 .type = OPTION_CHOICE,
		 .choices = on_off,
		 .help = "use INVPCID when the CPU has it (with PCID) and no "
			 "quirk forbids it; `off` uses INVLPG, CR3 reloads and "
			 "CR4.PGE toggles"},
	[TLB_OPT_INVLPGB] =
		{.name = "invlpgb",
		 .type = OPTION_CHOICE,
		 .choices = on_off,
		 .help = "use AMD's broadcast invalidation (INVLPGB, waited "
			 "for with TLBSYNC) when the CPU has it (with PCID); "
			 "`off` leaves it unused"},
	[TLB_OPT_ASID_SLOTS] =
		{.name = "asid_slots",
		 .type = OPTION_UINT,
		 .min = 1,
		 .max = TLB_ASID_SLOTS_MAX,
		 .def = TLB_ASID_SLOTS_DEFAULT,
		 .help = "ASID slots per CPU (PCIDs 1 to N): fewer slots, more "
			 "recycling"},
	[TLB_OPT_LAZY] =
		{.name = "lazy",
		 .type = OPTION_CHOICE,
		 .choices = tlb_lazy_names,
		 .help = "what a CPU does with the user address space while it "
			 "runs idle or kernel threads: `skip` keeps it and "
			 "flushes skip it (it catches up by generation on "
			 "return); `ipi` keeps it, but a flush IPI sends it to "
			 "the kernel mm; `dynamic` is `ipi` plus a back-off; "
			 "`off` switches to the kernel mm at once "
			 "(docs/tlb.md)"},
	[TLB_OPT_LAZY_BACKOFF] = {.name = "lazy_backoff",
				  .type = OPTION_UINT,
				  .min = 0,
				  .max = TLB_LAZY_BACKOFF_MAX,
				  .def = TLB_LAZY_BACKOFF_DEFAULT,
				  .help = "`lazy=dynamic`: after a flush IPI "
					  "found the CPU lazy, this many "
					  "switches to a kernel thread go to "
					  "the kernel mm instead"},
	[TLB_OPT_FLUSH_CEILING] = {.name = "flush_ceiling",
				   .type = OPTION_UINT,
				   .min = 0,
				   .max = TLB_FLUSH_CEILING_MAX,
				   .def = TLB_FLUSH_CEILING_DEFAULT,
				   .help = "the largest page count flushed "
					   "page by page; beyond it the whole "
					   "context is flushed"},
	[TLB_OPT_FLUSH_INFO] =
		{.name = "flush_info",
		 .type = OPTION_CHOICE,
		 .choices = flush_info_words,
		 .help = "where a flush request lives: a per-CPU cache-aligned "
			 "structure, or the flusher's stack"},
	[TLB_OPT_FLUSH_CONCURRENT] =
		{.name = "flush_concurrent",
		 .type = OPTION_CHOICE,
		 .choices = on_off,
		 .help = "flush locally while remote CPUs flush, or after they "
			 "are done"},
	[TLB_OPT_KERNEL_MM_MASK] = {.name = "kernel_mm_mask",
				    .type = OPTION_CHOICE,
				    .choices = kernel_mm_mask_words,
				    .help = "whether switches to and from the "
					    "kernel mm update its CPU mask "
					    "(two atomics)"},
	[TLB_OPT_LAZY_MM] = {.name = "lazy_mm",
			     .type = OPTION_CHOICE,
			     .choices = lazy_mm_words,
			     .help = "how an address space still loaded lazily "
				     "is kept alive: IPIs to the lazy CPUs at "
				     "teardown, or a reference per lazy CPU"},
	[TLB_OPT_UNMAP_BATCH] =
		{.name = "unmap_batch",
		 .type = OPTION_CHOICE,
		 .choices = tlb_unmap_batch_names,
		 .help = "how an unmap from several address spaces at once "
			 "(`shm_revoke`) is flushed: one IPI round for all of "
			 "them, with each space's pages flushed one by one up "
			 "to `flush_ceiling` (`pages`) or each whole context "
			 "flushed (`all`, 2015's \"batchdirty\"); or one round "
			 "per address space (`per_mm`) (docs/tlb.md)"},
	[TLB_OPT_GLOBAL_ASIDS] =
		{.name = "global_asids",
		 .type = OPTION_UINT,
		 .min = 1,
		 .max = TLB_GLOBAL_ASIDS_MAX,
		 .def = TLB_GLOBAL_ASIDS_MAX,
		 .help = "with INVLPGB: how many global ASIDs (PCIDs above the "
			 "slots') address spaces may hold; fewer make the "
			 "allocator wrap around sooner"},
	[TLB_OPT_GLOBAL_ASID_CPUS] =
		{.name = "global_asid_cpus",
		 .type = OPTION_UINT,
		 .min = 1,
		 .max = MAX_CPUS,
		 .def = TLB_GLOBAL_ASID_CPUS_DEFAULT,
		 .help = "with INVLPGB: an address space whose flush had to "
			 "reach this many CPUs gets a global ASID and is "
			 "flushed by broadcast from then on"},
	[TLB_OPT_TLB_BUG] =
		{.name = "tlb_bug",
		 .type = OPTION_CHOICE,
		 .choices = tlb_bug_names,
		 .help = "inject a TLB protocol bug (tests and labs; "
			 "docs/tlb-bugs.md says which bug shows where)"},
	[TLB_OPT_TLB_TRACE] =
		{.name = "tlb_trace",
		 .type = OPTION_FLAG,
		 .help = "print one line per TLB flush and switch event (time, "
			 "CPU, mm, ASID, generations, request targets and "
			 "senders; `make timeline` draws them)"},
};

/*
 * The kernel's command line: what it asks for becomes tlb_policy at once;
 * tlb_boot_init then checks CPUID (pcid=, invpcid= and invlpgb= are
 * requests).
 */
static struct option_value tlb_option_values[TLB_OPTION_COUNT];

static void tlb_options_set(const struct option_value *values)
{
	tlb_policy_from_values(&tlb_policy, values);
	tlb_bug_choice = (enum tlb_bug)values[TLB_OPT_TLB_BUG].choice;
}
OPTION_TABLE(81, tlb, tlb_option_descs, tlb_option_values, TLB_OPTION_COUNT,
	     NULL, tlb_options_set);

void tlb_policy_from_values(struct tlb_policy *p,
			    const struct option_value values[TLB_OPTION_COUNT])
{
	p->pcid = values[TLB_OPT_PCID].choice == CHOICE_ON;
	p->invpcid = values[TLB_OPT_INVPCID].choice == CHOICE_ON;
	p->invlpgb = values[TLB_OPT_INVLPGB].choice == CHOICE_ON;
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
	p->global_asids = (unsigned)values[TLB_OPT_GLOBAL_ASIDS].number;
	p->global_asid_cpus = (unsigned)values[TLB_OPT_GLOBAL_ASID_CPUS].number;
	p->trace = values[TLB_OPT_TLB_TRACE].flag;
}

/* The inverse of tlb_policy_from_values, with the bug in force. */
static void values_from_policy(const struct tlb_policy *p,
			       struct option_value values[TLB_OPTION_COUNT])
{
	values[TLB_OPT_PCID].choice = p->pcid ? CHOICE_ON : CHOICE_OFF;
	values[TLB_OPT_INVPCID].choice = p->invpcid ? CHOICE_ON : CHOICE_OFF;
	values[TLB_OPT_INVLPGB].choice = p->invlpgb ? CHOICE_ON : CHOICE_OFF;
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
	values[TLB_OPT_GLOBAL_ASIDS].number = p->global_asids;
	values[TLB_OPT_GLOBAL_ASID_CPUS].number = p->global_asid_cpus;
	values[TLB_OPT_TLB_BUG].choice = tlb_bug_choice;
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

/*
 * tlb_policy_settle turns INVLPGB off without PCID whatever was asked, so
 * PCID off is the reason first; with PCID on, only invlpgb=off is left.
 */
const char *tlb_invlpgb_census(const struct tlb_policy *in_force,
			       const struct cpu_features *cpu, char *buf,
			       size_t size)
{
	if (in_force->invlpgb)
		ksnprintf(buf, size, "used (%u pages per INVLPGB)",
			  in_force->invlpgb_max_pages);
	else if (!cpu->invlpgb)
		ksnprintf(buf, size, "absent");
	else if (!in_force->pcid)
		ksnprintf(buf, size, "present, off (PCID off)");
	else
		ksnprintf(buf, size, "present, off (invlpgb=off)");
	return buf;
}
