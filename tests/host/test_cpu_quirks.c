// SPDX-License-Identifier: MIT
/*
 * cpu/cpu_decode.c and cpu/cpu_quirks.c on crafted CPUID leaves: each
 * model of Intel's INVLPG erratum gets PCID off until its fixed microcode,
 * its neighbours (other models, families, vendors) keep PCID, INVPCID
 * without a usable PCID is not used, cpu_quirks= and cpu_quirks_force= do
 * what they say (and name a bad value), and the INVLPGB page count is
 * decoded. Intel's TSC-deadline errata take TSC-deadline mode away below
 * their microcode revisions, and AMD's families 10h-17h get LFENCE made
 * dispatch-serialising. The expected models and revisions are written out here, not
 * read from the table, so a wrong table entry fails.
 */
#include "cpu/cpu.h"
#include "cpu/cpu_quirks.h"
#include "arch/x86.h"
#include "lib/cmdline.h"
#include "tests/host/host_test.h"

/* The leaves a crafted CPU answers; every other leaf reads as zeros. */
struct fake_cpu {
	const char *vendor; /* 12 characters */
	uint32_t max_leaf, signature, f1_ecx, f1_edx, f7_ebx;
	uint32_t ext_max, fx_ecx, fx_edx, fa_ebx, fa_edx, f21_eax;
};

static struct fake_cpu fake;

static uint32_t vendor_word(unsigned i)
{
	uint32_t w;

	memcpy(&w, fake.vendor + 4 * i, 4);
	return w;
}

static struct cpuid_regs fake_cpuid(uint32_t leaf, uint32_t subleaf)
{
	struct cpuid_regs r = {0};

	(void)subleaf;
	if (leaf == 0)
		r = (struct cpuid_regs){fake.max_leaf, vendor_word(0),
					vendor_word(2), vendor_word(1)};
	else if (leaf == 1)
		r = (struct cpuid_regs){fake.signature, 0, fake.f1_ecx,
					fake.f1_edx};
	else if (leaf == 7)
		r.ebx = fake.f7_ebx;
	else if (leaf == 0x80000000U)
		r.eax = fake.ext_max;
	else if (leaf == 0x80000001U)
		r = (struct cpuid_regs){0, 0, fake.fx_ecx, fake.fx_edx};
	else if (leaf == 0x80000008U)
		r = (struct cpuid_regs){0x3028, fake.fa_ebx, 0, fake.fa_edx};
	else if (leaf == 0x80000021U)
		r.eax = fake.f21_eax;
	return r;
}

/* CPUID.1:EAX for a family, model and stepping (SDM Vol. 2A, CPUID). */
static uint32_t signature(uint32_t family, uint32_t model, uint32_t stepping)
{
	uint32_t base = family >= 0xf ? 0xf : family;
	uint32_t ext_family = family >= 0xf ? family - 0xf : 0;

	return stepping | (model & 0xf) << 4 | base << 8 | (model >> 4) << 16 |
	       ext_family << 20;
}

#define F1_ECX_PCID	(1U << 17)
#define F1_EDX_PGE	(1U << 13)
#define F7_EBX_INVPCID	(1U << 10)
#define FX_ECX_TCE	(1U << 17)
#define FA_EBX_INVLPGB	(1U << 3)
#define MICROCODE_UNSET UINT32_MAX

/* A CPU with PCID, INVPCID and global pages, its microcode read or not. */
static struct cpu_features crafted(const char *vendor, uint32_t family,
				   uint32_t model, uint32_t microcode)
{
	struct cpu_features f;

	fake = (struct fake_cpu){.vendor = vendor,
				 .max_leaf = 0x16,
				 .signature = signature(family, model, 3),
				 .f1_ecx = F1_ECX_PCID,
				 .f1_edx = F1_EDX_PGE,
				 .f7_ebx = F7_EBX_INVPCID,
				 .ext_max = 0x80000008U};
	cpu_decode(&f, fake_cpuid);
	f.microcode_known = microcode != MICROCODE_UNSET;
	f.microcode = f.microcode_known ? microcode : 0;
	return f;
}

