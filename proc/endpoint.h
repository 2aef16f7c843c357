/* SPDX-License-Identifier: MIT */
/*
 * An endpoint as the IPC files see it (proc/endpoint.c, proc/ipc.c,
 * proc/ipc_fast.c): its lock, its two queues and whether it is alive.
 * Everyone else reaches an endpoint through proc/ipc.h.
 */
#ifndef PROC_ENDPOINT_H
#define PROC_ENDPOINT_H

#include "lib/types.h"
#include "proc/handle.h"
#include "sched/thread_queue.h"
#include "sync/spinlock.h"
#include "trap/panic.h"

struct task;

/*
 * A thread waits on an endpoint through its THREAD_LINK_WAIT link, the one
 * wait queues use: a thread waits on one of them at a time.
 */
#define ENDPOINT_LINK THREAD_LINK_WAIT

struct endpoint {
	struct kobject obj; /* type KOBJECT_ENDPOINT */
	bool in_use;	    /* guarded by the table's lock (proc/endpoint.c) */
	struct spinlock lock;
	/* Guarded by lock. At most one of the two queues is non-empty. */
	bool dead;		       /* its owner ended */
	struct task *owner;	       /* NULL: the kernel's, or dead */
	struct thread_queue senders;   /* blocked with a message */
	struct thread_queue receivers; /* blocked waiting for one */
};

/* The endpoint obj is (ipc_object_endpoint, inline for the fast path). */
static inline struct endpoint *endpoint_of(struct kobject *obj)
{
	KASSERT(obj->type == KOBJECT_ENDPOINT,
		"object type %d is not an endpoint", obj->type);
	return (struct endpoint *)obj;
}

/* Locks ep (interrupts already off) if it is alive; false if dead. */
static inline bool endpoint_lock_live(struct endpoint *ep)
{
	spin_lock(&ep->lock);
	if (!ep->dead)
		return true;
	spin_unlock(&ep->lock);
	return false;
}

#endif
