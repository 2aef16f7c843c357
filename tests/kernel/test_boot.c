// SPDX-License-Identifier: MIT
/* The state boot leaves behind: control registers, the kernel's mappings. */
#include "tests/ktest.h"
#include "cpu/cpu.h"
#include "cpu/cpu_quirks.h"
#include "trap/symbols.h"
#include "arch/x86.h"
#include "mm/kmap.h"
#include "arch/layout.h"
#include "mm/pagetable.h"
#include "mm/pmm.h"
#include "mm/tlb.h"
#include "cpu/percpu.h"
#include "smp/call.h"
#include "apic/lapic.h"
#include "arch/extable.h"

extern char kernel_text_start[], kernel_rodata_start[], kernel_data_start[];

KTEST(BOOT0001, boot, "CR0, CR4 and EFER enable what CPUID reports")
{
	uint64_t cr0 = read_cr0(), cr4 = read_cr4();
	uint64_t efer = rdmsr(MSR_EFER);

	KEXPECT(cr0 & CR0_WP, "CR0.WP off: the kernel could write RO pages");
	KEXPECT(!!(cr4 & CR4_PGE) == boot_cpu.pge, "CR4.PGE %d, CPUID %d",
		!!(cr4 & CR4_PGE), boot_cpu.pge);
	KEXPECT(!!(cr4 & CR4_SMEP) == boot_cpu.smep, "CR4.SMEP %d, CPUID %d",
		!!(cr4 & CR4_SMEP), boot_cpu.smep);
	KEXPECT(!!(cr4 & CR4_SMAP) == boot_cpu.smap, "CR4.SMAP %d, CPUID %d",
		!!(cr4 & CR4_SMAP), boot_cpu.smap);
	KEXPECT(!!(efer & EFER_NXE) == boot_cpu.nx, "EFER.NXE %d, CPUID %d",
		!!(efer & EFER_NXE), boot_cpu.nx);
	KEXPECT((read_cr3() & PTE_ADDR_MASK) == kernel_root,
		"CR3 %#llx is not the kernel root %#llx",
		(unsigned long long)read_cr3(),
		(unsigned long long)kernel_root);
}

static uint64_t leaf_of(const void *va)
{
	uint64_t pte = 0;

	pt_translate(kernel_root, (uint64_t)va, NULL, &pte);
	return pte;
}

KTEST(BOOT0002, boot, "kernel sections are mapped with their own rights")
{
	uint64_t text = leaf_of(kernel_text_start);
	uint64_t rodata = leaf_of(kernel_rodata_start);
	uint64_t data = leaf_of(kernel_data_start);
	uint64_t nx = boot_cpu.nx ? PTE_NX : 0;

	KEXPECT((text & PTE_PRESENT) && !(text & PTE_WRITE) && !(text & PTE_NX),
		"text pte %#llx", (unsigned long long)text);
	KEXPECT((rodata & PTE_PRESENT) && !(rodata & PTE_WRITE) &&
			(rodata & PTE_NX) == nx,
		"rodata pte %#llx", (unsigned long long)rodata);
	KEXPECT((data & PTE_PRESENT) && (data & PTE_WRITE) &&
			(data & PTE_NX) == nx,
		"data pte %#llx", (unsigned long long)data);
	KEXPECT(!(text & PTE_USER) && !(data & PTE_USER),
		"kernel pages must not be user-accessible");
	if (boot_cpu.pge)
		KEXPECT(text & data & PTE_GLOBAL, "kernel pages not global");
}

KTEST(BOOT0003, boot, "the boot stack's guard page is not mapped")
{
	uint64_t guard = kmap_boot_stack_guard();

	KEXPECT(pt_translate(kernel_root, guard, NULL, NULL) != 0,
		"guard page %#llx is mapped", (unsigned long long)guard);
	KEXPECT(pt_translate(kernel_root, guard + PAGE_SIZE, NULL, NULL) == 0,
		"the stack above the guard is not mapped");
}