static const struct cpu_quirk_request automatic = {.automatic = true};

static struct cpu_features decided(const char *vendor, uint32_t family,
				   uint32_t model, uint32_t microcode)
{
	struct cpu_features f = crafted(vendor, family, model, microcode);

	cpu_quirks_decide(&f, &automatic);
	return f;
}

#define BIT(q) (1U << (q))
#define TLB_QUIRKS                           \
	(BIT(CPU_QUIRK_INVLPG_GLOBAL_PCID) | \
	 BIT(CPU_QUIRK_INVPCID_WITHOUT_PCID))

/* Linux's invlpg_miss_ids with the fixed revisions (f24f669d03f8). */
static const struct {
	uint32_t model, fixed;
} erratum_models[] = {
	{0x97, 0x2e},  {0x9a, 0x42c},  {0xbe, 0x11},
	{0xb7, 0x118}, {0xba, 0x4117}, {0xbf, 0x2e},
};

HOST_TEST(signature_decodes)
{
	struct cpu_features f = crafted("GenuineIntel", 6, 0xba, 0);

	CHECK(!strcmp(f.vendor, "GenuineIntel"), "vendor %s", f.vendor);
	CHECK_EQ(f.family, 6);
	CHECK_EQ(f.model, 0xba);
	CHECK_EQ(f.stepping, 3);
	CHECK(f.pcid && f.invpcid && f.pge, "PCID, INVPCID, PGE decoded");
	f = crafted("AuthenticAMD", 0x19, 0x11, 0);
	CHECK_EQ(f.family, 0x19);
	CHECK_EQ(f.model, 0x11);
}

HOST_TEST(erratum_models_lose_pcid)
{
	for (size_t i = 0; i < ARRAY_SIZE(erratum_models); i++) {
		uint32_t model = erratum_models[i].model;
		struct cpu_features f = decided("GenuineIntel", 6, model,
						erratum_models[i].fixed - 1);

		CHECK(f.quirks_applied & BIT(CPU_QUIRK_INVLPG_GLOBAL_PCID),
		      "model %#x: erratum not applied", model);
		CHECK(!cpu_pcid_usable(&f), "model %#x: PCID usable", model);
		/* INVPCID is then without a usable PCID. */
		CHECK(f.quirks_applied & BIT(CPU_QUIRK_INVPCID_WITHOUT_PCID),
		      "model %#x: INVPCID quirk did not follow", model);
		CHECK(!cpu_invpcid_usable(&f), "model %#x: INVPCID usable",
		      model);
		CHECK(f.pcid && f.invpcid, "CPUID's bits stay as read");
	}
}

HOST_TEST(fixed_microcode_keeps_pcid)
{
	for (size_t i = 0; i < ARRAY_SIZE(erratum_models); i++) {
		uint32_t model = erratum_models[i].model;
		struct cpu_features f = decided("GenuineIntel", 6, model,
						erratum_models[i].fixed);

		CHECK_EQ(f.quirks_matched, 0);
		CHECK(cpu_pcid_usable(&f) && cpu_invpcid_usable(&f),
		      "model %#x, fixed microcode: PCID and INVPCID lost",
		      model);
	}
}

HOST_TEST(unknown_microcode_counts_as_unfixed)
{
	struct cpu_features f =
		decided("GenuineIntel", 6, 0xb7, MICROCODE_UNSET);
	char buf[128];

	CHECK(!cpu_pcid_usable(&f), "PCID usable, microcode unknown");
	cpu_quirk_table[CPU_QUIRK_INVLPG_GLOBAL_PCID].detail(&f, buf,
							     sizeof(buf));
	CHECK(strstr(buf, "unknown"), "detail: %s", buf);
}

