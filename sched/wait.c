// SPDX-License-Identifier: MIT
#include "sched/wait.h"
#include "sched/sched.h"
#include "sched/thread.h"
#include "smp/percpu.h"

void wait_queue_init(struct wait_queue *wq)
{
	*wq = (struct wait_queue)WAIT_QUEUE_INIT;
}

void wait_queue_sleep_locked(struct wait_queue *wq)
{
	struct thread *self = current_thread();

	/* The tail append of sched.c's enqueue_locked, on a wait queue. */
	self->next = NULL;
	if (wq->tail)
		wq->tail->next = self;
	else
		wq->head = self;
	wq->tail = self;
	/* Drops wq->lock only once our run queue is locked: see sched.c. */
	sched_block_locked(&wq->lock);
	spin_lock(&wq->lock);
}

bool wait_queue_remove_locked(struct wait_queue *wq, struct thread *t)
{
	struct thread *prev = NULL;

	for (struct thread *p = wq->head; p; prev = p, p = p->next) {
		if (p != t)
			continue;
		if (prev)
			prev->next = t->next;
		else
			wq->head = t->next;
		if (wq->tail == t)
			wq->tail = prev;
		t->next = NULL;
		return true;
	}
	return false;
}

/* Takes the first waiter off wq (locked); NULL when there is none. */
static struct thread *pop_locked(struct wait_queue *wq)
{
	struct thread *t = wq->head;

	if (t) {
		wq->head = t->next;
		if (!wq->head)
			wq->tail = NULL;
		t->next = NULL;
	}
	return t;
}

unsigned wake_one(struct wait_queue *wq)
{
	uint64_t flags = spin_lock_irqsave(&wq->lock);
	struct thread *t = pop_locked(wq);

	spin_unlock_irqrestore(&wq->lock, flags);
	if (!t)
		return 0;
	sched_wake(t);
	return 1;
}

unsigned wake_all(struct wait_queue *wq)
{
	uint64_t flags = spin_lock_irqsave(&wq->lock);
	struct thread *list = wq->head;
	unsigned n = 0;

	wq->head = wq->tail = NULL;
	spin_unlock_irqrestore(&wq->lock, flags);
	while (list) {
		struct thread *t = list;

		list = t->next;
		t->next = NULL;
		sched_wake(t);
		n++;
	}
	return n;
}
