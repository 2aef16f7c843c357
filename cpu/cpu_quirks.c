// SPDX-License-Identifier: MIT
#include "cpu/cpu_quirks.h"
#include "lib/option.h"
#include "lib/format.h"
#include "lib/string.h"

const char *const cpu_quirk_names[CPU_QUIRK_COUNT + 1] = {
	[CPU_QUIRK_INVLPG_GLOBAL_PCID] = "intel-invlpg-global-pcid",
	[CPU_QUIRK_INVPCID_WITHOUT_PCID] = "invpcid-without-pcid",
	[CPU_QUIRK_TSC_DEADLINE_MICROCODE] = "intel-tsc-deadline-microcode",
	[CPU_QUIRK_AMD_LFENCE_SERIALIZING] = "amd-lfence-serializing",
	NULL,
};

/*
 * The models of Intel's INVLPG erratum, family 6, with the first microcode
 * revision that fixes it: Linux's invlpg_miss_ids (arch/x86/mm/init.c) as
 * of "x86/mm: Don't disable PCID when INVLPG has been fixed by microcode"
 * (f24f669d03f8, 2024), whose revisions come from the Intel microcode
 * release 20240312 and the errata ADL063 and RPL042.
 */
struct invlpg_model {
	uint32_t model;
	uint32_t fixed_microcode;
	const char *name; /* Linux's name for the model */
};

static const struct invlpg_model invlpg_models[] = {
	{0x97, 0x2e, "Alder Lake"},
	{0x9a, 0x42c, "Alder Lake (mobile, ALDERLAKE_L)"},
	{0xbe, 0x11, "Alder Lake-N (ATOM_GRACEMONT)"},
	{0xb7, 0x118, "Raptor Lake"},
	{0xba, 0x4117, "Raptor Lake-P"},
	{0xbf, 0x2e, "Raptor Lake-S"},
};

static const struct invlpg_model *invlpg_model_of(const struct cpu_features *f)
{
	if (strcmp(f->vendor, "GenuineIntel") || f->family != 6)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(invlpg_models); i++) {
		if (invlpg_models[i].model == f->model)
			return &invlpg_models[i];
	}
	return NULL;
}

/*
 * A revision that could not be read counts as one without the fix. Under a
 * hypervisor the revision is the one it reports, as Linux takes it too: a
 * low one turns PCID off, the safe side.
 */
static bool invlpg_matches(const struct cpu_features *f)
{
	const struct invlpg_model *m = invlpg_model_of(f);

	return m && (!f->microcode_known || f->microcode < m->fixed_microcode);
}

static const char *invlpg_detail(const struct cpu_features *f, char *buf,
				 size_t size)
{
	const struct invlpg_model *m = invlpg_model_of(f);

	if (!m)
		ksnprintf(buf, size, "not a listed model");
	else if (!f->microcode_known)
		ksnprintf(buf, size,
			  "%s, microcode revision unknown (counted as "
			  "without the fix, 0x%x)",
			  m->name, m->fixed_microcode);
	else
		ksnprintf(buf, size, "%s, microcode 0x%x, fixed from 0x%x",
			  m->name, f->microcode, m->fixed_microcode);
	return buf;
}

static bool pcid_left(const struct cpu_features *f)
{
	return f->pcid && !(f->quirk_effects & CPU_QUIRK_NO_PCID);
}

static bool invpcid_alone_matches(const struct cpu_features *f)
{
	return f->invpcid && !pcid_left(f);
}

static const char *invpcid_alone_detail(const struct cpu_features *f, char *buf,
					size_t size)
{
	const char *taker = cpu_quirk_taking(f, CPU_QUIRK_NO_PCID);

	if (!f->invpcid)
		ksnprintf(buf, size, "CPUID has no INVPCID");
	else if (!f->pcid)
		ksnprintf(buf, size, "CPUID has INVPCID but no PCID");
	else if (taker)
		ksnprintf(buf, size, "CPUID has both; PCID is off (%s)", taker);
	else
		ksnprintf(buf, size, "CPUID has both, PCID usable");
	return buf;
}

