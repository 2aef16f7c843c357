/* SPDX-License-Identifier: MIT */
/*
 * The TLB policies as command-line options (docs/options.md lists them): one
 * table for the kernel's command line (registered in the option registry,
 * lib/option.h, by mm/tlb_options.c), the simulator's policy
 * words (tests/host/tlb_sim_policy.c) and the reports that say which
 * policies produced a result. Pure logic, compiled for the host too (where
 * the registry entry is built but nothing walks it).
 */
#ifndef MM_TLB_OPTIONS_H
#define MM_TLB_OPTIONS_H

#include "lib/cmdline.h"
#include "mm/tlb.h"

enum tlb_option {
	TLB_OPT_PCID,
	TLB_OPT_INVPCID,
	TLB_OPT_INVLPGB,
	TLB_OPT_ASID_SLOTS,
	TLB_OPT_LAZY,
	TLB_OPT_LAZY_BACKOFF,
	TLB_OPT_FLUSH_CEILING,
	TLB_OPT_FLUSH_INFO,
	TLB_OPT_FLUSH_CONCURRENT,
	TLB_OPT_KERNEL_MM_MASK,
	TLB_OPT_LAZY_MM,
	TLB_OPT_UNMAP_BATCH,
	TLB_OPT_GLOBAL_ASIDS,
	TLB_OPT_GLOBAL_ASID_CPUS,
	TLB_OPT_TLB_BUG,
	TLB_OPT_TLB_TRACE,
	TLB_OPTION_COUNT
};

extern const struct option_desc tlb_option_descs[TLB_OPTION_COUNT];

/*
 * The policy the parsed values ask for. pcid, invpcid and invlpgb say what
 * was asked, not what the CPU has: tlb_boot_init (or the simulator)
 * decides.
 * tlb_bug= is no policy: the kernel's option sets tlb_bug_choice.
 */
void tlb_policy_from_values(struct tlb_policy *p,
			    const struct option_value values[TLB_OPTION_COUNT]);

/*
 * Writes p as the command line spells it, every option in force
 * ("pcid=on invpcid=on invlpgb=on asid_slots=6 ..."); returns buf.
 */
const char *tlb_policy_format(const struct tlb_policy *p, char *buf,
			      size_t size);

/*
 * Which INVLPGB path the policy in force takes on cpu, and why, for the
 * boot report: "used (8 pages per INVLPGB)", "present, off (invlpgb=off)",
 * "present, off (PCID off)" or "absent"; returns buf.
 */
const char *tlb_invlpgb_census(const struct tlb_policy *in_force,
			       const struct cpu_features *cpu, char *buf,
			       size_t size);

#endif
