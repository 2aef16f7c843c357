// SPDX-License-Identifier: MIT
/*
 * The IPC protocol: send, receive, call and reply-and-receive, the general
 * way. The fast path (proc/ipc_fast.c) does two halves of it alone.
 *
 * An endpoint (proc/endpoint.h) has two queues, guarded by its lock:
 * senders (blocked with a message, plain sends and calls) and receivers
 * (blocked waiting for one). At most one of them is non-empty. Each
 * blocked thread's ipc.wait says what it waits for. Whoever completes that
 * sets it to IPC_WAIT_NONE under the endpoint lock and wakes it. The
 * sleeper checks ipc.wait under the same lock before and after blocking,
 * so no wake-up is lost, and a spurious wake-up just blocks again.
 *
 *  send/call: a receiver waits -> give it the message and run it (on the
 *      same CPU it gets the CPU directly, sched_handoff_locked);
 *      a send is then done, a call waits for the reply. No receiver -> queue
 *      as a sender and wait to be taken (send) or answered (call).
 *  receive: a sender waits -> take its message; a plain sender is done and
 *      woken, a caller stays blocked and becomes this thread's reply_to.
 *      No sender -> queue as a receiver and wait.
 *  reply-and-receive: give the reply to reply_to and mark it done, then
 *      receive; when that receive has to wait, the caller gets the CPU
 *      directly: the ping-pong of a client and a server on one CPU is two
 *      direct switches per round trip. The fast path does those two
 *      halves alone, straight from the system call.
 *
 * Objects passed with a message (proc/handle.h) travel beside it, in the
 * thread's ipc.grant, and move wherever the message is copied, under the
 * same lock: whoever ends up holding the message holds the reference. A
 * sender whose message was not taken gets its reference back. References
 * are dropped outside every endpoint lock (dropping an endpoint's last one
 * takes the table lock).
 * The receiver installs the object (handle_receive) only while its table
 * keeps HANDLE_RECEIVE_KEEP slots free afterwards; otherwise the message
 * still arrives, with -EMFILE in word 0 and the object dropped. The send
 * succeeds either way: the sender learns nothing of the receiver's table,
 * and a receiver is never made to block or fail because of what others
 * sent it.
 *
 * Endings: an endpoint dies with the task that created it, and every
 * thread queued on it wakes with -ENOENT (proc/endpoint.c). A thread of a
 * killed task stops waiting (-ESRCH) so that its task can end: the task
 * wakes its threads, and each checks on waking.
 *
 * Lifetimes. Whatever a thread points at across a block is either held
 * by a reference or detached, under the lock that guards the pointer, by
 * whichever of the two dies first; threads hold no references to each
 * other. So nobody reaches a freed thread, whose struct the next thread
 * made anywhere may get.
 *
 *  the endpoint a thread waits on: a reference, the system call's for its
 *      whole length (the fast path's stackless wait: the one it holds in
 *      ipc.stackless_endpoint). A queued thread always has its endpoint.
 *  queued (ep->senders, ep->receivers point at the thread): ep's lock. A
 *      thread is queued only while its ipc.wait is not IPC_WAIT_NONE; it
 *      leaves the queue when whoever ends that wait takes it off, when the
 *      endpoint dies (proc/endpoint.c), or, killed, by itself
 *      (ipc_wait_locked), and only then can it end.
 *  the reply owed: a receiver R that took caller C's call (through
 *      endpoint E) points at C (R->ipc.reply_to) and C at R
 *      (C->ipc.replier); R also keeps E (ipc.reply_endpoint, which only R
 *      writes and reads). The two thread pointers exist only together and
 *      are guarded by E's lock, the lock of C's wait. R's states:
 *        none  ipc.reply_endpoint NULL: owes nothing;
 *        owed  ipc.reply_to C, ipc.reply_endpoint E;
 *        lost  ipc.reply_to NULL, ipc.reply_endpoint E: C died first.
 *      R replies: owed -> C gets the message, both pointers cleared, none;
 *      lost -> the reply reaches nobody and returns -ESRCH (no receive
 *      follows), none.
 *      C dies first (killed in its wait: ipc_wait_locked, under E's lock):
 *      R->ipc.reply_to and C->ipc.replier cleared, R lost.
 *      R dies first (ipc_thread_exit as a user thread ends; a kernel
 *      thread's when it is reaped, ipc_thread_freed): C is answered with
 *      -ESRCH, both cleared.
 *      R receives again without replying (a plain receive): the debt is
 *      dropped, both cleared, and C waits on for a reply that will not
 *      come, until it is killed. A thread waiting for a message owes
 *      nothing (receive_locked checks): a call is taken only in state
 *      none.
 *      E holds no reference for R: in the lost state it may have gone
 *      and its slot been reused, so R only locks it (the table is static,
 *      its locks always valid) and then reads its own state under it.
 *  the fast path: the same rule under the same lock (it holds E's); its
 *      only extra work is setting and clearing C->ipc.replier, one store
 *      a half. A reply-and-receive in state lost is declined (nobody), and
 *      the general path returns the error.
 *
 * thread_reap asks ipc_thread_freed before it frees a thread: a reply the
 * thread still owes is answered, and then its wait must be over (so it is
 * on no queue: no scan of the endpoints needed), it must owe nothing and
 * be owed nothing.
 *
 * One pointer outlives the lock: a waker ends a thread's wait under the
 * lock and wakes it (sched_wake) after letting go, and by then the thread
 * may have been woken otherwise (a kill), seen its wait over and ended.
 * Every waker keeps interrupts off from the end of the wait to the wake;
 * thread_reap frees a struct only after kstack_free's TLB shootdown, which
 * every other CPU acknowledges with interrupts on, so after every such
 * waker is done with it.
 */