KTEST(BOOT0004, boot, "the direct map covers every usable frame")
{
	size_t n;
	const struct phys_range *r = pmm_usable_ranges(&n);

	for (size_t i = 0; i < n; i++) {
		uint64_t pa = 0;
		uint64_t last = r[i].end - PAGE_SIZE;

		KEXPECT(pt_translate(kernel_root, DIRECT_MAP_BASE + r[i].start,
				     &pa, NULL) == 0 &&
				pa == r[i].start,
			"range start %#llx", (unsigned long long)r[i].start);
		KEXPECT(pt_translate(kernel_root, DIRECT_MAP_BASE + last, &pa,
				     NULL) == 0 &&
				pa == last,
			"range end %#llx", (unsigned long long)last);
	}
}

KTEST(BOOT0005, boot, "symbol table names kernel functions")
{
	uint64_t offset = 1;
	const char *name = symbol_lookup((uint64_t)symbol_lookup + 3, &offset);

	KEXPECT(name && !__builtin_strcmp(name, "symbol_lookup") && offset == 3,
		"symbol_lookup+3 resolved to %s+%llu", name ? name : "(none)",
		(unsigned long long)offset);
	KEXPECT(symbol_address("symbol_lookup") == (uint64_t)symbol_lookup,
		"symbol_address(symbol_lookup) = %#llx",
		(unsigned long long)symbol_address("symbol_lookup"));
	KEXPECT(!symbol_lookup(0x1000, &offset), "a user address has no name");
}

KTEST(BOOT0006, boot, "the TLB policy follows the CPU quirks the census shows")
{
	const struct cpu_quirk_request *req = cpu_quirks_requested();
	const char *pcid_taker = cpu_quirk_taking(&boot_cpu, CPU_QUIRK_NO_PCID);
	const char *invpcid_taker =
		cpu_quirk_taking(&boot_cpu, CPU_QUIRK_NO_INVPCID);
	uint32_t expected =
		(req->automatic ? boot_cpu.quirks_matched : 0) | req->forced;
	bool pcide = read_cr4() & CR4_PCIDE;

	KEXPECT(boot_cpu.quirks_applied == expected,
		"quirks applied %#x, the table and cpu_quirks= say %#x",
		boot_cpu.quirks_applied, expected);
	KEXPECT(!(pcid_taker && tlb_policy.pcid),
		"PCID in use although quirk %s took it", pcid_taker);
	KEXPECT(!(invpcid_taker && tlb_policy.invpcid),
		"INVPCID in use although quirk %s took it", invpcid_taker);
	KEXPECT(!tlb_policy.pcid || cpu_pcid_usable(&boot_cpu),
		"PCID in use, not usable");
	KEXPECT(pcide == tlb_policy.pcid, "CR4.PCIDE %d, pcid in force %d",
		pcide, tlb_policy.pcid);
}

struct control_registers {
	uint64_t cr0[MAX_CPUS], cr4[MAX_CPUS];
	uint32_t runs[MAX_CPUS];
	uint32_t lint1[MAX_CPUS];
	uint64_t tsc_adjust[MAX_CPUS];
	int tsc_adjust_error[MAX_CPUS];
};

static void read_control_registers(void *arg)
{
	struct control_registers *r = arg;
	unsigned cpu = this_cpu_index();

	r->cr0[cpu] = read_cr0();
	r->cr4[cpu] = read_cr4();
	r->lint1[cpu] = lapic_read(LAPIC_LVT_LINT1);
	if (boot_cpu.tsc_adjust)
		r->tsc_adjust_error[cpu] =
			probe_rdmsr(MSR_TSC_ADJUST, &r->tsc_adjust[cpu]);
	__atomic_fetch_add(&r->runs[cpu], 1, __ATOMIC_RELAXED);
}

