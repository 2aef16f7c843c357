/* SPDX-License-Identifier: MIT */
/*
 * CPUs as they are: the known errata and quirks of the TLB and of the
 * clocks the kernel reads (TSC-deadline timer, LFENCE before RDTSC), one
 * table entry each, with the CPUs it describes, what it takes away or sets
 * (enum cpu_quirk_effect in cpu/cpu.h) and why (docs/cpu-quirks.md). Pure logic, compiled for the
 * host tests too: the table decides from a struct cpu_features, however it
 * was filled.
 *
 * cpu_quirks=auto (the default) applies every entry that describes this
 * CPU, cpu_quirks=off none of them (trust CPUID: for experiments);
 * cpu_quirks_force=NAME,... applies the named ones whatever the CPU, so an
 * emulator runs the paths a quirk selects.
 */
#ifndef CPU_CPU_QUIRKS_H
#define CPU_CPU_QUIRKS_H

#include "cpu/cpu.h"
#include "lib/cmdline.h"
#include "lib/types.h"

enum cpu_quirk {
	CPU_QUIRK_INVLPG_GLOBAL_PCID,	  /* intel-invlpg-global-pcid */
	CPU_QUIRK_INVPCID_WITHOUT_PCID,	  /* invpcid-without-pcid */
	CPU_QUIRK_TSC_DEADLINE_MICROCODE, /* intel-tsc-deadline-microcode */
	CPU_QUIRK_AMD_LFENCE_SERIALIZING, /* amd-lfence-serializing */
	CPU_QUIRK_COUNT
};

struct cpu_quirk_desc {
	const char *affects;  /* the feature: "PCID" */
	const char *decision; /* what the kernel does: "PCID off" */
	const char *reason;   /* one sentence, with its sources */
	unsigned effects;     /* enum cpu_quirk_effect, when applied */
	/*
	 * Whether the entry describes f. It sees f->quirk_effects of the
	 * entries before it: a quirk may follow from another one.
	 */
	bool (*matches)(const struct cpu_features *f);
	/* Which part of f the entry looked at, for the census; returns buf. */
	const char *(*detail)(const struct cpu_features *f, char *buf,
			      size_t size);
};

extern const struct cpu_quirk_desc cpu_quirk_table[CPU_QUIRK_COUNT];
/* The quirks' names, as cpu_quirks_force= spells them (NULL-terminated). */
extern const char *const cpu_quirk_names[CPU_QUIRK_COUNT + 1];

/* What the command line asks for. */
struct cpu_quirk_request {
	bool automatic;	 /* cpu_quirks=auto: apply the entries that match */
	uint32_t forced; /* cpu_quirks_force=: bit q, apply quirk q anyway */
};

/*
 * Sets f->quirks_matched, quirks_applied and quirk_effects: the table, in
 * order, against f (its CPUID fields and microcode revision), then req.
 */
void cpu_quirks_decide(struct cpu_features *f,
		       const struct cpu_quirk_request *req);

/* What DE_CFG held and what became of it, for the census and the APs. */
const char *cpu_lfence_setting_name(enum lfence_setting setting);

/* The first applied quirk that takes `effect` away, or NULL. */
const char *cpu_quirk_taking(const struct cpu_features *f, unsigned effect);

/* The options, for the registry and the host tests. */
enum cpu_quirk_option {
	CPU_QUIRK_OPT_MODE,  /* cpu_quirks= */
	CPU_QUIRK_OPT_FORCE, /* cpu_quirks_force= */
	CPU_QUIRK_OPTION_COUNT
};

extern const struct option_desc cpu_quirk_option_descs[CPU_QUIRK_OPTION_COUNT];

void cpu_quirk_request_from_values(
	struct cpu_quirk_request *r,
	const struct option_value values[CPU_QUIRK_OPTION_COUNT]);

/* What the kernel's command line asked for (cpu_quirks=auto before it). */
const struct cpu_quirk_request *cpu_quirks_requested(void);

#endif