HOST_TEST(neighbours_keep_pcid)
{
	static const uint32_t intel_models[] = {
		0x96, 0x98, 0x99, 0x9b, 0xb6, 0xb8, 0xb9, 0xbb, 0xbd,
		0xc0, 0x55, 0x8f, 0xaa, 0xac, 0xad, 0xcf, 0x07, 0x00,
	};
	static const struct {
		const char *vendor;
		uint32_t family, model;
	} others[] = {
		{"AuthenticAMD", 6, 0x97},    {"AuthenticAMD", 0x19, 0xba},
		{"HygonGenuine", 0x18, 0xb7}, {"CentaurHauls", 6, 0x9a},
		{"GenuineIntel", 0xf, 0x97},  {"GenuineIntel", 5, 0x07},
		{"GenuineIntel", 0x13, 0xba}, {"GenuineIntel", 0x7, 0xbf},
	};

	for (size_t i = 0; i < ARRAY_SIZE(intel_models); i++) {
		struct cpu_features f =
			decided("GenuineIntel", 6, intel_models[i], 0);

		CHECK(!f.quirks_matched && cpu_pcid_usable(&f) &&
			      cpu_invpcid_usable(&f),
		      "family 6 model %#x, microcode 0: a quirk matched (%#x)",
		      intel_models[i], f.quirks_matched);
	}
	for (size_t i = 0; i < ARRAY_SIZE(others); i++) {
		struct cpu_features f = decided(
			others[i].vendor, others[i].family, others[i].model, 0);

		CHECK(!(f.quirks_matched & TLB_QUIRKS) && cpu_pcid_usable(&f),
		      "%s family %#x model %#x: a TLB quirk matched (%#x)",
		      others[i].vendor, others[i].family, others[i].model,
		      f.quirks_matched);
	}
}

HOST_TEST(invpcid_without_pcid_is_not_used)
{
	struct cpu_features f = crafted("GenuineIntel", 6, 0x55, 0);

	f.pcid = false; /* a VM's CPUID: INVPCID but no PCID */
	cpu_quirks_decide(&f, &automatic);
	CHECK_EQ(f.quirks_applied, BIT(CPU_QUIRK_INVPCID_WITHOUT_PCID));
	CHECK(!cpu_invpcid_usable(&f), "INVPCID usable without PCID");
	CHECK(!strcmp(cpu_quirk_taking(&f, CPU_QUIRK_NO_INVPCID),
		      "invpcid-without-pcid"),
	      "taken by %s", cpu_quirk_taking(&f, CPU_QUIRK_NO_INVPCID));
	CHECK(!cpu_quirk_taking(&f, CPU_QUIRK_NO_PCID), "PCID taken");

	f.invpcid = false; /* neither: nothing to say */
	cpu_quirks_decide(&f, &automatic);
	CHECK_EQ(f.quirks_matched, 0);
}

/* The options as the kernel's command line sets them. */
static int parse(const char *line, struct cpu_quirk_request *r)
{
	struct option_value values[CPU_QUIRK_OPTION_COUNT];
	char copy[CMDLINE_TOKEN_MAX * 2];

	snprintf(copy, sizeof(copy), "%s", line);
	memset(&messages, 0, sizeof(messages));
	int problems = cmdline_parse(copy, cpu_quirk_option_descs,
				     CPU_QUIRK_OPTION_COUNT, values, capture,
				     &messages);
	cpu_quirk_request_from_values(r, values);
	return problems;
}

HOST_TEST(default_is_auto)
{
	struct cpu_quirk_request r;

	CHECK_EQ(parse("", &r), 0);
	CHECK(r.automatic && !r.forced, "default: auto, nothing forced");
	CHECK(cpu_quirks_requested()->automatic, "the kernel's default");
}

HOST_TEST(off_trusts_cpuid)
{
	struct cpu_features f = crafted("GenuineIntel", 6, 0xba, 0x4116);
	struct cpu_quirk_request r;

	CHECK_EQ(parse("cpu_quirks=off", &r), 0);
	cpu_quirks_decide(&f, &r);
	CHECK(f.quirks_matched & BIT(CPU_QUIRK_INVLPG_GLOBAL_PCID),
	      "the table still says it matches");
	CHECK_EQ(f.quirks_applied, 0);
	CHECK(cpu_pcid_usable(&f) && cpu_invpcid_usable(&f),
	      "cpu_quirks=off took PCID or INVPCID away");
}

