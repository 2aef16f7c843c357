/* SPDX-License-Identifier: MIT */
/*
 * What the cross-CPU call protocol (smp/call_queue.c) needs from the
 * machine, and nothing more. Two implementations: smp/call.c (the local
 * APIC, the interrupt flag, the TSC, the kernel's options) and the TLB
 * simulator (tests/host/tlb_sim_sched.c), which runs smp/call_queue.c
 * unchanged on simulated CPUs.
 */
#ifndef SMP_CALL_HW_H
#define SMP_CALL_HW_H

#include "lib/inject.h"
#include "lib/types.h"
#include "sync/cpumask.h"

struct call_request;

/* This CPU's index. Preemption or interrupts off. */
unsigned call_hw_cpu(void);
/* The CPUs online (they have request slots and take the call IPI). */
const struct cpumask *call_hw_online(void);
/* cpu's MAX_CPUS request slots, one per target (set up before it starts). */
struct call_request *call_hw_slots(unsigned cpu);

/* Sends the call-function IPI to cpu (its handler calls call_queue_irq). */
void call_hw_send_ipi(unsigned cpu);

/* Interrupts off, returning the previous state; and back to it. */
uint64_t call_hw_irq_save(void);
void call_hw_irq_restore(uint64_t flags);
/* Keeps the caller on this CPU (slots and queue are per CPU). */
void call_hw_preempt_disable(void);
void call_hw_preempt_enable(void);

/*
 * One turn of a wait loop (PAUSE): nothing is ordered by it; the loop's
 * loads are. In the simulator the CPU sleeps until memory changes.
 */
void call_hw_relax(void);

/* The watchdog's clock: a reading, and the nanoseconds since one. */
uint64_t call_hw_clock(void);
uint64_t call_hw_elapsed_ns(uint64_t since);
/* A target stopped looking at its queue: a kernel bug, never returns. */
__noreturn void call_hw_stuck(unsigned target, unsigned self, uint64_t seconds);

/*
 * call_bug=: a deliberate mistake in the protocol, for tests. smp/call.c
 * declares the option; the words are none, drop, no-ipi. Each place that
 * makes the mistake asks INJECTED(call, CALL_HW_BUG_...) (lib/inject.h),
 * which only the injection kernel builds in.
 */
enum call_hw_bug {
	CALL_HW_BUG_NONE, /* call_bug=none */
	CALL_HW_BUG_DROP, /* call_bug=drop: every DROP_EVERY-th request is not run */
	CALL_HW_BUG_NO_IPI, /* call_bug=no-ipi: requests are queued, never signalled */
};
/* The mistake in force (call_bug=). */
extern enum call_hw_bug call_bug_choice;

#endif
