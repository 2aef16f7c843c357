// SPDX-License-Identifier: MIT
#include "sched/wait.h"
#include "sched/sched.h"
#include "sched/thread.h"
#include "cpu/percpu.h"

void wait_queue_init(struct wait_queue *wq)
{
	*wq = (struct wait_queue)WAIT_QUEUE_INIT;
}

/*
 * A sleeper may be woken without being taken off the queue: task_exit wakes
 * a killed task's threads wherever they are blocked (proc/task.c). The
 * link is THREAD_LINK_WAIT, which the run queue does not use, so the queue
 * stays intact meanwhile. The sleeper takes itself off here, under the
 * queue's lock, before it returns: its caller re-checks its condition and
 * may sleep again, and on the queue twice it would make a loop of it.
 */
void wait_queue_sleep_locked(struct wait_queue *wq)
{
	struct thread *self = current_thread();

	thread_queue_push(&wq->waiters, self, THREAD_LINK_WAIT);
	/* Drops wq->lock only once our run queue is locked: see sched.c. */
	sched_block_locked(&wq->lock);
	spin_lock(&wq->lock);
	wait_queue_remove_locked(wq, self); /* woken another way: see above */
}

bool wait_queue_remove_locked(struct wait_queue *wq, struct thread *t)
{
	return thread_queue_remove(&wq->waiters, t, THREAD_LINK_WAIT);
}

/*
 * Waiters are woken with wq->lock held (the order wq->lock, then a run-queue
 * lock, is the one sleeping uses). Walking a list taken off the queue after
 * dropping the lock would not be safe: a waiter on it may be woken another
 * way meanwhile (task_exit), run, and sleep on this or another queue again,
 * rewriting the link the walk follows.
 */
unsigned wake_one(struct wait_queue *wq)
{
	uint64_t flags = spin_lock_irqsave(&wq->lock);
	struct thread *t = thread_queue_pop(&wq->waiters, THREAD_LINK_WAIT);

	if (t)
		sched_wake(t);
	spin_unlock_irqrestore(&wq->lock, flags);
	return t ? 1 : 0;
}

unsigned wake_all(struct wait_queue *wq)
{
	uint64_t flags = spin_lock_irqsave(&wq->lock);
	struct thread *t;
	unsigned n = 0;

	while ((t = thread_queue_pop(&wq->waiters, THREAD_LINK_WAIT))) {
		sched_wake(t);
		n++;
	}
	spin_unlock_irqrestore(&wq->lock, flags);
	return n;
}