HOST_TEST(force_applies_anywhere)
{
	struct cpu_features f = crafted("GenuineIntel", 6, 0x55, 0);
	struct cpu_quirk_request r;
	char buf[128];

	/* Bochs's Skylake-X: PCID and INVPCID, not on the list. */
	CHECK_EQ(parse("cpu_quirks_force=intel-invlpg-global-pcid", &r), 0);
	cpu_quirks_decide(&f, &r);
	CHECK(!(f.quirks_matched & BIT(CPU_QUIRK_INVLPG_GLOBAL_PCID)),
	      "model 0x55 listed");
	CHECK(!cpu_pcid_usable(&f), "forced erratum left PCID usable");
	CHECK(!cpu_invpcid_usable(&f), "INVPCID usable without PCID");
	CHECK(!strcmp(cpu_quirk_taking(&f, CPU_QUIRK_NO_PCID),
		      "intel-invlpg-global-pcid"),
	      "PCID taken by %s", cpu_quirk_taking(&f, CPU_QUIRK_NO_PCID));
	cpu_quirk_table[CPU_QUIRK_INVLPG_GLOBAL_PCID].detail(&f, buf,
							     sizeof(buf));
	CHECK(strstr(buf, "not a listed model"), "detail: %s", buf);

	CHECK_EQ(parse("cpu_quirks_force=invpcid-without-pcid", &r), 0);
	cpu_quirks_decide(&f, &r);
	CHECK(cpu_pcid_usable(&f) && !cpu_invpcid_usable(&f),
	      "only INVPCID should go");

	/* off and forced: only the forced one. */
	f = crafted("GenuineIntel", 6, 0x97, 0);
	CHECK_EQ(parse("cpu_quirks=off cpu_quirks_force=invpcid-without-pcid",
		       &r),
		 0);
	cpu_quirks_decide(&f, &r);
	CHECK_EQ(f.quirks_applied, BIT(CPU_QUIRK_INVPCID_WITHOUT_PCID));
	CHECK(cpu_pcid_usable(&f), "cpu_quirks=off applied the erratum");

	CHECK_EQ(parse("cpu_quirks_force=all", &r), 0);
	CHECK_EQ(r.forced, (1U << CPU_QUIRK_COUNT) - 1);
}

HOST_TEST(bad_values_are_named)
{
	static const char *const lines[] = {
		"cpu_quirks=maybe",
		"cpu_quirks_force=intel-invlpg",
		"cpu_quirks_force=off",
	};

	for (size_t i = 0; i < ARRAY_SIZE(lines); i++) {
		struct option_value values[CPU_QUIRK_OPTION_COUNT];
		struct cpu_quirk_request r;
		char copy[64];

		memset(&messages, 0, sizeof(messages));
		snprintf(copy, sizeof(copy), "%s", lines[i]);
		CHECK_EQ(cmdline_parse(copy, cpu_quirk_option_descs,
				       CPU_QUIRK_OPTION_COUNT, values, capture,
				       &messages),
			 1);
		CHECK(messages.count == 1 &&
			      strstr(messages.text[0], "bad value") &&
			      strstr(messages.text[0],
				     strchr(lines[i], '=') + 1),
		      "'%s': message '%s'", lines[i], messages.text[0]);
		cpu_quirk_request_from_values(&r, values);
		CHECK(r.automatic && !r.forced, "'%s': default not kept",
		      lines[i]);
	}
}

HOST_TEST(invlpgb_count_decodes)
{
	static const struct {
		uint32_t edx, pages;
	} counts[] = {
		{0x0000, 1},	 {0x0007, 8},	  {0x00ff, 256},
		{0xabcd0007, 8}, {0xffff, 65536},
	};
	struct cpu_features f;

	for (size_t i = 0; i < ARRAY_SIZE(counts); i++) {
		f = crafted("AuthenticAMD", 0x19, 0x11, 0);
		fake.fa_ebx = FA_EBX_INVLPGB;
		fake.fa_edx = counts[i].edx;
		cpu_decode(&f, fake_cpuid);
		CHECK(f.invlpgb, "INVLPGB bit not decoded");
		CHECK_EQ(f.invlpgb_max_pages, counts[i].pages);
	}
	fake.fa_ebx = ~FA_EBX_INVLPGB;
	cpu_decode(&f, fake_cpuid);
	CHECK(!f.invlpgb && !f.invlpgb_max_pages, "INVLPGB from other bits");
	/* The leaf beyond the maximum is not read. */
	fake.fa_ebx = FA_EBX_INVLPGB;
	fake.ext_max = 0x80000007U;
	cpu_decode(&f, fake_cpuid);
	CHECK(!f.invlpgb, "INVLPGB read beyond the last extended leaf");
}

