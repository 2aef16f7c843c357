// SPDX-License-Identifier: MIT
/*
 * CPUID, decoded: the leaves come from a reader, the CPUID instruction at
 * boot (cpu/cpu.c) or crafted tables in the host tests
 * (tests/host/test_cpu_quirks.c), so every field below is tested on CPUs
 * no emulator here is.
 */
#include "cpu/cpu.h"
#include "arch/x86.h"
#include "lib/string.h"

/* CPUID leaves and bits (Intel SDM Vol. 2A, CPUID, tables 3-8 to 3-11). */
#define LEAF_VENDOR	    0x00000000U
#define LEAF_FEATURES	    0x00000001U
#define LEAF_EXT_FEATURES7  0x00000007U
#define LEAF_HYPERVISOR	    0x40000000U
#define LEAF_EXT_MAX	    0x80000000U
#define LEAF_EXT_FEATURES   0x80000001U
#define LEAF_BRAND_FIRST    0x80000002U
#define LEAF_BRAND_LAST	    0x80000004U
#define LEAF_POWER	    0x80000007U
#define LEAF_ADDR_SIZES	    0x80000008U
#define LEAF_EXT_FEATURES21 0x80000021U

#define F1_ECX_PCID	     (1U << 17)
#define F1_ECX_X2APIC	     (1U << 21)
#define F1_ECX_TSC_DEADLINE  (1U << 24)
#define F1_ECX_XSAVE	     (1U << 26)
#define F1_ECX_AVX	     (1U << 28)
#define F1_ECX_HYPERVISOR    (1U << 31)
#define F1_EDX_SEP	     (1U << 11)
#define F1_EDX_PGE	     (1U << 13)
#define F1_EDX_PAT	     (1U << 16)
#define F1_EDX_FXSR	     (1U << 24)
#define F7_EBX_FSGSBASE	     (1U << 0)
#define F7_EBX_TSC_ADJUST    (1U << 1)
#define F7_EBX_SMEP	     (1U << 7)
#define F7_EBX_ERMS	     (1U << 9)
#define F7_EBX_INVPCID	     (1U << 10)
#define F7_EBX_SMAP	     (1U << 20)
#define F7_ECX_UMIP	     (1U << 2)
#define FX_EDX_NX	     (1U << 20)
#define FX_EDX_GBPAGES	     (1U << 26)
#define FX_EDX_RDTSCP	     (1U << 27)
#define FP_EDX_INVARIANT_TSC (1U << 8)
/* AMD APM Vol. 3, Appendix E.4: CPUID Fn8000_0001_ECX, Fn8000_0008. */
#define FX_ECX_TCE	     (1U << 17)
#define FA_EBX_INVLPGB	     (1U << 3)
#define FA_EDX_INVLPGB_COUNT 0xffffU /* the most pages, less one */
/* AMD APM Vol. 3, CPUID Fn8000_0021_EAX: LfenceAlwaysSerializing. */
#define F21_EAX_LFENCE_ALWAYS_SERIALIZING (1U << 2)

static void copy_regs(char *dst, const uint32_t *regs, size_t n)
{
	memcpy(dst, regs, n * sizeof(uint32_t));
	dst[n * sizeof(uint32_t)] = '\0';
}

/* Trims the leading spaces Intel pads brand strings with. */
static void decode_brand(struct cpu_features *f, cpuid_reader read)
{
	char *p;
	size_t len;

	if (f->max_ext_leaf < LEAF_BRAND_LAST) {
		strlcpy(f->brand, "(no brand string)", sizeof(f->brand));
		return;
	}
	for (uint32_t leaf = LEAF_BRAND_FIRST; leaf <= LEAF_BRAND_LAST;
	     leaf++) {
		struct cpuid_regs r = read(leaf, 0);
		uint32_t regs[4] = {r.eax, r.ebx, r.ecx, r.edx};

		copy_regs(f->brand + (leaf - LEAF_BRAND_FIRST) * 16, regs, 4);
	}
	for (p = f->brand; *p == ' '; p++)
		;
	len = strlen(p);
	memmove(f->brand, p, len + 1);
}

