/* SPDX-License-Identifier: MIT */
/*
 * tlb_hw_cpu (mm/tlb_hw.h) on real hardware: one %gs-relative load, inline,
 * because every thread switch asks it two or three times. The simulator's
 * version, a function of its scheduler, is
 * tests/host/sim_include/mm/tlb_hw_cpu.h (first on its include path).
 */
#ifndef MM_TLB_HW_CPU_H
#define MM_TLB_HW_CPU_H

#include "smp/percpu.h"

/* This CPU's index (0 .. MAX_CPUS-1). Preemption off or interrupts off. */
static inline unsigned tlb_hw_cpu(void)
{
	return this_cpu_index();
}

#endif
