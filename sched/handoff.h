/* SPDX-License-Identifier: MIT */
/*
 * The IPC fast path's direct switch (proc/ipc.c), inline there: the
 * scheduler's one switch (switch_prepare_locked, also sched/sched.c's), by
 * a thread that blocks without keeping its kernel stack.
 *
 * A thread that blocks in a system call usually keeps its kernel stack:
 * switch_context saves where it was, and it carries on from there. The
 * IPC fast path blocks without one: all it would do on waking is copy the
 * reply into its saved user registers and return to user mode, so the
 * thread that wakes it does that for it and switches straight to those
 * registers (sched_handoff_leave with next_frame), with no kernel stack to
 * unwind. A thread that leaves its stack leaves a resume frame instead
 * (sched/switch.asm): any other switch to it (switch_context, after a
 * wake-up by the general path) runs its `resume` function on a fresh
 * stack just below its user registers (stackless_resumed, sched/sched.c),
 * which does what the thread would have done, and it returns to user mode
 * from there. Interrupts are off throughout.
 */
#ifndef SCHED_HANDOFF_H
#define SCHED_HANDOFF_H

#include "cpu/gdt.h"
#include "trap/trap.h"
#include "mm/tlb.h"
#include "sched/fpu.h"
#include "sched/runqueue.h"
#include "sched/thread.h"

typedef void (*stackless_resume)(struct trap_frame *frame);

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
 * Takes this CPU's run-queue lock (rq) and returns true with it held if
 * the running thread may block now (no wake-up is pending for it) and next
 * is blocked, and not sleeping, so nobody else can wake it while the lock
 * is held; otherwise drops the lock and returns false, and the caller goes
 * the general way. The caller checked sched_handoff_direct(next) first.
 */
static __always_inline bool sched_handoff_claim(struct runqueue *rq,
						struct thread *self,
						struct thread *next)
{
	spin_lock(&rq->lock);
	if (likely(!self->wake_pending && next->state == THREAD_BLOCKED &&
		   !next->sleeping))
		return true;
	spin_unlock(&rq->lock);
	return false;
}

/* sched/switch.asm: prev leaves its stack, with a resume frame. */
__noreturn void switch_leave(struct thread *prev, struct trap_frame *frame,
			     stackless_resume resume, struct thread *next);
__noreturn void switch_leave_to_frame(struct thread *prev,
				      struct trap_frame *frame,
				      stackless_resume resume,
				      struct trap_frame *next_frame);

/*
 * Then, rq still locked: blocks the running thread (self, whose saved user
 * registers are frame) and runs next in its place. next_frame: next's
 * saved user registers, its system call's results already written there;
 * it goes straight back to user mode. NULL: next resumes where it left
 * off. Whenever anything switches to self again, it runs resume(frame)
 * and returns to user mode from there.
 */
static __always_inline __noreturn void
sched_handoff_leave(struct runqueue *rq, struct thread *self,
		    struct thread *next, struct trap_frame *next_frame,
		    struct trap_frame *frame, stackless_resume resume)
{
	struct percpu *p = this_cpu();

	self->state = THREAD_BLOCKED;
	p->need_resched = false;
	switch_prepare_locked(p, rq, self, next);
	if (next_frame)
		switch_leave_to_frame(self, frame, resume, next_frame);
	switch_leave(self, frame, resume, next);
}

#endif
