// SPDX-License-Identifier: MIT
/*
 * mm/tlb_hw.h on real hardware: one instruction or one kernel service per
 * function. tests/host/tlb_sim implements the same interface on a simulated
 * machine. The remote call, tlb_hw_call, is smp/call.c's: cross-CPU calls
 * sit above mm/ (they need the local APIC, which needs ioremap).
 */
#include "mm/tlb_hw.h"
#include "cpu/cpu.h"
#include "arch/x86.h"
#include "mm/tlb.h"
#include "cpu/percpu.h"

const struct cpumask *tlb_hw_online(void)
{
	return &cpu_online_mask;
}

/* Unordered RDTSC: a trace line needs when, not a precise interval. */
uint64_t tlb_hw_clock(void)
{
	return rdtsc();
}

void tlb_hw_fence(void)
{
	mfence();
}

void tlb_hw_pin(void)
{
	preempt_disable();
}

void tlb_hw_unpin(void)
{
	preempt_enable();
}

void tlb_hw_set_pcide(bool on)
{
	uint64_t cr4 = read_cr4();

	write_cr4(on ? cr4 | CR4_PCIDE : cr4 & ~CR4_PCIDE);
}

void tlb_hw_invlpg(uint64_t va)
{
	invlpg(va);
}

void tlb_hw_invpcid_address(uint16_t pcid, uint64_t va)
{
	invpcid(INVPCID_ADDRESS, pcid, va);
}

void tlb_hw_invpcid_context(uint16_t pcid)
{
	invpcid(INVPCID_CONTEXT, pcid, 0);
}

void tlb_hw_invpcid_all(void)
{
	invpcid(INVPCID_ALL_GLOBAL, 0, 0);
}

void tlb_hw_flush_everything(void)
{
	uint64_t cr4 = read_cr4();

	if (cr4 & CR4_PGE) {
		write_cr4(cr4 & ~CR4_PGE);
		write_cr4(cr4);
	} else {
		write_cr3(read_cr3()); /* no global entries to keep */
	}
}

/*
 * The request in INVLPGB's registers (AMD APM Vol. 3, INVLPGB). The ASID
 * flag with ASID 0 keeps the invalidation to the host's translations, as
 * Linux does: without it, guests' entries would be dropped as well.
 */
void tlb_hw_invlpgb(const struct tlb_hw_broadcast *b)
{
	uint64_t rax = INVLPGB_ASID;
	uint32_t ecx = 0;
	uint32_t edx = 0;

	if (b->has_va) {
		rax |= b->va | INVLPGB_VA;
		ecx = b->pages - 1;
		if (b->stride_2m)
			ecx |= INVLPGB_ECX_STRIDE_2M;
	}
	if (b->has_pcid) {
		rax |= INVLPGB_PCID;
		edx = (uint32_t)b->pcid << INVLPGB_EDX_PCID_SHIFT;
	}
	if (b->include_global)
		rax |= INVLPGB_INCLUDE_GLOBAL;
	if (b->final_only)
		rax |= INVLPGB_FINAL_ONLY;
	invlpgb(rax, ecx, edx);
}

void tlb_hw_tlbsync(void)
{
	tlbsync();
}

void tlb_boot_init(uint64_t kernel_root)
{
	tlb_policy = tlb_policy_settle(&tlb_policy, &boot_cpu);
	tlb_init_cpu(kernel_root);
}

void tlb_load_kernel_root(uint64_t kernel_root)
{
	write_cr3(kernel_root);
}
