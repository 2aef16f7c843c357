/* SPDX-License-Identifier: MIT */
/*
 * Blocking without a kernel stack: the IPC fast path's switch, inline
 * there (proc/ipc_fast.c).
 *
 * A thread that blocks in a system call usually keeps its kernel stack:
 * switch_context saves where it was, and it carries on from there. The IPC
 * fast path blocks without one. All it would do on waking is copy the reply
 * into its saved user registers and return to user mode, so the thread
 * that wakes it does that for it. That waker then switches straight to
 * those registers, with no kernel stack to unwind.
 *
 * A thread that leaves its stack leaves a resume frame instead
 * (sched/switch.asm), shaped like the one switch_context saves. Any other
 * switch to it (switch_context, after a wake-up by the general path)
 * returns into its resume code, which runs on a fresh stack just below its
 * user registers. That code does what the thread would have done, and
 * returns to user mode from there.
 *
 * The run-queue lock is held from the claim of the partner to the end of
 * the switch, as for every switch (sched/sched.c). Interrupts are off
 * throughout.
 *
 * These two are the only scheduler code outside sched/ that sees the run
 * queue. They are inline because the fast path is measured in instructions:
 * as calls they cost it 85 more per round trip (docs/architecture.md).
 */
#ifndef SCHED_HANDOFF_H
#define SCHED_HANDOFF_H

#include "sched/runqueue.h"
#include "sched/sched.h"
#include "sched/switch.h"
#include "sched/thread.h"
#include "cpu/percpu.h"
#include "sync/spinlock.h"

/*
 * Takes this CPU's (cpu's) run-queue lock and returns true with it held if
 * the running thread (self) may block now (no wake-up is pending for it)
 * and next is blocked, and not sleeping: nobody else can wake either while
 * the lock is held. Otherwise drops the lock and returns false, and the
 * caller goes the general way. The caller checked
 * sched_handoff_direct(next, cpu).
 */
static __always_inline bool
sched_handoff_claim(unsigned cpu, struct thread *self, struct thread *next)
{
	struct runqueue *rq = cpu_rq(cpu);

	spin_lock(&rq->lock);
	if (likely(!self->wake_pending && next->state == THREAD_BLOCKED &&
		   !next->sleeping))
		return true;
	spin_unlock(&rq->lock);
	return false;
}

/*
 * Then, the claim held: blocks the running thread (self, its saved user
 * registers frame) without keeping its kernel stack, and runs next. With
 * next_frame, next's saved user registers, its system call's results
 * already written: next goes out by `exit`, entered with RSP at next_frame
 * and the switch done. With next_frame NULL, next resumes where it left
 * off. Anything that switches to self later returns into `resume`, with
 * R12 holding frame and interrupts off; resume ends the switch
 * (sched_switch_finish) before anything else.
 */
static __always_inline __noreturn void
sched_handoff_stackless(unsigned cpu, struct thread *self, struct thread *next,
			struct trap_frame *next_frame, struct trap_frame *frame,
			stackless_code *resume, stackless_code *exit)
{
	struct percpu *p = this_cpu();

	self->state = THREAD_BLOCKED;
	p->need_resched = false;
	switch_prepare_locked(p, cpu_rq(cpu), self, next);
	if (next_frame)
		switch_leave_to_frame(self, frame, resume, next_frame, exit);
	switch_leave(self, frame, resume, next);
}

#endif
