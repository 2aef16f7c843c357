// SPDX-License-Identifier: MIT
#include "kernel/cpu.h"
#include "kernel/kprintf.h"
#include "lib/string.h"
#include "kernel/x86.h"

struct cpu_features boot_cpu;

/* CPUID leaves and bits (Intel SDM Vol. 2A, CPUID, tables 3-8 to 3-11). */
#define LEAF_VENDOR	   0x00000000U
#define LEAF_FEATURES	   0x00000001U
#define LEAF_EXT_FEATURES7 0x00000007U
#define LEAF_HYPERVISOR	   0x40000000U
#define LEAF_EXT_MAX	   0x80000000U
#define LEAF_EXT_FEATURES  0x80000001U
#define LEAF_BRAND_FIRST   0x80000002U
#define LEAF_BRAND_LAST	   0x80000004U
#define LEAF_POWER	   0x80000007U
#define LEAF_ADDR_SIZES	   0x80000008U

#define F1_ECX_PCID	     (1U << 17)
#define F1_ECX_X2APIC	     (1U << 21)
#define F1_ECX_TSC_DEADLINE  (1U << 24)
#define F1_ECX_XSAVE	     (1U << 26)
#define F1_ECX_AVX	     (1U << 28)
#define F1_ECX_HYPERVISOR    (1U << 31)
#define F1_EDX_PGE	     (1U << 13)
#define F1_EDX_PAT	     (1U << 16)
#define F1_EDX_FXSR	     (1U << 24)
#define F7_EBX_FSGSBASE	     (1U << 0)
#define F7_EBX_SMEP	     (1U << 7)
#define F7_EBX_ERMS	     (1U << 9)
#define F7_EBX_INVPCID	     (1U << 10)
#define F7_EBX_SMAP	     (1U << 20)
#define FX_EDX_NX	     (1U << 20)
#define FX_EDX_GBPAGES	     (1U << 26)
#define FX_EDX_RDTSCP	     (1U << 27)
#define FP_EDX_INVARIANT_TSC (1U << 8)

static void copy_regs(char *dst, const uint32_t *regs, size_t n)
{
	memcpy(dst, regs, n * sizeof(uint32_t));
	dst[n * sizeof(uint32_t)] = '\0';
}

/* Trims the leading spaces Intel pads brand strings with. */
static void probe_brand(struct cpu_features *f)
{
	char *p;
	size_t len;

	if (f->max_ext_leaf < LEAF_BRAND_LAST) {
		strlcpy(f->brand, "(no brand string)", sizeof(f->brand));
		return;
	}
	for (uint32_t leaf = LEAF_BRAND_FIRST; leaf <= LEAF_BRAND_LAST;
	     leaf++) {
		struct cpuid_regs r = cpuid(leaf, 0);
		uint32_t regs[4] = {r.eax, r.ebx, r.ecx, r.edx};

		copy_regs(f->brand + (leaf - LEAF_BRAND_FIRST) * 16, regs, 4);
	}
	for (p = f->brand; *p == ' '; p++)
		;
	len = strlen(p);
	memmove(f->brand, p, len + 1);
}

void cpu_probe(struct cpu_features *f)
{
	struct cpuid_regs r = cpuid(LEAF_VENDOR, 0);
	uint32_t vendor[3] = {r.ebx, r.edx, r.ecx};
	uint32_t family;

	memset(f, 0, sizeof(*f));
	f->max_leaf = r.eax;
	copy_regs(f->vendor, vendor, 3);

	r = cpuid(LEAF_FEATURES, 0);
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
	f->pge = r.edx & F1_EDX_PGE;
	f->pat = r.edx & F1_EDX_PAT;
	f->fxsr = r.edx & F1_EDX_FXSR;

	if (f->max_leaf >= LEAF_EXT_FEATURES7) {
		r = cpuid(LEAF_EXT_FEATURES7, 0);
		f->fsgsbase = r.ebx & F7_EBX_FSGSBASE;
		f->smep = r.ebx & F7_EBX_SMEP;
		f->erms = r.ebx & F7_EBX_ERMS;
		f->invpcid = r.ebx & F7_EBX_INVPCID;
		f->smap = r.ebx & F7_EBX_SMAP;
	}

	f->max_ext_leaf = cpuid(LEAF_EXT_MAX, 0).eax;
	if (f->max_ext_leaf >= LEAF_EXT_FEATURES) {
		r = cpuid(LEAF_EXT_FEATURES, 0);
		f->nx = r.edx & FX_EDX_NX;
		f->gbpages = r.edx & FX_EDX_GBPAGES;
		f->rdtscp = r.edx & FX_EDX_RDTSCP;
	}
	if (f->max_ext_leaf >= LEAF_POWER)
		f->invariant_tsc =
			cpuid(LEAF_POWER, 0).edx & FP_EDX_INVARIANT_TSC;
	if (f->max_ext_leaf >= LEAF_ADDR_SIZES) {
		r = cpuid(LEAF_ADDR_SIZES, 0);
		f->phys_addr_bits = r.eax & 0xff;
		f->virt_addr_bits = (r.eax >> 8) & 0xff;
	} else {
		f->phys_addr_bits = 36;
		f->virt_addr_bits = 48;
	}
	probe_brand(f);

	/* The hypervisor leaves exist only when the hypervisor bit is set. */
	if (f->hypervisor_bit) {
		r = cpuid(LEAF_HYPERVISOR, 0);
		uint32_t sig[3] = {r.ebx, r.ecx, r.edx};

		copy_regs(f->hypervisor, sig, 3);
	}
}

