/* SPDX-License-Identifier: MIT */
/*
 * CPU features, probed with CPUID, never assumed: QEMU TCG lacks PCID,
 * INVPCID, x2APIC and TSC-deadline; Bochs has them; real CPUs and VMs vary.
 * Every hardware path in shootdown is chosen from this structure at run time.
 */
#ifndef CPU_CPU_H
#define CPU_CPU_H

#include "lib/types.h"

struct cpuid_regs;

/*
 * What an applied quirk (cpu/cpu_quirks.h) takes away, whatever CPUID
 * says: the subsystem that would use the feature asks cpu_*_usable below.
 * Or what it sets on every CPU: cpu_quirks_this_cpu does it.
 */
enum cpu_quirk_effect {
	CPU_QUIRK_NO_PCID = 1U << 0,
	CPU_QUIRK_NO_INVPCID = 1U << 1,
	CPU_QUIRK_NO_TSC_DEADLINE = 1U << 2,
	CPU_QUIRK_SET_LFENCE_SERIALIZING = 1U << 3, /* AMD DE_CFG bit 1 */
};

/* What cpu_quirks_this_cpu found in AMD's DE_CFG and did with it. */
enum lfence_setting {
	LFENCE_NOT_TOUCHED,   /* the quirk is not applied */
	LFENCE_ALREADY_SET,   /* the firmware had set the bit */
	LFENCE_SET_NOW,	      /* the bit was clear: set it */
	LFENCE_MSR_FAULTED,   /* DE_CFG read or write raised #GP */
	LFENCE_WRITE_IGNORED, /* written, but reads back clear */
};

struct cpu_features {
	char vendor[13];
	char brand[49];
	char hypervisor[13]; /* CPUID 0x40000000 signature, "" if none */
	uint32_t family, model, stepping;
	uint32_t max_leaf, max_ext_leaf;
	uint8_t phys_addr_bits, virt_addr_bits;

	bool pge;	     /* global pages */
	bool pat;	     /* page attribute table */
	bool fxsr;	     /* FXSAVE/FXRSTOR */
	bool xsave;	     /* XSAVE family */
	bool pcid;	     /* process-context identifiers */
	bool invpcid;	     /* INVPCID instruction */
	bool x2apic;	     /* x2APIC mode */
	bool tsc_deadline;   /* local APIC TSC-deadline timer */
	bool smep;	     /* supervisor-mode execution prevention */
	bool smap;	     /* supervisor-mode access prevention */
	bool umip;	     /* user-mode instruction prevention */
	bool sep;	     /* SYSENTER/SYSEXIT and their MSRs */
	bool gbpages;	     /* 1 GiB pages */
	bool nx;	     /* execute-disable */
	bool rdtscp;	     /* RDTSCP instruction */
	bool invariant_tsc;  /* TSC rate constant across P/C-states */
	bool hypervisor_bit; /* CPUID.1:ECX[31]: running in a VM */
	bool fsgsbase;	     /* RDFSBASE and friends */
	bool avx;	     /* AVX state, saved by XSAVE when present */
	bool erms;	     /* fast REP MOVSB/STOSB */
	bool tsc_adjust;     /* IA32_TSC_ADJUST MSR */
	/* AMD CPUID Fn8000_0021 EAX[2]: LFENCE is always dispatch-serialising. */
	bool lfence_always_serializing;

	/*
	 * AMD's broadcast invalidation (INVLPGB, and TLBSYNC to wait for it),
	 * with the most pages one INVLPGB takes: mm/tlb.c's to use
	 * (tlb_policy_settle). Reported, not used: AMD's translation cache
	 * extension (EFER.TCE: INVLPG drops only the paging-structure entries
	 * on the address's own walk).
	 */
	bool invlpgb;
	uint32_t invlpgb_max_pages;
	bool tce;

	/* The microcode revision (MSR 0x8B), read by cpu_apply_quirks. */
	bool microcode_known;
	uint32_t microcode;

