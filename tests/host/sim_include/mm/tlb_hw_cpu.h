/* SPDX-License-Identifier: MIT */
/*
 * SIMULATED HARDWARE: the TLB simulator's mm/tlb_hw_cpu.h. The kernel's are
 * inline (%gs loads, a MOV to CR3); here they are functions: the CPU is the
 * one the calling host thread simulates (tests/host/tlb_sim_sched.c), and
 * a CR3 load is a step of the simulated MMU (tests/host/tlb_sim_mmu.c).
 */
#ifndef MM_TLB_HW_CPU_H
#define MM_TLB_HW_CPU_H

#include "lib/types.h"

/* This CPU's index (0 .. MAX_CPUS-1). Preemption off or interrupts off. */
unsigned tlb_hw_cpu(void);

/* This CPU's struct tlb_cpu: &tlb_cpus[tlb_hw_cpu()] (the kernel keeps a
 * pointer per CPU, set at bring-up; here that only checks it). */
struct tlb_cpu;
struct tlb_cpu *tlb_hw_cpu_state(void);
void tlb_hw_cpu_state_set(struct tlb_cpu *c);

/* Loads CR3 (as mm/tlb_hw_cpu.h says; tests/host/tlb_sim_mmu.c). */
void tlb_hw_load_cr3(uint64_t cr3);

#endif