/*
 * Each CPU's own registers, read there by a cross-CPU call: an AP that kept
 * what INIT left (CR0.CD and NW set) or a bit the firmware set in CR4
 * fails here, whichever CPU it is.
 */
/* Every CPU's registers, each read on its own CPU. */
static struct control_registers *read_on_every_cpu(void)
{
	static struct control_registers r;

	__builtin_memset(&r, 0, sizeof(r));
	smp_call_function_all(read_control_registers, &r, SMP_CALL_WAIT);
	return &r;
}

KTEST(BOOT0007, boot, "every CPU's CR0 and CR4 are the kernel's computed value")
{
	const struct control_registers *r = read_on_every_cpu();
	uint64_t cr0 = cpu_wanted_cr0();
	uint64_t cr4 =
		cpu_wanted_cr4(&boot_cpu) | (tlb_policy.pcid ? CR4_PCIDE : 0);

	KEXPECT(cr4 & CR4_MCE, "CR4.MCE is not in the computed value");
	KEXPECT(!(cr0 & (CR0_CD | CR0_NW)), "caches off in the computed CR0");
	for (unsigned cpu = 0; cpu < cpu_count; cpu++) {
		if (!KEXPECT(r->runs[cpu] == 1, "CPU %u ran the call %u times",
			     cpu, r->runs[cpu]))
			continue;
		KEXPECT(r->cr0[cpu] == cr0, "CPU %u: CR0 %#llx, computed %#llx",
			cpu, (unsigned long long)r->cr0[cpu],
			(unsigned long long)cr0);
		KEXPECT(r->cr4[cpu] == cr4, "CPU %u: CR4 %#llx, computed %#llx",
			cpu, (unsigned long long)r->cr4[cpu],
			(unsigned long long)cr4);
	}
}

/*
 * The board's NMI line reaches the boot CPU only: LINT1 delivers NMIs
 * there and is masked on every AP (apic/lapic.c).
 */
KTEST(BOOT0008, boot, "LINT1 is an NMI on the boot CPU, masked on the others")
{
	const struct control_registers *r = read_on_every_cpu();

	for (unsigned cpu = 0; cpu < cpu_count; cpu++) {
		uint32_t lint1 = r->lint1[cpu];
		bool nmi = (lint1 & LVT_DELIVERY_MODE) == LVT_DELIVERY_NMI;
		bool masked = lint1 & LVT_MASKED;

		if (!KEXPECT(r->runs[cpu] == 1, "CPU %u ran the call %u times",
			     cpu, r->runs[cpu]))
			continue;
		if (cpu == 0)
			KEXPECT(nmi && !masked,
				"boot CPU: LVT LINT1 %#x, not an unmasked NMI",
				lint1);
		else
			KEXPECT(masked, "CPU %u: LVT LINT1 %#x is not masked",
				cpu, lint1);
	}
}

/*
 * Where the CPU has IA32_TSC_ADJUST, every CPU's is 0 after boot
 * (apic/tsc.c): firmware's leftovers would skew one CPU's TSC against the
 * others'.
 */
KTEST(BOOT0009, boot, "every CPU's TSC_ADJUST is 0 where the CPU has it")
{
	const struct control_registers *r;

	if (!boot_cpu.tsc_adjust) {
		ktest_skip(t, "no IA32_TSC_ADJUST (CPUID.7:EBX[1] clear)");
		return;
	}
	r = read_on_every_cpu();
	for (unsigned cpu = 0; cpu < cpu_count; cpu++) {
		if (!KEXPECT(r->runs[cpu] == 1, "CPU %u ran the call %u times",
			     cpu, r->runs[cpu]))
			continue;
		KEXPECT(!r->tsc_adjust_error[cpu],
			"CPU %u: reading TSC_ADJUST raised #GP", cpu);
		KEXPECT(r->tsc_adjust[cpu] == 0, "CPU %u: TSC_ADJUST %lld", cpu,
			(long long)r->tsc_adjust[cpu]);
	}
}