/*
 * Quirks only take features away: no cpu_quirks_force= value makes the
 * kernel believe in an INVLPGB that CPUID does not report, which would
 * execute an instruction the CPU lacks (#UD).
 */
HOST_TEST(no_quirk_gives_invlpgb)
{
	struct cpu_features f = crafted("AuthenticAMD", 0x19, 0x11, 0);
	struct cpu_quirk_request r;

	CHECK_EQ(parse("cpu_quirks_force=all", &r), 0);
	cpu_quirks_decide(&f, &r);
	CHECK(!f.invlpgb && !f.invlpgb_max_pages,
	      "forced quirks gave INVLPGB to a CPU without it");
}

HOST_TEST(tce_decodes)
{
	struct cpu_features f = crafted("AuthenticAMD", 0x19, 0x11, 0);

	CHECK(!f.tce, "TCE without its bit");
	fake.fx_ecx = FX_ECX_TCE;
	cpu_decode(&f, fake_cpuid);
	CHECK(f.tce, "TCE bit not decoded");
}

HOST_TEST(aps_must_agree_with_the_boot_cpu)
{
	/* Every feature the kernel picks a path by, once, from the boot CPU. */
	static const size_t used[] = {
		offsetof(struct cpu_features, nx),
		offsetof(struct cpu_features, pge),
		offsetof(struct cpu_features, pat),
		offsetof(struct cpu_features, gbpages),
		offsetof(struct cpu_features, pcid),
		offsetof(struct cpu_features, invpcid),
		offsetof(struct cpu_features, x2apic),
		offsetof(struct cpu_features, tsc_deadline),
		offsetof(struct cpu_features, fxsr),
		offsetof(struct cpu_features, xsave),
		offsetof(struct cpu_features, avx),
		offsetof(struct cpu_features, sep),
		offsetof(struct cpu_features, smep),
		offsetof(struct cpu_features, smap),
		offsetof(struct cpu_features, umip),
	};
	struct cpu_features boot = crafted("GenuineIntel", 6, 0x9a, 3);
	struct cpu_features ap = boot;

	CHECK(cpu_features_agree(&ap, &boot), "identical CPUs disagree");
	/* A hybrid part's E-core: another model, stepping and microcode. */
	ap.model = 0x97;
	ap.stepping = 0;
	ap.microcode = boot.microcode + 1;
	CHECK(cpu_features_agree(&ap, &boot), "only the model differs");
	for (size_t i = 0; i < ARRAY_SIZE(used) * 2; i++) {
		struct cpu_features one = boot, other = boot;
		bool has =
			i % 2; /* the AP has it and the boot CPU not, or back */

		*(bool *)((char *)&one + used[i / 2]) = has;
		*(bool *)((char *)&other + used[i / 2]) = !has;
		CHECK(!cpu_features_agree(&one, &other),
		      "the feature at offset %zu differs, yet they agree",
		      used[i / 2]);
	}
}

HOST_TEST(detail_names_the_revisions)
{
	struct cpu_features f = decided("GenuineIntel", 6, 0xba, 0x4116);
	char buf[128];

	cpu_quirk_table[CPU_QUIRK_INVLPG_GLOBAL_PCID].detail(&f, buf,
							     sizeof(buf));
	CHECK(strstr(buf, "Raptor Lake-P") &&
		      strstr(buf, "microcode 0x4116, fixed from 0x4117"),
	      "detail: %s", buf);
	cpu_quirk_table[CPU_QUIRK_INVPCID_WITHOUT_PCID].detail(&f, buf,
							       sizeof(buf));
	CHECK(strstr(buf, "intel-invlpg-global-pcid"), "detail: %s", buf);
}