#include "proc/ipc.h"
#include "proc/endpoint.h"
#include "proc/ipc_wait.h"
#include "lib/errno.h"
#include "proc/handle.h"
#include "proc/task.h"
#include "sched/sched.h"
#include "sched/thread.h"
#include "sched/thread_queue.h"
#include "trap/panic.h"
#include "arch/x86.h"
#include "sync/shared.h"
#include "sync/spinlock.h"

/* Hands the object in `from` (if any) to thread t (its ipc.grant empty). */
static void grant_give(struct thread *t, struct handle_grant *from)
{
	t->ipc.grant = from ? from->obj : NULL;
	t->ipc.grant_rights = from ? from->rights : 0;
	if (from)
		from->obj = NULL;
}

void ipc_grant_take(struct thread *self, struct handle_grant *to)
{
	struct kobject *obj = self->ipc.grant;

	self->ipc.grant = NULL;
	if (to) {
		to->obj = obj;
		to->rights = self->ipc.grant_rights;
	} else if (obj) {
		kobject_put(obj);
	}
}

/*
 * Ends t's wait (ep locked), its message already written: t takes
 * `grant`'s object, and then sees the wait done.
 */
static void end_wait(struct thread *t, struct handle_grant *grant)
{
	grant_give(t, grant);
	wait_done(t);
}

/*
 * The caller self owes a reply to (the call's endpoint locked), if any and
 * still there: the debt is settled, both ways. NULL also when the caller
 * died first (the call's endpoint still set: answer_locked tells).
 */
static struct thread *take_caller(struct thread *self)
{
	struct thread *caller = self->ipc.reply_to;

	self->ipc.reply_to = NULL;
	self->ipc.reply_endpoint = NULL;
	if (caller)
		caller->ipc.replier = NULL;
	return caller;
}

/*
 * A caller dies while a receiver owes it the reply (the call's endpoint
 * locked): the receiver keeps the endpoint, so that its reply finds the
 * caller gone (-ESRCH), and no longer points at the caller.
 */
static void detach_replier(struct thread *self)
{
	struct thread *replier = self->ipc.replier;

	if (!replier)
		return;
	KASSERT(replier->ipc.reply_to == self,
		"thread %d owes its reply to thread %d, not to thread %d",
		replier->id,
		replier->ipc.reply_to ? replier->ipc.reply_to->id : 0,
		self->id);
	replier->ipc.reply_to = NULL;
	self->ipc.replier = NULL;
}

/* The message's object goes from one thread to the next (both locked out). */
static void grant_move(struct thread *to, struct thread *from)
{
	to->ipc.grant = from->ipc.grant;
	to->ipc.grant_rights = from->ipc.grant_rights;
	from->ipc.grant = NULL;
}

static bool killed(struct thread *self)
{
	return self->task &&
	       __atomic_load_n(&self->task->killed, __ATOMIC_RELAXED);
}

int ipc_wait_locked(struct endpoint *ep, struct thread *self,
		    struct thread *handoff)
{
	int err;

