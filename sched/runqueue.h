/* SPDX-License-Identifier: MIT */
/*
 * The per-CPU run queue (sched/sched.c explains the scheduler). Only the
 * scheduler's own files include this, and the IPC fast path through
 * sched/handoff.h, the direct switch inline there. The rest of the kernel
 * reaches a run queue through sched/sched.h.
 */
#ifndef SCHED_RUNQUEUE_H
#define SCHED_RUNQUEUE_H

#include "lib/types.h"
#include "cpu/percpu.h"
#include "sched/thread_queue.h"
#include "sync/spinlock.h"

struct runqueue {
	struct spinlock lock;
	struct thread_queue runnable; /* THREAD_LINK_RUN */
	unsigned length;
	struct thread *current;
	struct thread *idle;
	/* Blocked with a timeout, earliest first, through THREAD_LINK_RUN. */
	struct thread *sleepers;
	struct thread *switched_from; /* for switch_finish */
	uint64_t ticks;
} __aligned(64);

extern struct runqueue runqueues[MAX_CPUS];

static inline struct runqueue *cpu_rq(unsigned cpu)
{
	return &runqueues[cpu];
}

static inline struct runqueue *this_rq(void)
{
	return cpu_rq(this_cpu_index());
}

static inline unsigned rq_cpu(const struct runqueue *rq)
{
	return (unsigned)(rq - runqueues);
}

#endif