static const char invlpg_reason[] =
	"with PCID on, INVLPG may leave the global TLB entry of the address "
	"behind (Intel errata ADL063, RPL042), and the kernel's own mappings "
	"are global and shot down with INVLPG; Linux turns PCID off on these "
	"models (\"x86/mm: Avoid incomplete Global INVLPG flushes\", 2023) "
	"unless the microcode has the fix (f24f669d03f8, 2024), and so does "
	"this kernel";

static const char invpcid_alone_reason[] =
	"INVPCID is trusted only beside a usable PCID: KVM on Intel lets a "
	"guest execute INVPCID only when the guest's CPUID has PCID too "
	"(\"Exposing INVPCID only when PCID is exposed\", arch/x86/kvm/vmx), "
	"so without it the instruction may raise #UD; and mm/ flushes with "
	"INVPCID only what PCID tagged";

/*
 * Intel's TSC-deadline errata, family 6: the model (and steppings) with the
 * first microcode revision whose TSC-deadline timer works. Linux's
 * deadline_match (arch/x86/kernel/apic/apic.c); the names are Linux's
 * model names. Skylake-X from stepping 5 on has no entry: every revision
 * works there.
 */
struct deadline_model {
	uint32_t model;
	uint32_t first_stepping, last_stepping;
	uint32_t fixed_microcode;
	const char *name;
};

#define ANY_STEPPING 0, 0xf

static const struct deadline_model deadline_models[] = {
	{0x3f, 0x2, 0x2, 0x3a, "Haswell-EP (HASWELL_X)"},
	{0x3f, 0x4, 0x4, 0x0f, "Haswell-EX (HASWELL_X)"},
	{0x4f, ANY_STEPPING, 0x0b000020, "Broadwell-X"},
	{0x56, 0x2, 0x2, 0x00000011, "Broadwell-DE (BROADWELL_D)"},
	{0x56, 0x3, 0x3, 0x0700000e, "Broadwell-DE (BROADWELL_D)"},
	{0x56, 0x4, 0x4, 0x0f00000c, "Broadwell-DE (BROADWELL_D)"},
	{0x56, 0x5, 0x5, 0x0e000003, "Broadwell-DE (BROADWELL_D)"},
	{0x55, 0x3, 0x3, 0x01000136, "Skylake-X"},
	{0x55, 0x4, 0x4, 0x02000014, "Skylake-X"},
	{0x3c, ANY_STEPPING, 0x22, "Haswell"},
	{0x45, ANY_STEPPING, 0x20, "Haswell (mobile, HASWELL_L)"},
	{0x46, ANY_STEPPING, 0x17, "Haswell (HASWELL_G)"},
	{0x3d, ANY_STEPPING, 0x25, "Broadwell"},
	{0x47, ANY_STEPPING, 0x17, "Broadwell (BROADWELL_G)"},
	{0x4e, ANY_STEPPING, 0xb2, "Skylake (mobile, SKYLAKE_L)"},
	{0x5e, ANY_STEPPING, 0xb2, "Skylake"},
	{0x8e, ANY_STEPPING, 0x52,
	 "Kaby Lake or Coffee Lake (mobile, KABYLAKE_L)"},
	{0x9e, ANY_STEPPING, 0x52, "Kaby Lake or Coffee Lake (KABYLAKE)"},
};

static const struct deadline_model *
deadline_model_of(const struct cpu_features *f)
{
	if (strcmp(f->vendor, "GenuineIntel") || f->family != 6)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(deadline_models); i++) {
		const struct deadline_model *m = &deadline_models[i];

		if (m->model == f->model && f->stepping >= m->first_stepping &&
		    f->stepping <= m->last_stepping)
			return m;
	}
	return NULL;
}

/*
 * Under a hypervisor the TSC-deadline timer is the hypervisor's emulation,
 * not the CPU's, and Linux skips the check there too. A revision that
 * could not be read counts as one without the fix, the safe side: the
 * counting timer works on every CPU.
 */
static bool deadline_matches(const struct cpu_features *f)
{
	const struct deadline_model *m = deadline_model_of(f);

	return m && f->tsc_deadline && !f->hypervisor_bit &&
	       (!f->microcode_known || f->microcode < m->fixed_microcode);
}

