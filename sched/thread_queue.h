/* SPDX-License-Identifier: MIT */
/*
 * A FIFO of threads, linked through the threads themselves: nothing to
 * allocate, nothing to fail. The run queues (sched/sched.c), the wait
 * queues (sched/wait.c) and the IPC endpoints (proc/endpoint.c) are each
 * one or two of these.
 *
 * Each queue uses one of a thread's links (enum thread_link, sched/thread.h)
 * and names it at every call: the same link for the same queue, always.
 * Whoever guards the queue guards the link; the functions take no lock.
 */
#ifndef SCHED_THREAD_QUEUE_H
#define SCHED_THREAD_QUEUE_H

#include "lib/types.h"
#include "sched/thread.h"

struct thread_queue {
	struct thread *head, *tail; /* oldest first; both NULL when empty */
};

#define THREAD_QUEUE_INIT  \
	{                  \
		NULL, NULL \
	}

static inline bool thread_queue_empty(const struct thread_queue *q)
{
	return !q->head;
}

/* The oldest thread on q, left there; NULL when q is empty. */
static inline struct thread *thread_queue_first(const struct thread_queue *q)
{
	return q->head;
}

/* The thread after t on the queue that link l links it to, or NULL. */
static inline struct thread *thread_queue_next(const struct thread *t,
					       enum thread_link l)
{
	return t->link[l];
}

/* Adds t at the end of q. */
static __always_inline void
thread_queue_push(struct thread_queue *q, struct thread *t, enum thread_link l)
{
	t->link[l] = NULL;
	if (q->tail)
		q->tail->link[l] = t;
	else
		q->head = t;
	q->tail = t;
}

/* Takes first, which is q's oldest thread, off q. */
static __always_inline void thread_queue_remove_first(struct thread_queue *q,
						      struct thread *first,
						      enum thread_link l)
{
	q->head = first->link[l];
	if (!q->head)
		q->tail = NULL;
	first->link[l] = NULL;
}

/* Takes the oldest thread off q and returns it; NULL when q is empty. */
static __always_inline struct thread *thread_queue_pop(struct thread_queue *q,
						       enum thread_link l)
{
	struct thread *t = q->head;

	if (t)
		thread_queue_remove_first(q, t, l);
	return t;
}

/* Takes t off q wherever it is; false if it was not there. */
static inline bool thread_queue_remove(struct thread_queue *q, struct thread *t,
				       enum thread_link l)
{
	struct thread *prev = NULL;

	for (struct thread *p = q->head; p; prev = p, p = p->link[l]) {
		if (p != t)
			continue;
		if (prev)
			prev->link[l] = t->link[l];
		else
			q->head = t->link[l];
		if (q->tail == t)
			q->tail = prev;
		t->link[l] = NULL;
		return true;
	}
	return false;
}

#endif