	/* Relaxed: ep's lock orders these (struct thread_ipc). */
	while (shared_load(&self->ipc.wait, __ATOMIC_RELAXED) !=
		       IPC_WAIT_NONE &&
	       !shared_load(&self->ipc.error, __ATOMIC_RELAXED)) {
		if (killed(self)) {
			/* Leave the queue we are on, or the receiver that took
			 * our call (it will find us gone). task_exit woke
			 * us without taking us off: we may still be listed,
			 * by a link that wake leaves alone. */
			thread_queue_remove(&ep->senders, self, ENDPOINT_LINK);
			thread_queue_remove(&ep->receivers, self,
					    ENDPOINT_LINK);
			/* A taken call: the call's endpoint is ep. */
			detach_replier(self);
			shared_store(&self->ipc.wait, IPC_WAIT_NONE,
				     __ATOMIC_RELAXED);
			return -ESRCH;
		}
		if (handoff)
			sched_handoff_locked(handoff, &ep->lock);
		else
			sched_block_locked(&ep->lock);
		handoff = NULL;
		spin_lock(&ep->lock);
	}
	err = shared_load(&self->ipc.error, __ATOMIC_RELAXED);
	if (err) {
		shared_store(&self->ipc.error, 0, __ATOMIC_RELAXED);
		shared_store(&self->ipc.wait, IPC_WAIT_NONE, __ATOMIC_RELAXED);
		return err;
	}
	return 0;
}

/*
 * Send or call, with ep locked. Returns with ep locked, and self's
 * ipc.grant holding what is ours again: the object sent if nobody took it,
 * or a call's reply's.
 */
static int deliver_locked(struct endpoint *ep, struct thread *self,
			  const struct ipc_message *msg,
			  struct handle_grant *grant, bool is_call)
{
	struct thread *receiver =
		thread_queue_pop(&ep->receivers, ENDPOINT_LINK);

	self->ipc.is_call = is_call;
	if (receiver) {
		receiver->ipc.msg = *msg;
		owe_reply(receiver, self, ep, is_call);
		end_wait(receiver, grant);
		if (!is_call) {
			spin_unlock(&ep->lock);
			sched_wake(receiver);
			spin_lock(&ep->lock);
			return 0;
		}
		shared_store(&self->ipc.wait, IPC_WAIT_REPLY, __ATOMIC_RELAXED);
		return ipc_wait_locked(ep, self, receiver);
	}
	self->ipc.msg = *msg;
	grant_give(self, grant);
	shared_store(&self->ipc.wait, is_call ? IPC_WAIT_REPLY : IPC_WAIT_TAKEN,
		     __ATOMIC_RELAXED);
	thread_queue_push(&ep->senders, self, ENDPOINT_LINK);
	return ipc_wait_locked(ep, self, NULL);
}

int ipc_send(struct endpoint *ep, const struct ipc_message *msg,
	     struct handle_grant *grant)
{
	struct thread *self = current_thread();
	uint64_t flags = irq_save();
	int err = -ENOENT;

	if (endpoint_lock_live(ep)) {
		err = deliver_locked(ep, self, msg, grant, false);
		spin_unlock(&ep->lock);
		ipc_grant_take(self,
			       grant); /* ours again if it was not taken */
	}
	irq_restore(flags);
	return err;
}

int ipc_call(struct endpoint *ep, const struct ipc_message *msg,
	     struct handle_grant *grant, struct ipc_message *reply,
	     struct handle_grant *got)
{
	struct thread *self = current_thread();
	uint64_t flags = irq_save();
	int err = -ENOENT;

	if (got)
		got->obj = NULL;
	if (endpoint_lock_live(ep)) {
		err = deliver_locked(ep, self, msg, grant, true);
		*reply = self->ipc.msg;
		spin_unlock(&ep->lock);
		/* A failed call leaves the object it sent, if not taken; a
		 * reply brings its own. */
		ipc_grant_take(self, err ? grant : got);
	}
	irq_restore(flags);
	return err;
}

/* Receive with ep locked; `handoff` runs if we have to wait. */
static int receive_locked(struct endpoint *ep, struct thread *self,
			  struct ipc_message *msg, struct thread *handoff)
{
	struct thread *sender = thread_queue_pop(&ep->senders, ENDPOINT_LINK);
	int err;

	KASSERT(!self->ipc.reply_endpoint,
		"thread %d receives while it owes a reply", self->id);
	if (sender) {
		*msg = sender->ipc.msg;
		grant_move(self, sender);
		/* A caller stays blocked until we reply. */
		owe_reply(self, sender, ep, sender->ipc.is_call);
		if (!sender->ipc.is_call) {
			wait_done(sender);
			spin_unlock(&ep->lock);
			sched_wake(sender);
			spin_lock(&ep->lock);
		}
		if (handoff) {
			spin_unlock(&ep->lock);
			sched_wake(handoff);
			spin_lock(&ep->lock);
		}
		return 0;
	}
	shared_store(&self->ipc.wait, IPC_WAIT_MESSAGE, __ATOMIC_RELAXED);
	thread_queue_push(&ep->receivers, self, ENDPOINT_LINK);
	err = ipc_wait_locked(ep, self, handoff);
	*msg = self->ipc.msg;
	return err;
}