	/* Bit q for quirk q of cpu/cpu_quirks.h (cpu_quirks_decide). */
	uint32_t quirks_matched; /* its table entry describes this CPU */
	uint32_t quirks_applied; /* in force, after cpu_quirks= */
	unsigned quirk_effects;	 /* enum cpu_quirk_effect, of those applied */
	/* This CPU's DE_CFG, for the census (cpu_quirks_this_cpu). */
	enum lfence_setting lfence;
};

/* One CPUID query: what the instruction returns for leaf and subleaf. */
typedef struct cpuid_regs (*cpuid_reader)(uint32_t leaf, uint32_t subleaf);

/* The boot CPU's features; application processors must match them. */
extern struct cpu_features boot_cpu;

/* 1 when SMAP is on: the interrupt and exception entry clears RFLAGS.AC
 * (trap/isr.asm reads it; cpu_enable_features writes it). */
extern uint8_t entry_clac;

void cpu_probe(struct cpu_features *f);

/*
 * Fills f from the CPUID leaves `read` returns (cpu/cpu_decode.c): pure
 * logic, so host tests feed it crafted leaves. Leaves the microcode and the
 * quirks to cpu_apply_quirks.
 */
void cpu_decode(struct cpu_features *f, cpuid_reader read);

/*
 * Whether an AP whose CPUID decoded to ap can take the paths the kernel
 * chose from the boot CPU's features: the same paging, APIC, timer, FPU
 * state, entry instructions and protections (cpu/cpu_decode.c). Hybrid parts
 * (P- and E-cores) agree on all of them; a mismatch keeps the AP stopped.
 */
bool cpu_features_agree(const struct cpu_features *ap,
			const struct cpu_features *boot);

/*
 * Reads f's microcode revision, decides which known quirks apply
 * (cpu/cpu_quirks.c, with the cpu_quirks= options) and does what they set
 * on this CPU (cpu_quirks_this_cpu, into f->lfence). On the boot CPU,
 * once the IDT is up (the MSR read may fault in an emulator) and the
 * command line parsed, before anything uses PCID or INVPCID.
 */
void cpu_apply_quirks(struct cpu_features *f);

/* PCID and INVPCID as CPUID reports them, less what a quirk took away. */
static inline bool cpu_pcid_usable(const struct cpu_features *f)
{
	return f->pcid && !(f->quirk_effects & CPU_QUIRK_NO_PCID);
}

static inline bool cpu_invpcid_usable(const struct cpu_features *f)
{
	return f->invpcid && !(f->quirk_effects & CPU_QUIRK_NO_INVPCID);
}

/* The local APIC's TSC-deadline mode, less what a quirk took away. */
static inline bool cpu_tsc_deadline_usable(const struct cpu_features *f)
{
	return f->tsc_deadline &&
	       !(f->quirk_effects & CPU_QUIRK_NO_TSC_DEADLINE);
}

/*
 * What the applied quirks set on this CPU (f: the boot CPU's decision),
 * with the MSR helpers that survive a #GP; the result in *setting. The
 * boot CPU's runs in cpu_apply_quirks, each AP's in its bring-up.
 */
void cpu_quirks_this_cpu(const struct cpu_features *f,
			 enum lfence_setting *setting);

/*
 * The CR0 and CR4 every CPU runs with, computed from the boot CPU's
 * features alone: nothing the firmware or INIT left there survives
 * (docs/cpu-quirks.md, "Control registers"). CR4.PCIDE is not in it: mm/
 * sets it after (tlb_policy.pcid).
 */
uint64_t cpu_wanted_cr0(void);
uint64_t cpu_wanted_cr4(const struct cpu_features *f);

/*
 * Writes CR0 and CR4 whole (caches on, with WBINVD first if they were
 * off), then EFER.NXE and XCR0, on this CPU, from the features.
 */
void cpu_enable_features(const struct cpu_features *f);

/* Prints what was found and which path each feature selects. */
void cpu_report(const struct cpu_features *f);

#endif
