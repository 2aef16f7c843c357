/* SPDX-License-Identifier: MIT */
/*
 * The per-CPU run queue (sched/sched.c explains the scheduler). Only the
 * scheduler's own files include this: sched/sched.c, and sched/handoff.h,
 * the direct switch it inlines into the IPC fast path.
 */
#ifndef SCHED_RUNQUEUE_H
#define SCHED_RUNQUEUE_H

#include "lib/types.h"
#include "cpu/percpu.h"
#include "sync/spinlock.h"

struct thread;

struct runqueue {
	struct spinlock lock;
	struct thread *head, *tail; /* runnable, oldest first */
	unsigned length;
	struct thread *current;
	struct thread *idle;
	struct thread *sleepers; /* blocked with a timeout, earliest first */
	struct thread *switched_from; /* for finish_switch */
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
