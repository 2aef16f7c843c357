// SPDX-License-Identifier: MIT
/*
 * Blocking without a kernel stack: the IPC fast path's switch.
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
 */
#include "sched/sched.h"
#include "sched/runqueue.h"
#include "sched/switch.h"
#include "cpu/percpu.h"
#include "sync/spinlock.h"

bool sched_handoff_claim(struct thread *next)
{
	struct runqueue *rq = this_rq();
	struct thread *self = rq->current;

	spin_lock(&rq->lock);
	if (likely(!self->wake_pending && next->state == THREAD_BLOCKED &&
		   !next->sleeping))
		return true;
	spin_unlock(&rq->lock);
	return false;
}

__noreturn void sched_handoff_stackless(struct thread *next,
					struct trap_frame *next_frame,
					struct trap_frame *frame,
					stackless_code *resume,
					stackless_code *exit)
{
	struct percpu *p = this_cpu();
	struct runqueue *rq = cpu_rq(p->index);
	struct thread *self = p->current;

	self->state = THREAD_BLOCKED;
	p->need_resched = false;
	switch_prepare_locked(p, rq, self, next);
	if (next_frame)
		switch_leave_to_frame(self, frame, resume, next_frame, exit);
	switch_leave(self, frame, resume, next);
}

/*
 * Switched to by switch_leave_to_frame: the end of the switch, knowing
 * that the thread we replaced only blocked.
 */
void switch_finish_to_frame(void)
{
	switch_finish_unlock(this_rq());
}