#define F1_ECX_TSC_DEADLINE (1U << 24)
#define F1_ECX_HYPERVISOR   (1U << 31)
#define F7_EBX_TSC_ADJUST   (1U << 1)
#define F21_EAX_LFENCE	    (1U << 2)

/* An Intel family 6 CPU with TSC-deadline mode, of a model and stepping. */
static struct cpu_features deadline_cpu(uint32_t model, uint32_t stepping,
					uint32_t microcode)
{
	struct cpu_features f;

	fake = (struct fake_cpu){.vendor = "GenuineIntel",
				 .max_leaf = 0x16,
				 .signature = signature(6, model, stepping),
				 .f1_ecx = F1_ECX_TSC_DEADLINE,
				 .ext_max = 0x80000008U};
	cpu_decode(&f, fake_cpuid);
	f.microcode_known = microcode != MICROCODE_UNSET;
	f.microcode = f.microcode_known ? microcode : 0;
	cpu_quirks_decide(&f, &automatic);
	return f;
}

/* Linux's deadline_match, written out: model, steppings, first good rev. */
static const struct {
	uint32_t model, first_stepping, last_stepping, fixed;
} deadline_errata[] = {
	{0x3f, 2, 2, 0x3a},	   {0x3f, 4, 4, 0x0f},
	{0x4f, 0, 15, 0x0b000020}, {0x56, 2, 2, 0x00000011},
	{0x56, 3, 3, 0x0700000e},  {0x56, 4, 4, 0x0f00000c},
	{0x56, 5, 5, 0x0e000003},  {0x55, 3, 3, 0x01000136},
	{0x55, 4, 4, 0x02000014},  {0x3c, 0, 15, 0x22},
	{0x45, 0, 15, 0x20},	   {0x46, 0, 15, 0x17},
	{0x3d, 0, 15, 0x25},	   {0x47, 0, 15, 0x17},
	{0x4e, 0, 15, 0xb2},	   {0x5e, 0, 15, 0xb2},
	{0x8e, 0, 15, 0x52},	   {0x9e, 0, 15, 0x52},
};

HOST_TEST(deadline_errata_lose_tsc_deadline)
{
	const char *taker;

	for (size_t i = 0; i < ARRAY_SIZE(deadline_errata); i++) {
		uint32_t model = deadline_errata[i].model;

		for (uint32_t s = deadline_errata[i].first_stepping;
		     s <= deadline_errata[i].last_stepping; s++) {
			struct cpu_features f = deadline_cpu(
				model, s, deadline_errata[i].fixed - 1);

			CHECK(f.tsc_deadline, "CPUID bit not decoded");
			CHECK_EQ(f.quirks_applied,
				 BIT(CPU_QUIRK_TSC_DEADLINE_MICROCODE));
			CHECK(!cpu_tsc_deadline_usable(&f),
			      "model %#x stepping %u below %#x: usable", model,
			      s, deadline_errata[i].fixed);
			taker = cpu_quirk_taking(&f, CPU_QUIRK_NO_TSC_DEADLINE);
			CHECK(taker && !strcmp(taker,
					       "intel-tsc-deadline-microcode"),
			      "taken by %s", taker ? taker : "(none)");
			CHECK(cpu_pcid_usable(&f) == f.pcid,
			      "the deadline quirk touched PCID");

			f = deadline_cpu(model, s, deadline_errata[i].fixed);
			CHECK(!f.quirks_matched && cpu_tsc_deadline_usable(&f),
			      "model %#x stepping %u at %#x: quirk matched",
			      model, s, deadline_errata[i].fixed);
			f = deadline_cpu(model, s, MICROCODE_UNSET);
			CHECK(!cpu_tsc_deadline_usable(&f),
			      "model %#x stepping %u, revision unknown: usable",
			      model, s);
		}
	}
}

