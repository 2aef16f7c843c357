/* SPDX-License-Identifier: MIT */
/*
 * SIMULATED HARDWARE: the TLB simulator's mm/tlb_hw_cpu.h. The kernel's is
 * an inline %gs load; here the CPU is the one the calling host thread
 * simulates (tests/host/tlb_sim_sched.c).
 */
#ifndef MM_TLB_HW_CPU_H
#define MM_TLB_HW_CPU_H

/* This CPU's index (0 .. MAX_CPUS-1). Preemption off or interrupts off. */
unsigned tlb_hw_cpu(void);

#endif
