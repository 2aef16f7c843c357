// SPDX-License-Identifier: MIT
#include "cpu/cpu.h"
#include "cpu/cpu_quirks.h"
#include "arch/extable.h"
#include "console/kprintf.h"
#include "lib/format.h"
#include "lib/string.h"
#include "arch/x86.h"

struct cpu_features boot_cpu;
uint8_t entry_clac;

static struct cpuid_regs cpuid_instruction(uint32_t leaf, uint32_t subleaf)
{
	return cpuid(leaf, subleaf);
}

void cpu_probe(struct cpu_features *f)
{
	cpu_decode(f, cpuid_instruction);
}

/*
 * The microcode revision. Intel's is the high half of IA32_BIOS_SIGN_ID
 * once CPUID leaf 1 has run after a write of 0 there (SDM Vol. 3A, "Microcode
 * Update Facilities"); AMD's patch level is the low half of the same MSR.
 * An emulator without the MSR answers with a #GP: the revision stays
 * unknown.
 */
static void read_microcode(struct cpu_features *f)
{
	bool intel = !strcmp(f->vendor, "GenuineIntel");
	uint64_t value;

	if (!intel && strcmp(f->vendor, "AuthenticAMD"))
		return;
	if (intel && probe_wrmsr(MSR_BIOS_SIGN_ID, 0))
		return;
	(void)cpuid(1, 0);
	if (probe_rdmsr(MSR_BIOS_SIGN_ID, &value))
		return;
	f->microcode = intel ? (uint32_t)(value >> 32) : (uint32_t)value;
	f->microcode_known = true;
}

/*
 * DE_CFG bit 1 (cpu/cpu_quirks.c, amd-lfence-serializing). The MSR is
 * read and written with the helpers that survive a #GP: an emulator, or a
 * CPU forced into the quirk, may not have it. Read back after the write:
 * a hypervisor may accept the write and keep the bit clear.
 */
static enum lfence_setting set_lfence_serializing(void)
{
	uint64_t value;

	if (probe_rdmsr(MSR_AMD_DE_CFG, &value))
		return LFENCE_MSR_FAULTED;
	if (value & AMD_DE_CFG_LFENCE_SERIALIZE)
		return LFENCE_ALREADY_SET;
	if (probe_wrmsr(MSR_AMD_DE_CFG, value | AMD_DE_CFG_LFENCE_SERIALIZE) ||
	    probe_rdmsr(MSR_AMD_DE_CFG, &value))
		return LFENCE_MSR_FAULTED;
	return value & AMD_DE_CFG_LFENCE_SERIALIZE ? LFENCE_SET_NOW
						   : LFENCE_WRITE_IGNORED;
}

void cpu_quirks_this_cpu(const struct cpu_features *f,
			 enum lfence_setting *setting)
{
	*setting = LFENCE_NOT_TOUCHED;
	if (f->quirk_effects & CPU_QUIRK_SET_LFENCE_SERIALIZING)
		*setting = set_lfence_serializing();
}

void cpu_apply_quirks(struct cpu_features *f)
{
	read_microcode(f);
	cpu_quirks_decide(f, cpu_quirks_requested());
	cpu_quirks_this_cpu(f, &f->lfence);
}

uint64_t cpu_wanted_cr0(void)
{
	/*
	 * Protected mode and paging (long mode), write protection in ring 0,
	 * x87/SSE usable with native error reporting, no emulation and no
	 * task-switch trap. CD and NW clear: caches on, write-back. AM clear:
	 * no user program here asks for alignment-check faults.
	 */
	return CR0_PE | CR0_MP | CR0_ET | CR0_NE | CR0_WP | CR0_PG;
}

uint64_t cpu_wanted_cr4(const struct cpu_features *f)
{
	/*
	 * PAE: long mode requires it. MCE: with it clear, a machine check
	 * shuts the machine down instead of raising #MC (SDM Vol. 3B,
	 * "Machine-Check Architecture"), so a hardware error would leave no
	 * trace at all.
	 */
	uint64_t cr4 = CR4_PAE | CR4_MCE;

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
	/* Ring 3 has no use for the descriptor-table and machine-status
	 * reads; with UMIP they raise #GP there instead of telling user
	 * programs where the kernel keeps its GDT and IDT. */
	if (f->umip)
		cr4 |= CR4_UMIP;
	return cr4;
}

/*
 * An AP arrives from INIT with CD and NW set (SDM Vol. 3A, "Processor
 * State After Reset": CR0 60000010H), and INIT does not empty the caches.
 * With NW set a write that hits the cache need not reach memory, so the
 * caches may hold lines memory does not have. WBINVD while CD is still set
 * writes them back and empties the caches, and no line can be filled
 * before the CR0 write (CD stops fills): caching then starts from empty
 * caches that agree with memory, the order the SDM's cache-control chapter
 * gives for changing cache modes.
 */
static void write_cr0_caches_on(uint64_t wanted)
{
	if (read_cr0() & CR0_CD)
		wbinvd();
	write_cr0(wanted);
}

