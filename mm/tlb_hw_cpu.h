/* SPDX-License-Identifier: MIT */
/*
 * The calls of mm/tlb_hw.h that every thread switch makes, inline on real
 * hardware: tlb_hw_cpu and tlb_hw_cpu_state (one %gs-relative load each)
 * and tlb_hw_load_cr3. The simulator's, functions of its scheduler and
 * its MMU, are declared in tests/host/sim_include/mm/tlb_hw_cpu.h (first
 * on its include path).
 */
#ifndef MM_TLB_HW_CPU_H
#define MM_TLB_HW_CPU_H

#include "arch/x86.h"
#include "cpu/percpu.h"

/* This CPU's index (0 .. MAX_CPUS-1). Preemption off or interrupts off. */
static inline unsigned tlb_hw_cpu(void)
{
	return this_cpu_index();
}

/* This CPU's struct tlb_cpu, once tlb_hw_cpu_state_set has named it. */
static inline struct tlb_cpu *tlb_hw_cpu_state(void)
{
	return this_cpu_read(tlb);
}

/*
 * Loads CR3. Without CR3_NOFLUSH (or without CR4.PCIDE) it drops the
 * non-global translations of the PCID it loads; with it, it keeps them.
 */
static inline void tlb_hw_load_cr3(uint64_t cr3)
{
	write_cr3(cr3);
}

/* At this CPU's bring-up (tlb_init_cpu). */
static inline void tlb_hw_cpu_state_set(struct tlb_cpu *c)
{
	this_cpu()->tlb = c;
}

#endif
