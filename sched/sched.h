/* SPDX-License-Identifier: MIT */
/*
 * The scheduler: one run queue per CPU, round robin, preemption by the local
 * APIC timer every `timeslice_us=`, an idle thread per CPU that halts with
 * interrupts on, sleeping for a duration, affinity, migration and a simple
 * load balancer (an idle CPU pulls a thread from the busiest queue).
 */
#ifndef SCHED_SCHED_H
#define SCHED_SCHED_H

#include "lib/types.h"
#include "sched/thread.h"

struct spinlock;
struct trap_frame;

/* timeslice_us= (sched/sched.c declares it). */
#define TIMESLICE_US_DEFAULT 10000 /* 10 ms: 100 ticks/s per CPU */
#define TIMESLICE_US_MIN     100
#define TIMESLICE_US_MAX     1000000

/*
 * Boot CPU: makes the running boot context a thread, creates the idle
 * thread, installs the tick and reschedule interrupts, starts the tick
 * (every timeslice_us=).
 */
void sched_init(void);

/* Application processor: becomes this CPU's idle thread; never returns. */
__noreturn void sched_run_idle_ap(uint64_t stack_top);

/* Gives up the CPU; the caller stays runnable. */
void yield(void);

/* Sleeps for at least ns nanoseconds. */
void sleep_ns(uint64_t ns);

/*
 * Blocks the calling thread. The caller holds `release` (the lock of the
 * wait queue it just joined, or NULL); it is dropped only once this CPU's
 * run-queue lock is held, so a wake-up cannot slip in between.
 * Interrupts must be off (the caller took `release` with irqsave).
 */
void sched_block_locked(struct spinlock *release);

/*
 * Blocks the caller and runs `next` (a blocked thread) in its place: an IPC
 * call handing the CPU to its receiver. When next last ran on this CPU, it
 * gets the CPU directly, without a trip through the run queue; otherwise
 * it is woken normally.
 * `release` as for sched_block_locked; interrupts off.
 */
void sched_handoff_locked(struct thread *next, struct spinlock *release);

/*
 * Whether sched_handoff_locked switches to next (blocked) directly, on
 * this CPU (cpu): next last ran here and may run here. A blocked thread's
 * CPU cannot change, so the answer holds until next is woken. The IPC fast
 * path asks it before it claims next (sched/handoff.h).
 */
static inline bool sched_handoff_direct(const struct thread *next, unsigned cpu)
{
	return __atomic_load_n(&next->cpu, __ATOMIC_RELAXED) == cpu &&
	       cpumask_test(&next->affinity, cpu);
}

/*
 * A thread that blocks without its kernel stack (sched/handoff.h) leaves
 * code to resume at instead: code entered by a return or a jump, never
 * called from C.
 */
typedef void stackless_code(void);

/* The end of a switch, for a thread's resume code (above). */
void sched_switch_finish(void);

/* Makes a blocked thread runnable again (any CPU, any context). */
void sched_wake(struct thread *t);

/* Puts a new thread in a run queue (on an allowed CPU). */
void sched_start_thread(struct thread *t);

/* Restricts the calling thread to mask; moves it now if needed. */
int sched_set_affinity(const struct cpumask *mask);

/* Called on interrupt exit: switch if this CPU should. */
void sched_preempt_point(void);

/* Re-arms this CPU's tick (after a test borrowed the APIC timer). */
void sched_tick_restart(void);

/* Prints every CPU's run queue: running thread, queue, ticks (debugging). */
void sched_dump(void);

#endif