void cpu_enable_features(const struct cpu_features *f)
{
	write_cr0_caches_on(cpu_wanted_cr0());
	/* The whole value, so nothing INIT or the firmware left (TSD, DE,
	 * VME, PCE) survives. CR4.PCIDE is mm/'s (tlb_policy): it is kept
	 * as found, which at boot is clear. */
	write_cr4(cpu_wanted_cr4(f) | (read_cr4() & CR4_PCIDE));
	/* The interrupt entry (trap/isr.asm) clears RFLAGS.AC with CLAC,
	 * which exists only with SMAP; every CPU writes the same value. */
	entry_clac = f->smap;

	if (f->xsave)
		xsetbv(0, XCR0_X87 | XCR0_SSE | (f->avx ? XCR0_AVX : 0));
	if (f->nx)
		wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_NXE);
}

#define TAKEN_PATH_MAX 64

/* One row of the feature table: the path taken with the feature or without. */
static void feature_row(const char *name, bool present, const char *with,
			const char *without)
{
	kprintf("cpu:   %-14s%s      %s\n", name, present ? "yes" : "no ",
		present ? with : without);
}

/* The path of a feature a quirk took away: which one, in the table. */
static const char *taken_path(const char *taker, char *buf)
{
	if (!taker)
		return "available to mm/";
	ksnprintf(buf, TAKEN_PATH_MAX, "not used: quirk %s", taker);
	return buf;
}

static void quirk_report(const struct cpu_features *f, unsigned q)
{
	const struct cpu_quirk_desc *d = &cpu_quirk_table[q];
	bool matched = f->quirks_matched >> q & 1;
	bool applied = f->quirks_applied >> q & 1;
	char detail[128];

	if (applied)
		kprintf("cpu: quirk %s: %s (%s)\n", cpu_quirk_names[q],
			d->decision,
			matched ? "fits this CPU"
				: "forced by cpu_quirks_force=");
	else
		kprintf("cpu: quirk %s: fits this CPU, not applied "
			"(cpu_quirks=off): %s as CPUID says\n",
			cpu_quirk_names[q], d->affects);
	kprintf("cpu:   %s\n", d->detail(f, detail, sizeof(detail)));
	kprintf("cpu:   why: %s\n", d->reason);
}

/* The table's verdict on this CPU; one line when no entry concerns it. */
static void quirks_report(const struct cpu_features *f)
{
	char microcode[16] = "unknown";

	if (f->microcode_known)
		ksnprintf(microcode, sizeof(microcode), "0x%x", f->microcode);
	if (!(f->quirks_matched | f->quirks_applied)) {
		kprintf("cpu: quirks: none of the %u known applies (microcode "
			"%s, cpu_quirks=%s)\n",
			(unsigned)CPU_QUIRK_COUNT, microcode,
			cpu_quirks_requested()->automatic ? "auto" : "off");
		return;
	}
	for (unsigned q = 0; q < CPU_QUIRK_COUNT; q++) {
		if ((f->quirks_matched | f->quirks_applied) >> q & 1)
			quirk_report(f, q);
	}
}

/*
 * What the CPU has and the kernel leaves alone: TLB hardware a student
 * should know is there (docs/cpu-quirks.md, "Not used yet"). INVLPGB is
 * the TLB policy's, reported with the boot summary once it is settled.
 */
static void unused_report(const struct cpu_features *f)
{
	kprintf("cpu: TCE: %s\n",
		f->tce ? "present; not used (EFER.TCE off: INVLPG drops "
			 "every cached upper-level entry)"
		       : "absent (AMD's translation cache extension)");
}

void cpu_report(const struct cpu_features *f)
{
	const char *pcid_taker = cpu_quirk_taking(f, CPU_QUIRK_NO_PCID);
	const char *invpcid_taker = cpu_quirk_taking(f, CPU_QUIRK_NO_INVPCID);
	const char *deadline_taker =
		cpu_quirk_taking(f, CPU_QUIRK_NO_TSC_DEADLINE);
	char pcid_path[TAKEN_PATH_MAX], invpcid_path[TAKEN_PATH_MAX];
	char deadline_path[TAKEN_PATH_MAX];

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
	feature_row("UMIP", f->umip,
		    "CR4.UMIP on, SGDT and friends fault in ring 3",
		    "ring 3 may read GDT, IDT and TR locations");
	feature_row("1 GiB pages", f->gbpages, "direct map uses 1 GiB pages",
		    "direct map uses 2 MiB pages");
	feature_row("XSAVE", f->xsave, "XSAVE for FPU state",
		    f->fxsr ? "FXSAVE for FPU state" : "no FPU state saving");
	feature_row("PCID", f->pcid, taken_path(pcid_taker, pcid_path),
		    "every CR3 write flushes");
	feature_row("INVPCID", f->invpcid,
		    taken_path(invpcid_taker, invpcid_path),
		    "CR3 writes and INVLPG instead");
	feature_row("x2APIC", f->x2apic, "available to apic/", "xAPIC (MMIO)");
	feature_row("TSC-deadline", f->tsc_deadline,
		    deadline_taker ? taken_path(deadline_taker, deadline_path)
				   : "available to apic/",
		    "LAPIC timer counts");
	feature_row("invariant TSC", f->invariant_tsc, "TSC usable as a clock",
		    "TSC rate may vary: timings marked");
	feature_row("RDTSCP", f->rdtscp, "benchmarks order RDTSC with LFENCE",
		    "benchmarks order RDTSC with LFENCE");
	quirks_report(f);
	unused_report(f);
}