HOST_TEST(deadline_neighbours_keep_tsc_deadline)
{
	static const struct {
		uint32_t model, stepping;
	} neighbours[] = {
		/* Haswell-X and Broadwell-DE steppings off the list. */
		{0x3f, 1},
		{0x3f, 3},
		{0x56, 1},
		{0x56, 6},
		/* Skylake-X from stepping 5 (Cascade Lake, Cooper Lake). */
		{0x55, 2},
		{0x55, 5},
		{0x55, 7},
		{0x55, 11},
		/* Later and other models. */
		{0xa5, 2},
		{0x6a, 6},
		{0x97, 2},
		{0x8c, 1},
		{0x3e, 4},
		{0x2d, 7},
	};
	struct cpu_features f;
	char buf[160];

	for (size_t i = 0; i < ARRAY_SIZE(neighbours); i++) {
		f = deadline_cpu(neighbours[i].model, neighbours[i].stepping,
				 0);
		CHECK(!(f.quirks_matched &
			BIT(CPU_QUIRK_TSC_DEADLINE_MICROCODE)) &&
			      cpu_tsc_deadline_usable(&f),
		      "model %#x stepping %u, microcode 0: quirk matched",
		      neighbours[i].model, neighbours[i].stepping);
	}
	/* Under a hypervisor the timer is emulated: Linux skips the check. */
	fake.f1_ecx = F1_ECX_TSC_DEADLINE | F1_ECX_HYPERVISOR;
	fake.signature = signature(6, 0x5e, 3);
	cpu_decode(&f, fake_cpuid);
	f.microcode_known = true;
	f.microcode = 1;
	cpu_quirks_decide(&f, &automatic);
	CHECK(f.hypervisor_bit && cpu_tsc_deadline_usable(&f),
	      "Skylake under a hypervisor lost TSC-deadline");
	cpu_quirk_table[CPU_QUIRK_TSC_DEADLINE_MICROCODE].detail(&f, buf,
								 sizeof(buf));
	CHECK(strstr(buf, "hypervisor"), "detail: %s", buf);
	/* Without the CPUID bit there is nothing to take away. */
	f = deadline_cpu(0x5e, 3, 1);
	f.tsc_deadline = false;
	cpu_quirks_decide(&f, &automatic);
	CHECK_EQ(f.quirks_matched, 0);
	/* Other vendors and families with a listed model number. */
	f = crafted("AuthenticAMD", 6, 0x5e, 0);
	f.tsc_deadline = true;
	cpu_quirks_decide(&f, &automatic);
	CHECK(cpu_tsc_deadline_usable(&f), "AMD model 0x5e lost it");
	f = crafted("GenuineIntel", 0xf, 0x3c, 0);
	f.tsc_deadline = true;
	cpu_quirks_decide(&f, &automatic);
	CHECK(cpu_tsc_deadline_usable(&f), "Intel family 0xf lost it");
}

HOST_TEST(deadline_detail_names_the_revisions)
{
	struct cpu_features f = deadline_cpu(0x9e, 10, 0x4e);
	char buf[160];

	cpu_quirk_table[CPU_QUIRK_TSC_DEADLINE_MICROCODE].detail(&f, buf,
								 sizeof(buf));
	CHECK(strstr(buf, "Kaby Lake") &&
		      strstr(buf, "stepping 10, microcode 0x4e, works from "
				  "0x52"),
	      "detail: %s", buf);
}

/* An AMD-style CPU of a vendor and family, LfenceAlwaysSerializing or not. */
static struct cpu_features lfence_cpu(const char *vendor, uint32_t family,
				      bool always_serializing)
{
	struct cpu_features f;

	fake = (struct fake_cpu){
		.vendor = vendor,
		.max_leaf = 0xd,
		.signature = signature(family, 1, 0),
		.ext_max = always_serializing ? 0x80000021U : 0x80000008U,
		.f21_eax = always_serializing ? F21_EAX_LFENCE : 0};
	cpu_decode(&f, fake_cpuid);
	cpu_quirks_decide(&f, &automatic);
	return f;
}