static const char *deadline_detail(const struct cpu_features *f, char *buf,
				   size_t size)
{
	const struct deadline_model *m = deadline_model_of(f);

	if (!m)
		ksnprintf(buf, size, "not a listed model and stepping");
	else if (!f->tsc_deadline)
		ksnprintf(buf, size, "%s, CPUID has no TSC-deadline mode",
			  m->name);
	else if (f->hypervisor_bit)
		ksnprintf(buf, size,
			  "%s under a hypervisor: its timer is emulated",
			  m->name);
	else if (!f->microcode_known)
		ksnprintf(buf, size,
			  "%s stepping %u, microcode revision unknown "
			  "(counted as below 0x%x)",
			  m->name, f->stepping, m->fixed_microcode);
	else
		ksnprintf(buf, size,
			  "%s stepping %u, microcode 0x%x, works from 0x%x",
			  m->name, f->stepping, f->microcode,
			  m->fixed_microcode);
	return buf;
}

static const char deadline_reason[] =
	"the TSC-deadline timer of these models may fire late or never "
	"until a microcode update fixes it (the specification updates of "
	"these models); Linux turns TSC-deadline mode off below "
	"the listed revisions (deadline_match in arch/x86/kernel/apic/"
	"apic.c), and so does this kernel: one-shots count down at the APIC "
	"timer's own rate instead";

/*
 * AMD families 10h to 17h (and Hygon's 18h, a Zen 1): LFENCE waits for the
 * instructions before it to complete, which is what orders RDTSC, only
 * with DE_CFG bit 1 set. Families 0Fh and 11h have no such bit: their
 * LFENCE always serialises dispatch. Newer CPUs say so themselves in CPUID
 * Fn8000_0021 EAX[2].
 */
static bool lfence_family_needs_bit(const struct cpu_features *f)
{
	if (!strcmp(f->vendor, "HygonGenuine"))
		return f->family == 0x18;
	if (strcmp(f->vendor, "AuthenticAMD"))
		return false;
	return f->family >= 0x10 && f->family <= 0x17 && f->family != 0x11;
}

static bool lfence_matches(const struct cpu_features *f)
{
	return lfence_family_needs_bit(f) && !f->lfence_always_serializing;
}

static const char *const lfence_outcomes[] = {
	[LFENCE_NOT_TOUCHED] = "DE_CFG not touched",
	[LFENCE_ALREADY_SET] = "DE_CFG bit 1 already set by the firmware",
	[LFENCE_SET_NOW] = "DE_CFG bit 1 was clear: set",
	[LFENCE_MSR_FAULTED] = "DE_CFG raised #GP: LFENCE left as it is",
	[LFENCE_WRITE_IGNORED] = "DE_CFG bit 1 written, reads back clear",
};

const char *cpu_lfence_setting_name(enum lfence_setting setting)
{
	return setting < ARRAY_SIZE(lfence_outcomes) ? lfence_outcomes[setting]
						     : "?";
}

static const char *lfence_detail(const struct cpu_features *f, char *buf,
				 size_t size)
{
	const char *outcome = cpu_lfence_setting_name(f->lfence);

	if (f->lfence_always_serializing)
		ksnprintf(buf, size,
			  "%s family %#x: CPUID says LFENCE always serialises; "
			  "%s",
			  f->vendor, f->family, outcome);
	else if (lfence_family_needs_bit(f))
		ksnprintf(buf, size, "%s family %#x; %s", f->vendor, f->family,
			  outcome);
	else
		ksnprintf(buf, size, "%s family %#x is not a listed family; %s",
			  f->vendor, f->family, outcome);
	return buf;
}

static const char lfence_reason[] =
	"RDTSC is ordered only by a dispatch-serialising LFENCE around it "
	"(tsc_read_ordered); AMD's families 10h-17h serialise on LFENCE only "
	"with MSR C001_1029 (DE_CFG) bit 1 set (AMD, \"Software techniques "
	"for managing speculation on AMD processors\"), and Linux sets it "
	"itself (init_amd, arch/x86/kernel/cpu/amd.c) rather than trust the "
	"firmware; so does this kernel, on every CPU";

