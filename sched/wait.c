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
 * a killed task's threads wherever they are blocked (proc/task.c). The link
 * is wait_next, which the run queue does not use, so the queue stays intact
 * meanwhile; and the sleeper takes itself off here, under the queue's lock,
 * before it returns: its caller re-checks its condition and may sleep again,
 * and on the queue twice it would make a loop of it.
 */
void wait_queue_sleep_locked(struct wait_queue *wq)
{
	struct thread *self = current_thread();

	self->wait_next = NULL;
	if (wq->tail)
		wq->tail->wait_next = self;
	else
		wq->head = self;
	wq->tail = self;
	/* Drops wq->lock only once our run queue is locked: see sched.c. */
	sched_block_locked(&wq->lock);
	spin_lock(&wq->lock);
	wait_queue_remove_locked(wq, self); /* woken another way: see above */
}

bool wait_queue_remove_locked(struct wait_queue *wq, struct thread *t)
{
	struct thread *prev = NULL;

	for (struct thread *p = wq->head; p; prev = p, p = p->wait_next) {
		if (p != t)
			continue;
		if (prev)
			prev->wait_next = t->wait_next;
		else
			wq->head = t->wait_next;
		if (wq->tail == t)
			wq->tail = prev;
		t->wait_next = NULL;
		return true;
	}
	return false;
}

/* Takes the first waiter off wq (locked); NULL when there is none. */
static struct thread *pop_locked(struct wait_queue *wq)
{
	struct thread *t = wq->head;

	if (t) {
		wq->head = t->wait_next;
		if (!wq->head)
			wq->tail = NULL;
		t->wait_next = NULL;
	}
	return t;
}

/*
 * Waiters are woken with wq->lock held (the order wq->lock, then a run-queue
 * lock, is the one sleeping uses). Walking a list taken off the queue after
 * dropping the lock would not be safe: a waiter on it may be woken another
 * way meanwhile (task_exit), run, and sleep on this or another queue again,
 * rewriting the wait_next the walk follows.
 */
unsigned wake_one(struct wait_queue *wq)
{
	uint64_t flags = spin_lock_irqsave(&wq->lock);
	struct thread *t = pop_locked(wq);

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

	while ((t = pop_locked(wq))) {
		sched_wake(t);
		n++;
	}
	spin_unlock_irqrestore(&wq->lock, flags);
	return n;
}