void cpu_decode(struct cpu_features *f, cpuid_reader read)
{
	struct cpuid_regs r = read(LEAF_VENDOR, 0);
	uint32_t vendor[3] = {r.ebx, r.edx, r.ecx};
	uint32_t family;

	memset(f, 0, sizeof(*f));
	f->max_leaf = r.eax;
	copy_regs(f->vendor, vendor, 3);

	r = read(LEAF_FEATURES, 0);
	family = (r.eax >> 8) & 0xf;
	f->family = family == 0xf ? family + ((r.eax >> 20) & 0xff) : family;
	f->model = ((r.eax >> 4) & 0xf) |
		   ((family >= 6 ? (r.eax >> 16) & 0xf : 0) << 4);
	f->stepping = r.eax & 0xf;
	f->pcid = r.ecx & F1_ECX_PCID;
	f->x2apic = r.ecx & F1_ECX_X2APIC;
	f->tsc_deadline = r.ecx & F1_ECX_TSC_DEADLINE;
	f->xsave = r.ecx & F1_ECX_XSAVE;
	f->avx = r.ecx & F1_ECX_AVX;
	f->hypervisor_bit = r.ecx & F1_ECX_HYPERVISOR;
	f->sep = r.edx & F1_EDX_SEP;
	f->pge = r.edx & F1_EDX_PGE;
	f->pat = r.edx & F1_EDX_PAT;
	f->fxsr = r.edx & F1_EDX_FXSR;

	if (f->max_leaf >= LEAF_EXT_FEATURES7) {
		r = read(LEAF_EXT_FEATURES7, 0);
		f->fsgsbase = r.ebx & F7_EBX_FSGSBASE;
		f->tsc_adjust = r.ebx & F7_EBX_TSC_ADJUST;
		f->smep = r.ebx & F7_EBX_SMEP;
		f->erms = r.ebx & F7_EBX_ERMS;
		f->invpcid = r.ebx & F7_EBX_INVPCID;
		f->smap = r.ebx & F7_EBX_SMAP;
		f->umip = r.ecx & F7_ECX_UMIP;
	}

	f->max_ext_leaf = read(LEAF_EXT_MAX, 0).eax;
	if (f->max_ext_leaf >= LEAF_EXT_FEATURES) {
		r = read(LEAF_EXT_FEATURES, 0);
		f->nx = r.edx & FX_EDX_NX;
		f->gbpages = r.edx & FX_EDX_GBPAGES;
		f->rdtscp = r.edx & FX_EDX_RDTSCP;
		f->tce = r.ecx & FX_ECX_TCE;
	}
	if (f->max_ext_leaf >= LEAF_POWER)
		f->invariant_tsc =
			read(LEAF_POWER, 0).edx & FP_EDX_INVARIANT_TSC;
	if (f->max_ext_leaf >= LEAF_ADDR_SIZES) {
		r = read(LEAF_ADDR_SIZES, 0);
		f->phys_addr_bits = r.eax & 0xff;
		f->virt_addr_bits = (r.eax >> 8) & 0xff;
		f->invlpgb = r.ebx & FA_EBX_INVLPGB;
		if (f->invlpgb)
			f->invlpgb_max_pages =
				(r.edx & FA_EDX_INVLPGB_COUNT) + 1;
	} else {
		f->phys_addr_bits = 36;
		f->virt_addr_bits = 48;
	}
	if (f->max_ext_leaf >= LEAF_EXT_FEATURES21)
		f->lfence_always_serializing =
			read(LEAF_EXT_FEATURES21, 0).eax &
			F21_EAX_LFENCE_ALWAYS_SERIALIZING;
	decode_brand(f, read);

	/* The hypervisor leaves exist only when the hypervisor bit is set. */
	if (f->hypervisor_bit) {
		r = read(LEAF_HYPERVISOR, 0);
		uint32_t sig[3] = {r.ebx, r.ecx, r.edx};

		copy_regs(f->hypervisor, sig, 3);
	}
}

bool cpu_features_agree(const struct cpu_features *ap,
			const struct cpu_features *boot)
{
	/* Each line is a path the kernel picks once, from the boot CPU,
	 * and every CPU then takes: an AP without the feature would fault
	 * or run a different, and weaker, kernel. */
	return ap->nx == boot->nx && ap->pge == boot->pge &&
	       ap->pat == boot->pat && ap->gbpages == boot->gbpages &&
	       ap->pcid == boot->pcid && ap->invpcid == boot->invpcid &&
	       ap->x2apic == boot->x2apic &&
	       ap->tsc_deadline == boot->tsc_deadline &&
	       ap->fxsr == boot->fxsr && ap->xsave == boot->xsave &&
	       ap->avx == boot->avx && ap->sep == boot->sep &&
	       ap->smep == boot->smep && ap->smap == boot->smap &&
	       ap->umip == boot->umip;
}