HOST_TEST(amd_lfence_families_get_de_cfg)
{
	static const uint32_t amd_needs[] = {0x10, 0x12, 0x14,
					     0x15, 0x16, 0x17};
	static const struct {
		const char *vendor;
		uint32_t family;
	} others[] = {
		/* 0Fh and 11h: LFENCE always serialises, no DE_CFG bit. */
		{"AuthenticAMD", 0xf},	{"AuthenticAMD", 0x11},
		{"AuthenticAMD", 0x19}, {"AuthenticAMD", 0x1a},
		{"HygonGenuine", 0x17}, {"GenuineIntel", 6},
		{"GenuineIntel", 0x15}, {"CentaurHauls", 6},
	};
	struct cpu_features f;

	for (size_t i = 0; i < ARRAY_SIZE(amd_needs); i++) {
		f = lfence_cpu("AuthenticAMD", amd_needs[i], false);
		CHECK_EQ(f.family, amd_needs[i]);
		CHECK_EQ(f.quirks_applied,
			 BIT(CPU_QUIRK_AMD_LFENCE_SERIALIZING));
		CHECK(f.quirk_effects & CPU_QUIRK_SET_LFENCE_SERIALIZING,
		      "family %#x: no DE_CFG effect", amd_needs[i]);
		/* CPUID saying LFENCE always serialises: nothing to do. */
		f = lfence_cpu("AuthenticAMD", amd_needs[i], true);
		CHECK(f.lfence_always_serializing, "0x80000021 not decoded");
		CHECK_EQ(f.quirks_matched, 0);
	}
	f = lfence_cpu("HygonGenuine", 0x18, false);
	CHECK_EQ(f.quirks_applied, BIT(CPU_QUIRK_AMD_LFENCE_SERIALIZING));
	for (size_t i = 0; i < ARRAY_SIZE(others); i++) {
		f = lfence_cpu(others[i].vendor, others[i].family, false);
		CHECK(!(f.quirk_effects & CPU_QUIRK_SET_LFENCE_SERIALIZING),
		      "%s family %#x got DE_CFG set", others[i].vendor,
		      others[i].family);
	}
}

HOST_TEST(lfence_detail_says_what_was_done)
{
	static const struct {
		enum lfence_setting setting;
		const char *says;
	} outcomes[] = {
		{LFENCE_ALREADY_SET, "already set by the firmware"},
		{LFENCE_SET_NOW, "was clear: set"},
		{LFENCE_MSR_FAULTED, "#GP"},
		{LFENCE_WRITE_IGNORED, "reads back clear"},
	};
	struct cpu_features f = lfence_cpu("AuthenticAMD", 0x17, false);
	struct cpu_quirk_request r;
	char buf[160];

	for (size_t i = 0; i < ARRAY_SIZE(outcomes); i++) {
		f.lfence = outcomes[i].setting;
		cpu_quirk_table[CPU_QUIRK_AMD_LFENCE_SERIALIZING].detail(
			&f, buf, sizeof(buf));
		CHECK(strstr(buf, "family 0x17") &&
			      strstr(buf, outcomes[i].says),
		      "detail: %s", buf);
	}
	/* Forced on QEMU's CPU (AMD family 0Fh): applied, not matched. */
	f = lfence_cpu("AuthenticAMD", 0xf, false);
	CHECK_EQ(parse("cpu_quirks_force=amd-lfence-serializing", &r), 0);
	cpu_quirks_decide(&f, &r);
	CHECK(!f.quirks_matched &&
		      (f.quirk_effects & CPU_QUIRK_SET_LFENCE_SERIALIZING),
	      "forcing did not apply it");
	cpu_quirk_table[CPU_QUIRK_AMD_LFENCE_SERIALIZING].detail(&f, buf,
								 sizeof(buf));
	CHECK(strstr(buf, "not a listed family"), "detail: %s", buf);
}

HOST_TEST(tsc_adjust_decodes)
{
	struct cpu_features f = crafted("GenuineIntel", 6, 0x55, 0);

	CHECK(!f.tsc_adjust, "TSC_ADJUST without its bit");
	fake.f7_ebx |= F7_EBX_TSC_ADJUST;
	cpu_decode(&f, fake_cpuid);
	CHECK(f.tsc_adjust, "TSC_ADJUST bit not decoded");
	CHECK(f.invpcid, "the leaf's other bits kept");
}
