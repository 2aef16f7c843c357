/* SPDX-License-Identifier: MIT */
/*
 * The steps of the IPC protocol (proc/ipc.c) that the fast path
 * (proc/ipc_fast.c) takes too: ending a wait, owing a reply, waiting, and
 * taking the object that came with a message.
 */
#ifndef PROC_IPC_WAIT_H
#define PROC_IPC_WAIT_H

#include "proc/endpoint.h"
#include "proc/handle.h"
#include "sched/thread.h"
#include "sync/shared.h"

/*
 * Ends t's wait, after everything it is given (message, object, error) is
 * written: a release, paired with the fast path's acquire (fast_waited),
 * which reads what it was given without taking the endpoint's lock. The
 * lock orders it for everyone else.
 */
static inline void wait_done(struct thread *t)
{
	shared_store(&t->ipc.wait, IPC_WAIT_NONE, __ATOMIC_RELEASE);
}

/*
 * receiver, given a message (ep locked), owes self the reply if it was a
 * call; self then knows who owes it, to detach itself if it dies first.
 */
static inline void owe_reply(struct thread *receiver, struct thread *self,
			     struct endpoint *ep, bool is_call)
{
	receiver->ipc.reply_to = is_call ? self : NULL;
	receiver->ipc.reply_endpoint = is_call ? ep : NULL;
	if (is_call)
		self->ipc.replier = receiver;
}

/*
 * Waits (ep locked, interrupts off) until self's wait is done; `handoff`
 * is a thread to run instead, if any. Returns with ep locked and 0, or the
 * error that ended the wait.
 */
int ipc_wait_locked(struct endpoint *ep, struct thread *self,
		    struct thread *handoff);

/* Moves self's object to `to`, or drops it if `to` is NULL; no lock held. */
void ipc_grant_take(struct thread *self, struct handle_grant *to);

#endif