void cpu_enable_features(const struct cpu_features *f)
{
	uint64_t cr0 = read_cr0();
	uint64_t cr4 = read_cr4();

	/* x87/SSE usable (for user programs): no emulation, native errors. */
	cr0 = (cr0 & ~(CR0_EM | CR0_TS)) | CR0_MP | CR0_NE | CR0_WP;
	write_cr0(cr0);

	if (f->pge)
		cr4 |= CR4_PGE;
	if (f->fxsr)
		cr4 |= CR4_OSFXSR | CR4_OSXMMEXCPT;
	if (f->xsave)
		cr4 |= CR4_OSXSAVE;
	if (f->smep)
		cr4 |= CR4_SMEP;
	if (f->smap)
		cr4 |= CR4_SMAP;
	write_cr4(cr4);

	if (f->xsave)
		xsetbv(0, XCR0_X87 | XCR0_SSE | (f->avx ? XCR0_AVX : 0));
	if (f->nx)
		wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_NXE);
}

/* One row of the feature table: the path taken with the feature or without. */
static void feature_row(const char *name, bool present, const char *with,
			const char *without)
{
	kprintf("cpu:   %-14s%s      %s\n", name, present ? "yes" : "no ",
		present ? with : without);
}

void cpu_report(const struct cpu_features *f)
{
	kprintf("cpu: %s, family %u model %u stepping %u, \"%s\"\n", f->vendor,
		f->family, f->model, f->stepping, f->brand);
	kprintf("cpu: hypervisor: %s; address bits: %u physical, %u "
		"virtual\n",
		f->hypervisor[0] ? f->hypervisor
				 : (f->hypervisor_bit ? "(unnamed)" : "none"),
		f->phys_addr_bits, f->virt_addr_bits);
	kprintf("cpu:   feature       present  path\n");
	feature_row("NX", f->nx, "EFER.NXE on, data pages not executable",
		    "all pages executable");
	feature_row("global pages", f->pge,
		    "CR4.PGE on, kernel mappings global",
		    "kernel mappings flushed on every CR3 write");
	feature_row("SMEP", f->smep, "CR4.SMEP on",
		    "kernel may execute user pages");
	feature_row("SMAP", f->smap,
		    "CR4.SMAP on, STAC/CLAC around user access",
		    "kernel may touch user pages");
	feature_row("1 GiB pages", f->gbpages, "direct map uses 1 GiB pages",
		    "direct map uses 2 MiB pages");
	feature_row("XSAVE", f->xsave, "XSAVE for FPU state",
		    f->fxsr ? "FXSAVE for FPU state" : "no FPU state saving");
	feature_row("PCID", f->pcid, "available to mm/",
		    "every CR3 write flushes");
	feature_row("INVPCID", f->invpcid, "available to mm/",
		    "CR3 writes and INVLPG instead");
	feature_row("x2APIC", f->x2apic, "available to apic/", "xAPIC (MMIO)");
	feature_row("TSC-deadline", f->tsc_deadline, "available to apic/",
		    "LAPIC timer counts");
	feature_row("invariant TSC", f->invariant_tsc, "TSC usable as a clock",
		    "TSC rate may vary: timings marked");
	feature_row("RDTSCP", f->rdtscp, "benchmarks order RDTSC with LFENCE",
		    "benchmarks order RDTSC with LFENCE");
}