const struct cpu_quirk_desc cpu_quirk_table[CPU_QUIRK_COUNT] = {
	[CPU_QUIRK_INVLPG_GLOBAL_PCID] = {"PCID", "PCID off", invlpg_reason,
					  CPU_QUIRK_NO_PCID, invlpg_matches,
					  invlpg_detail},
	[CPU_QUIRK_INVPCID_WITHOUT_PCID] = {"INVPCID", "INVPCID not used",
					    invpcid_alone_reason,
					    CPU_QUIRK_NO_INVPCID,
					    invpcid_alone_matches,
					    invpcid_alone_detail},
	[CPU_QUIRK_TSC_DEADLINE_MICROCODE] =
		{"TSC-deadline", "TSC-deadline not used", deadline_reason,
		 CPU_QUIRK_NO_TSC_DEADLINE, deadline_matches, deadline_detail},
	[CPU_QUIRK_AMD_LFENCE_SERIALIZING] = {"LFENCE",
					      "LFENCE made dispatch-"
					      "serialising (DE_CFG bit 1)",
					      lfence_reason,
					      CPU_QUIRK_SET_LFENCE_SERIALIZING,
					      lfence_matches, lfence_detail},
};

void cpu_quirks_decide(struct cpu_features *f,
		       const struct cpu_quirk_request *req)
{
	f->quirks_matched = 0;
	f->quirks_applied = 0;
	f->quirk_effects = 0;
	for (unsigned q = 0; q < CPU_QUIRK_COUNT; q++) {
		uint32_t bit = 1U << q;

		if (cpu_quirk_table[q].matches(f))
			f->quirks_matched |= bit;
		if ((req->automatic && (f->quirks_matched & bit)) ||
		    (req->forced & bit)) {
			f->quirks_applied |= bit;
			f->quirk_effects |= cpu_quirk_table[q].effects;
		}
	}
}

const char *cpu_quirk_taking(const struct cpu_features *f, unsigned effect)
{
	for (unsigned q = 0; q < CPU_QUIRK_COUNT; q++) {
		if ((f->quirks_applied >> q & 1) &&
		    (cpu_quirk_table[q].effects & effect))
			return cpu_quirk_names[q];
	}
	return NULL;
}

/* A CHOICE defaults to its first word. */
enum { MODE_AUTO, MODE_OFF };
static const char *const mode_words[] = {"auto", "off", NULL};

const struct option_desc cpu_quirk_option_descs[CPU_QUIRK_OPTION_COUNT] = {
	[CPU_QUIRK_OPT_MODE] =
		{.name = "cpu_quirks",
		 .type = OPTION_CHOICE,
		 .choices = mode_words,
		 .help = "apply the known CPU errata and quirks that fit this "
			 "CPU (`auto`), or none and trust CPUID (`off`, for "
			 "experiments); the boot report's `cpu: quirk` lines "
			 "say which applied and why (docs/cpu-quirks.md)"},
	[CPU_QUIRK_OPT_FORCE] =
		{.name = "cpu_quirks_force",
		 .type = OPTION_LIST,
		 .choices = cpu_quirk_names,
		 .help = "apply these quirks whatever the CPU, so that an "
			 "emulator runs the path a quirk selects (PCID off on "
			 "Bochs, for one, or its TSC-deadline timer unused)"},
};

void cpu_quirk_request_from_values(
	struct cpu_quirk_request *r,
	const struct option_value values[CPU_QUIRK_OPTION_COUNT])
{
	r->automatic = values[CPU_QUIRK_OPT_MODE].choice == MODE_AUTO;
	r->forced = 0;
	for (unsigned q = 0; q < CPU_QUIRK_COUNT; q++) {
		if (option_words_has(&values[CPU_QUIRK_OPT_FORCE].words, q))
			r->forced |= 1U << q;
	}
}

static struct option_value cpu_quirk_option_values[CPU_QUIRK_OPTION_COUNT];
static struct cpu_quirk_request requested = {.automatic = true};

static void cpu_quirk_options_set(const struct option_value *values)
{
	cpu_quirk_request_from_values(&requested, values);
}
/* Order 80: the quirks steer the TLB's and the clocks' hardware paths
 * (options 80-89). */
OPTION_TABLE(80, cpu_quirks, cpu_quirk_option_descs, cpu_quirk_option_values,
	     CPU_QUIRK_OPTION_COUNT, NULL, cpu_quirk_options_set);

const struct cpu_quirk_request *cpu_quirks_requested(void)
{
	return &requested;
}
