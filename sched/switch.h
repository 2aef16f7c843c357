/* SPDX-License-Identifier: MIT */
/*
 * The thread switch, inside the scheduler: the steps every switch takes,
 * whether sched/sched.c switches (switch_to_locked) or a thread hands the
 * CPU on without keeping its kernel stack (sched/handoff.h), and the
 * assembly they end in (sched/switch.asm). Only the scheduler's own files
 * include this, and the IPC fast path through sched/handoff.h.
 */
#ifndef SCHED_SWITCH_H
#define SCHED_SWITCH_H

#include "cpu/gdt.h"
#include "trap/trap.h"
#include "mm/tlb.h"
#include "sched/fpu.h"
#include "sched/runqueue.h"
#include "sched/sched.h"
#include "sched/thread.h"

/*
 * Everything a switch from prev (running) to next does before the stacks
 * change, on this CPU (p, whose run queue rq is locked), interrupts off.
 */
static __always_inline void switch_prepare_locked(struct percpu *p,
						  struct runqueue *rq,
						  struct thread *prev,
						  struct thread *next)
{
	uint64_t stack_top = next->stack_top;

	next->state = THREAD_RUNNING;
	next->cpu = p->index;
	next->switches_in++;
	rq->current = next;
	p->current = next;
	rq->switched_from = prev;
	/* The stacks the CPU enters the kernel on from ring 3: interrupts
	 * (TSS) and SYSCALL (proc/syscall_entry.asm). */
	p->tables->tss.rsp[0] = stack_top;
	p->syscall_rsp = stack_top;
	/* The one place the address space changes with the thread. */
	switch_mm_irqs_off(next->mm);
	fpu_switch(prev->fpu, next->fpu);
}

/*
 * Every switch ends so, on the thread that got the CPU: the queue lock the
 * previous thread took is dropped. Then, with no lock held, comes what the
 * address-space switch left to do (it may free an address space,
 * mm/tlb.c).
 */
static __always_inline void switch_finish_unlock(struct runqueue *rq)
{
	spin_unlock(&rq->lock);
	switch_mm_finish();
}

/* sched/switch.asm: the stacks. */
void switch_context(struct thread *prev, struct thread *next);
__noreturn void switch_leave(struct thread *prev, struct trap_frame *frame,
			     stackless_code *resume, struct thread *next);
__noreturn void switch_leave_to_frame(struct thread *prev,
				      struct trap_frame *frame,
				      stackless_code *resume,
				      struct trap_frame *next_frame,
				      stackless_code *exit);

/* From sched/switch.asm, on next_frame's stack: the end of the switch
 * (sched/sched.c). */
void switch_finish_to_frame(void);

#endif