/*
 * A plain receive while a reply is owed: the debt is dropped, unanswered
 * (the caller waits on, as for a reply never sent, until it is killed),
 * and nobody points at anybody any more.
 */
static void forget_caller(struct thread *self)
{
	struct endpoint *reply_ep = self->ipc.reply_endpoint;

	if (!reply_ep)
		return;
	spin_lock(&reply_ep->lock);
	take_caller(self);
	spin_unlock(&reply_ep->lock);
}

int ipc_receive(struct endpoint *ep, struct ipc_message *msg,
		struct handle_grant *got)
{
	struct thread *self = current_thread();
	uint64_t flags = irq_save();
	int err = -ENOENT;

	if (got)
		got->obj = NULL;
	forget_caller(self);
	if (endpoint_lock_live(ep)) {
		err = receive_locked(ep, self, msg, NULL);
		spin_unlock(&ep->lock);
		ipc_grant_take(self, got);
	}
	irq_restore(flags);
	return err;
}

/*
 * Answers the caller self owes a reply to, if any (the lock of the
 * endpoint the call came through held): the caller, to wake, in *woken,
 * having taken `grant`'s object. -ESRCH if it died first: the reply
 * reaches nobody.
 */
static int answer_locked(struct thread *self, const struct ipc_message *reply,
			 struct handle_grant *grant, struct thread **woken)
{
	bool owed = self->ipc.reply_endpoint;
	struct thread *caller = take_caller(self);

	*woken = caller;
	if (!caller)
		return owed ? -ESRCH : 0;
	caller->ipc.msg = *reply;
	end_wait(caller, grant);
	return 0;
}

int ipc_reply_receive(struct endpoint *ep, const struct ipc_message *reply,
		      struct handle_grant *grant, struct ipc_message *msg,
		      struct handle_grant *got)
{
	struct thread *self = current_thread(), *caller = NULL;
	struct endpoint *reply_ep = self->ipc.reply_endpoint;
	uint64_t flags = irq_save();
	int err = 0;

	if (got)
		got->obj = NULL;
	if (reply_ep && reply_ep != ep) {
		/* The call came through another endpoint: answer it there. */
		spin_lock(&reply_ep->lock);
		err = answer_locked(self, reply, grant, &caller);
		spin_unlock(&reply_ep->lock);
		if (caller)
			sched_wake(caller);
		caller = NULL;
	}
	/* Even a dead endpoint's caller gets its reply. */
	spin_lock(&ep->lock);
	if (!err)
		err = answer_locked(self, reply, grant, &caller);
	if (!err && ep->dead)
		err = -ENOENT;
	if (err) {
		spin_unlock(&ep->lock);
		if (caller)
			sched_wake(caller);
		irq_restore(flags);
		return err;
	}
	err = receive_locked(ep, self, msg, caller);
	spin_unlock(&ep->lock);
	ipc_grant_take(self, got);
	irq_restore(flags);
	return err;
}

void ipc_thread_exit(struct thread *t)
{
	struct endpoint *ep = t->ipc.reply_endpoint;
	struct ipc_message failed = {.label = (uint64_t)-ESRCH};
	struct thread *caller;
	uint64_t flags;

	if (!ep)
		return;
	flags = irq_save(); /* until the wake: see "Lifetimes" */
	spin_lock(&ep->lock);
	/* Before answer_locked's wait_done (a release). */
	if (t->ipc.reply_to)
		shared_store(&t->ipc.reply_to->ipc.error, -ESRCH,
			     __ATOMIC_RELAXED);
	answer_locked(t, &failed, NULL, &caller);
	spin_unlock(&ep->lock);
	if (caller)
		sched_wake(caller);
	irq_restore(flags);
}

/*
 * No scan of the endpoints: a thread is queued only while its ipc.wait is
 * not IPC_WAIT_NONE (every push follows a store of its wait, and whoever
 * takes it off, or the thread itself, ends that wait), so a dead thread
 * whose wait is over is on no queue. Its own fields are read without a
 * lock: if the rule holds, nobody writes them any more.
 */
void ipc_thread_freed(struct thread *t)
{
	ipc_thread_exit(t);
	KASSERT(shared_load(&t->ipc.wait, __ATOMIC_RELAXED) == IPC_WAIT_NONE,
		"thread %d freed while it waits in IPC (wait %d): it may "
		"still be queued",
		t->id, shared_load(&t->ipc.wait, __ATOMIC_RELAXED));
	KASSERT(!t->ipc.replier,
		"thread %d freed while thread %d owes it a reply", t->id,
		t->ipc.replier ? t->ipc.replier->id : 0);
	KASSERT(!t->ipc.reply_to && !t->ipc.reply_endpoint,
		"thread %d freed while it owes a reply", t->id);
}
