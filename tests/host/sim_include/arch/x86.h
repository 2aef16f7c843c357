/* SPDX-License-Identifier: MIT */
/*
 * SIMULATED HARDWARE: the TLB simulator's arch/x86.h.
 *
 * tests/host/tlb_sim compiles kernel files (mm/mm.c, mm/kstack.c,
 * mm/kmap.c, mm/pagetable.c, and through sync/spinlock.h every file that
 * takes a lock) for the host. The real arch/x86.h is inline assembly
 * for ring 0 (CLI, MOV to CR3, WRMSR): it must not run in a host process.
 * The Makefile puts tests/host/sim_include first on the include path of
 * the simulator only, so "arch/x86.h" resolves here there, and to the
 * real header everywhere else. Each function below is the simulated CPU's
 * version of the instruction, on the CPU that the calling host thread
 * simulates (tests/host/tlb_sim_sched.c):
 *
 *   irq_save / irq_restore   CLI / STI: the simulated CPU's interrupts
 *                            (sim_irq_off / sim_irq_on; they nest), with a
 *                            scheduling point before interrupts go off
 *   cpu_relax                PAUSE in a spin loop: a scheduling point
 *                            that lets the spinning CPU wait for others
 *   wrmsr                    the PAT is not modelled: nothing
 *   rdtsc                    time is not modelled: always 0 (mm/mm.c's
 *                            hold lengths read 0 cycles)
 *
 * The constants are the real header's (same names, same values); only
 * the ones the host-compiled files use are here. Outside a simulated CPU
 * (setting a run up, on the main thread) the functions do nothing.
 */
#ifndef ARCH_X86_H
#define ARCH_X86_H

#include "lib/types.h"
#include "arch/consts.h"

/* CR4 (SDM Vol. 3A, 2.5) */
#define CR4_PGE	  0x00000080ULL /* global pages */
#define CR4_PCIDE 0x00020000ULL /* process-context identifiers */

/* RFLAGS */
#define RFLAGS_IF 0x00000200ULL /* interrupts enabled */

/* Model-specific registers (SDM Vol. 4) */
#define MSR_PAT 0x00000277U

/* INVPCID types (SDM Vol. 2A, INVPCID) */
#define INVPCID_ADDRESS	       0 /* one address in one PCID, not global */
#define INVPCID_CONTEXT	       1 /* every non-global entry of one PCID */
#define INVPCID_ALL_GLOBAL     2 /* everything, global entries included */
#define INVPCID_ALL_NON_GLOBAL 3 /* every PCID's non-global entries */

/* tests/host/tlb_sim_sched.c (declared again here: no tlb_sim.h below). */
int sim_current(void);
void sim_point(void);
void sim_irq_off(void);
void sim_irq_on(void);

static inline uint64_t rdtsc(void)
{
	return 0;
}

static inline void wrmsr(uint32_t msr, uint64_t value)
{
	(void)msr;
	(void)value;
}

/*
 * Not call_hw_relax's sleep until memory changes: sync/spinlock.h releases
 * a lock with a plain __atomic store, which the simulated memory does not
 * see change. The spinning CPU lets another one move first (the holder
 * reaches a scheduling point inside its critical section when it takes a
 * nested lock: irq_save is one).
 */
void sim_lock_relax(void);

static inline void cpu_relax(void)
{
	if (sim_current() >= 0)
		sim_lock_relax();
}

/*
 * Interrupts go off on this simulated CPU; the flags say they were on, so
 * irq_restore turns them back on: the count nests as RFLAGS.IF saved and
 * restored does.
 */
static inline uint64_t irq_save(void)
{
	if (sim_current() < 0)
		return 0;
	sim_point();
	sim_irq_off();
	return RFLAGS_IF;
}

static inline void irq_restore(uint64_t flags)
{
	if (flags & RFLAGS_IF)
		sim_irq_on();
}

#endif
