/* SPDX-License-Identifier: MIT */
/*
 * Wait queues: threads sleep on one until another thread (or an interrupt
 * handler) wakes them. The classic shape:
 *
 *	flags = spin_lock_irqsave(&wq->lock);
 *	while (!condition)
 *		wait_queue_sleep_locked(wq);   // drops and retakes the lock
 *	spin_unlock_irqrestore(&wq->lock, flags);
 *
 * and on the other side: make the condition true, then wake_one/wake_all.
 * Checking the condition and going to sleep happen under wq->lock, which
 * the waker also takes, so no wake-up is lost in between.
 */
#ifndef SCHED_WAIT_H
#define SCHED_WAIT_H

#include "lib/types.h"
#include "sched/thread_queue.h"
#include "sync/spinlock.h"

struct wait_queue {
	struct spinlock lock;
	struct thread_queue waiters; /* guarded by lock; THREAD_LINK_WAIT */
};

#define WAIT_QUEUE_INIT                          \
	{                                        \
		SPINLOCK_INIT, THREAD_QUEUE_INIT \
	}

void wait_queue_init(struct wait_queue *wq);

/*
 * Sleeps on wq. Called with wq->lock held, taken with irqsave; returns
 * with it held again (interrupts still off) after a wake-up.
 */
void wait_queue_sleep_locked(struct wait_queue *wq);

/* Takes t off wq if it is there (wq->lock held); true if it was. */
bool wait_queue_remove_locked(struct wait_queue *wq, struct thread *t);

/* Wakes the longest waiter / every waiter; returns how many woke. */
unsigned wake_one(struct wait_queue *wq);
unsigned wake_all(struct wait_queue *wq);

#endif
