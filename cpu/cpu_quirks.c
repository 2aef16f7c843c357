// SPDX-License-Identifier: MIT
#include "cpu/cpu_quirks.h"
#include "lib/option.h"
#include "lib/format.h"
#include "lib/string.h"

const char *const cpu_quirk_names[CPU_QUIRK_COUNT + 1] = {
	[CPU_QUIRK_INVLPG_GLOBAL_PCID] = "intel-invlpg-global-pcid",
	[CPU_QUIRK_INVPCID_WITHOUT_PCID] = "invpcid-without-pcid",
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

const struct cpu_quirk_desc cpu_quirk_table[CPU_QUIRK_COUNT] = {
	[CPU_QUIRK_INVLPG_GLOBAL_PCID] = {"PCID", "PCID off", invlpg_reason,
					  CPU_QUIRK_NO_PCID, invlpg_matches,
					  invlpg_detail},
	[CPU_QUIRK_INVPCID_WITHOUT_PCID] = {"INVPCID", "INVPCID not used",
					    invpcid_alone_reason,
					    CPU_QUIRK_NO_INVPCID,
					    invpcid_alone_matches,
					    invpcid_alone_detail},
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
	[CPU_QUIRK_OPT_MODE] = {"cpu_quirks", OPTION_CHOICE, mode_words, 0, 0,
				0, "apply the known CPU quirks that fit"},
	[CPU_QUIRK_OPT_FORCE] = {"cpu_quirks_force", OPTION_LIST,
				 cpu_quirk_names, 0, 0, 0,
				 "apply these CPU quirks on any CPU (tests)"},
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
/* Order 80: the quirks steer the TLB's hardware paths (options 80-89). */
OPTION_TABLE(80, cpu_quirks, cpu_quirk_option_descs, cpu_quirk_option_values,
	     CPU_QUIRK_OPTION_COUNT, NULL, cpu_quirk_options_set);

const struct cpu_quirk_request *cpu_quirks_requested(void)
{
	return &requested;
}
