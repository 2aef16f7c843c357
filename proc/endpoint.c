// SPDX-License-Identifier: MIT
/*
 * Endpoints: the table they live in, and their lifetime.
 *
 * An endpoint is a kernel object (proc/handle.h) in a static table of
 * IPC_ENDPOINTS. Its slot is in use from its creation until its last
 * reference goes: handles hold references, and so does every system call
 * using it, for its whole length. So a thread queued on an endpoint always
 * has its endpoint.
 *
 * An endpoint belongs to the task that created it and dies with it
 * (ipc_task_exit): every thread still queued on it wakes with -ENOENT, and
 * so does every later use. Its memory goes only with the last reference.
 * The table is static, so an endpoint's lock is always valid, even after
 * its slot was reused (proc/ipc.c, "Lifetimes", relies on that).
 */
#include "proc/ipc.h"
#include "proc/endpoint.h"
#include "lib/errno.h"
#include "proc/handle.h"
#include "proc/task.h"
#include "sched/sched.h"
#include "sched/thread.h"
#include "trap/panic.h"
#include "arch/x86.h"
#include "sync/shared.h"
#include "sync/spinlock.h"

static struct spinlock table_lock = SPINLOCK_INIT;
static struct endpoint endpoints[IPC_ENDPOINTS];

struct endpoint *ipc_endpoint_create(void)
{
	uint64_t flags = spin_lock_irqsave(&table_lock);
	struct endpoint *made = NULL;

	for (int i = 0; i < IPC_ENDPOINTS; i++) {
		if (endpoints[i].in_use)
			continue;
		made = &endpoints[i];
		made->in_use = true;
		kobject_init(&made->obj, KOBJECT_ENDPOINT);
		spin_lock(&made->lock);
		made->dead = false;
		made->owner = task_current();
		spin_unlock(&made->lock);
		break;
	}
	spin_unlock_irqrestore(&table_lock, flags);
	return made;
}

unsigned ipc_endpoints_in_use(void)
{
	uint64_t flags = spin_lock_irqsave(&table_lock);
	unsigned used = 0;

	for (int i = 0; i < IPC_ENDPOINTS; i++)
		used += endpoints[i].in_use;
	spin_unlock_irqrestore(&table_lock, flags);
	return used;
}

struct kobject *ipc_endpoint_object(struct endpoint *ep)
{
	return &ep->obj;
}

struct endpoint *ipc_object_endpoint(struct kobject *obj)
{
	return endpoint_of(obj);
}

void ipc_endpoint_put(struct endpoint *ep)
{
	kobject_put(&ep->obj);
}

void ipc_endpoint_release(struct kobject *obj)
{
	struct endpoint *ep = ipc_object_endpoint(obj);
	uint64_t flags = spin_lock_irqsave(&table_lock);

	/* Nobody waits on it: each waiter held a reference. */
	spin_lock(&ep->lock);
	KASSERT(thread_queue_empty(&ep->senders) &&
			thread_queue_empty(&ep->receivers),
		"endpoint %ld released with threads queued",
		(long)(ep - endpoints));
	ep->owner = NULL;
	spin_unlock(&ep->lock);
	ep->in_use = false;
	spin_unlock_irqrestore(&table_lock, flags);
}

/*
 * Ends every wait on ep with -ENOENT (ep locked); returns whom to wake,
 * linked by drain_next. A woken thread may run and queue itself again
 * before we wake it (a kill wakes it too), so the list has a link of its
 * own.
 */
static struct thread *drain_locked(struct endpoint *ep)
{
	struct thread *woken = NULL, *t;

	while ((t = thread_queue_pop(&ep->senders, ENDPOINT_LINK)) ||
	       (t = thread_queue_pop(&ep->receivers, ENDPOINT_LINK))) {
		shared_store(&t->ipc.error, -ENOENT, __ATOMIC_RELAXED);
		t->ipc.drain_next = woken;
		woken = t;
	}
	return woken;
}

void ipc_task_exit(struct task *task)
{
	for (int i = 0; i < IPC_ENDPOINTS; i++) {
		struct endpoint *ep = &endpoints[i];
		struct thread *woken = NULL;
		/* Interrupts off until the wakes: proc/ipc.c, "Lifetimes". */
		uint64_t flags = irq_save();

		spin_lock(&ep->lock);
		if (ep->owner == task) {
			woken = drain_locked(ep);
			ep->dead = true;
			ep->owner = NULL;
		}
		spin_unlock(&ep->lock);
		while (woken) {
			struct thread *t = woken;

			woken = t->ipc.drain_next;
			sched_wake(t);
		}
		irq_restore(flags);
	}
}
