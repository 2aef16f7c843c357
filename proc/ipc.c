// SPDX-License-Identifier: MIT
/*
 * Endpoints and the IPC protocol.
 *
 * An endpoint has two queues, guarded by its lock: senders (blocked with a
 * message, plain sends and calls) and receivers (blocked waiting for one).
 * At most one of them is non-empty. Each blocked thread's ipc_wait says what
 * it waits for; whoever completes that sets it to IPC_WAIT_NONE under the
 * endpoint lock and wakes it. The sleeper checks ipc_wait under the same
 * lock before and after blocking, so no wake-up is lost, and a spurious
 * wake-up just blocks again.
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
 *      direct switches per round trip. "The fast path", at the end, does
 *      those two halves alone, straight from the system call.
 *
 * Objects passed with a message (proc/handle.h) travel beside it, in the
 * thread's ipc_grant, and move wherever the message is copied, under the
 * same lock: whoever ends up holding the message holds the reference. A
 * sender whose message was not taken gets its reference back; references
 * are dropped outside every endpoint lock (dropping an endpoint's last one
 * takes the table lock).
 * The receiver installs the object (handle_receive) only while its table
 * keeps HANDLE_RECEIVE_KEEP slots free afterwards; otherwise the message
 * still arrives, with -EMFILE in word 0 and the object dropped. The send
 * succeeds either way: the sender learns nothing of the receiver's table,
 * and a receiver is never made to block or fail because of what others
 * sent it.
 *
 * Endings: an endpoint belongs to the task that created it and dies with
 * it; every thread still queued on it wakes with -ENOENT, and so does every
 * later use. The memory goes with the last reference (handles, and the
 * system calls using it: each holds one for its whole length, so a queued
 * thread always has its endpoint). A thread of a killed task stops waiting
 * (-ESRCH) so that its task can end: the task wakes its threads, and each
 * checks on waking.
 *
 * Lifetimes. Whatever a thread points at across a block is either held
 * by a reference or detached, under the lock that guards the pointer, by
 * whichever of the two dies first; threads hold no references to each
 * other. So nobody reaches a freed thread, whose struct the next thread
 * made anywhere may get.
 *
 *  the endpoint a thread waits on: a reference, the system call's for its
 *      whole length (the fast path's stackless wait: the one it holds in
 *      ipc_wait_endpoint). A queued thread always has its endpoint.
 *  queued (ep->senders, ep->receivers point at the thread): ep's lock. A
 *      thread is queued only while its ipc_wait is not IPC_WAIT_NONE; it
 *      leaves the queue when whoever ends that wait takes it off, when the
 *      endpoint dies (drain_locked), or, killed, by itself (wait_locked),
 *      and only then can it end.
 *  the reply owed: a receiver R that took caller C's call (through
 *      endpoint E) points at C (R->ipc_reply_to) and C at R
 *      (C->ipc_replier); R also keeps E (ipc_reply_endpoint, which only R
 *      writes and reads). The two thread pointers exist only together and
 *      are guarded by E's lock, the lock of C's wait. R's states:
 *        none  ipc_reply_endpoint NULL: owes nothing;
 *        owed  ipc_reply_to C, ipc_reply_endpoint E;
 *        lost  ipc_reply_to NULL, ipc_reply_endpoint E: C died first.
 *      R replies: owed -> C gets the message, both pointers cleared, none;
 *      lost -> the reply reaches nobody and returns -ESRCH (no receive
 *      follows), none.
 *      C dies first (killed in its wait: wait_locked, under E's lock):
 *      R->ipc_reply_to and C->ipc_replier cleared, R lost.
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
 *      only extra work is setting and clearing C->ipc_replier, one store
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
#include "lib/option.h"
#include "lib/errno.h"
#include "proc/handle.h"
#include "proc/syscall.h"
#include "trap/panic.h"
#include "arch/x86.h"
#include "sched/handoff.h"
#include "sched/sched.h"
#include "proc/task.h"
#include "sched/thread.h"
#include "cpu/percpu.h"
#include "sync/shared.h"
#include "sync/spinlock.h"

enum ipc_wait {
	IPC_WAIT_NONE,
	IPC_WAIT_TAKEN,	  /* a sender: for a receiver to take the message */
	IPC_WAIT_REPLY,	  /* a caller: for the reply */
	IPC_WAIT_MESSAGE, /* a receiver: for a message */
};

/*
 * Ends t's wait, after everything it is given (message, object, error) is
 * written: a release, paired with the fast path's acquire (fast_waited),
 * which reads what it was given without taking the endpoint's lock. The
 * lock orders it for everyone else.
 */
static void wait_done(struct thread *t)
{
	shared_store(&t->ipc_wait, IPC_WAIT_NONE, __ATOMIC_RELEASE);
}

struct endpoint {
	struct kobject obj; /* type KOBJECT_ENDPOINT */
	bool in_use;	    /* guarded by table_lock */
	struct spinlock lock;
	/* Guarded by lock. */
	bool dead;	    /* its owner ended */
	struct task *owner; /* NULL: the kernel's, or dead */
	struct thread *senders, *senders_tail;
	struct thread *receivers, *receivers_tail;
};

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
	KASSERT(obj->type == KOBJECT_ENDPOINT,
		"object type %d is not an endpoint", obj->type);
	return (struct endpoint *)obj;
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
	KASSERT(!ep->senders && !ep->receivers,
		"endpoint %ld released with threads queued",
		(long)(ep - endpoints));
	ep->owner = NULL;
	spin_unlock(&ep->lock);
	ep->in_use = false;
	spin_unlock_irqrestore(&table_lock, flags);
}

/* Locks ep (interrupts already off) if it is alive; false if dead. */
static bool lock_live(struct endpoint *ep)
{
	spin_lock(&ep->lock);
	if (!ep->dead)
		return true;
	spin_unlock(&ep->lock);
	return false;
}

/* Hands the object in `from` (if any) to thread t (its ipc_grant empty). */
static void grant_give(struct thread *t, struct handle_grant *from)
{
	t->ipc_grant = from ? from->obj : NULL;
	t->ipc_grant_rights = from ? from->rights : 0;
	if (from)
		from->obj = NULL;
}

/* Moves t's object to `to`, or drops it if `to` is NULL; no lock held. */
static void grant_take(struct thread *t, struct handle_grant *to)
{
	struct kobject *obj = t->ipc_grant;

	t->ipc_grant = NULL;
	if (to) {
		to->obj = obj;
		to->rights = t->ipc_grant_rights;
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
 * receiver, given a message (ep locked), owes self the reply if it was a
 * call; self then knows who owes it, to detach itself if it dies first.
 */
static void owe_reply(struct thread *receiver, struct thread *self,
		      struct endpoint *ep, bool is_call)
{
	receiver->ipc_reply_to = is_call ? self : NULL;
	receiver->ipc_reply_endpoint = is_call ? ep : NULL;
	if (is_call)
		self->ipc_replier = receiver;
}

/*
 * The caller self owes a reply to (the call's endpoint locked), if any and
 * still there: the debt is settled, both ways. NULL also when the caller
 * died first (the call's endpoint still set: answer_locked tells).
 */
static struct thread *take_caller(struct thread *self)
{
	struct thread *caller = self->ipc_reply_to;

	self->ipc_reply_to = NULL;
	self->ipc_reply_endpoint = NULL;
	if (caller)
		caller->ipc_replier = NULL;
	return caller;
}

/*
 * A caller dies while a receiver owes it the reply (the call's endpoint
 * locked): the receiver keeps the endpoint, so that its reply finds the
 * caller gone (-ESRCH), and no longer points at the caller.
 */
static void detach_replier(struct thread *self)
{
	struct thread *replier = self->ipc_replier;

	if (!replier)
		return;
	KASSERT(replier->ipc_reply_to == self,
		"thread %d owes its reply to thread %d, not to thread %d",
		replier->id,
		replier->ipc_reply_to ? replier->ipc_reply_to->id : 0,
		self->id);
	replier->ipc_reply_to = NULL;
	self->ipc_replier = NULL;
}

/* The message's object goes from one thread to the next (both locked out). */
static void grant_move(struct thread *to, struct thread *from)
{
	to->ipc_grant = from->ipc_grant;
	to->ipc_grant_rights = from->ipc_grant_rights;
	from->ipc_grant = NULL;
}

static void push(struct thread **head, struct thread **tail, struct thread *t)
{
	t->wait_next = NULL;
	if (*tail)
		(*tail)->wait_next = t;
	else
		*head = t;
	*tail = t;
}

/* Takes t, the first on a queue, off it. */
static void pop_first(struct thread **head, struct thread **tail,
		      struct thread *t)
{
	*head = t->wait_next;
	if (!*head)
		*tail = NULL;
	t->wait_next = NULL;
}

static struct thread *pop(struct thread **head, struct thread **tail)
{
	struct thread *t = *head;

	if (t)
		pop_first(head, tail, t);
	return t;
}

/* Takes t off a queue of ep (locked) if it is there; true if it was. */
static bool unlink(struct thread **head, struct thread **tail, struct thread *t)
{
	struct thread *prev = NULL;

	for (struct thread *p = *head; p; prev = p, p = p->wait_next) {
		if (p != t)
			continue;
		if (prev)
			prev->wait_next = t->wait_next;
		else
			*head = t->wait_next;
		if (*tail == t)
			*tail = prev;
		t->wait_next = NULL;
		return true;
	}
	return false;
}

static bool killed(struct thread *self)
{
	return self->task &&
	       __atomic_load_n(&self->task->killed, __ATOMIC_RELAXED);
}

/*
 * Waits (ep locked, interrupts off) until self->ipc_wait is done; `handoff`
 * is a thread to run instead, if any. Returns with ep locked and 0, or the
 * error that ended the wait.
 */
static int wait_locked(struct endpoint *ep, struct thread *self,
		       struct thread *handoff)
{
	int err;

	/* Relaxed: ep's lock orders these (sched/thread.h). */
	while (shared_load(&self->ipc_wait, __ATOMIC_RELAXED) !=
		       IPC_WAIT_NONE &&
	       !shared_load(&self->ipc_error, __ATOMIC_RELAXED)) {
		if (killed(self)) {
			/* Leave the queue we are on, or the receiver that took
			 * our call (it will find us gone). task_exit woke
			 * us without taking us off: we may still be listed,
			 * linked by wait_next, which that wake leaves alone. */
			unlink(&ep->senders, &ep->senders_tail, self);
			unlink(&ep->receivers, &ep->receivers_tail, self);
			/* A taken call: the call's endpoint is ep. */
			detach_replier(self);
			shared_store(&self->ipc_wait, IPC_WAIT_NONE,
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
	err = shared_load(&self->ipc_error, __ATOMIC_RELAXED);
	if (err) {
		shared_store(&self->ipc_error, 0, __ATOMIC_RELAXED);
		shared_store(&self->ipc_wait, IPC_WAIT_NONE, __ATOMIC_RELAXED);
		return err;
	}
	return 0;
}

/*
 * Send or call, with ep locked. Returns with ep locked, and self's
 * ipc_grant holding what is ours again: the object sent if nobody took it,
 * or a call's reply's.
 */
static int deliver_locked(struct endpoint *ep, struct thread *self,
			  const struct ipc_message *msg,
			  struct handle_grant *grant, bool is_call)
{
	struct thread *receiver = pop(&ep->receivers, &ep->receivers_tail);

	self->ipc_is_call = is_call;
	if (receiver) {
		receiver->ipc_msg = *msg;
		owe_reply(receiver, self, ep, is_call);
		end_wait(receiver, grant);
		if (!is_call) {
			spin_unlock(&ep->lock);
			sched_wake(receiver);
			spin_lock(&ep->lock);
			return 0;
		}
		shared_store(&self->ipc_wait, IPC_WAIT_REPLY, __ATOMIC_RELAXED);
		return wait_locked(ep, self, receiver);
	}
	self->ipc_msg = *msg;
	grant_give(self, grant);
	shared_store(&self->ipc_wait, is_call ? IPC_WAIT_REPLY : IPC_WAIT_TAKEN,
		     __ATOMIC_RELAXED);
	push(&ep->senders, &ep->senders_tail, self);
	return wait_locked(ep, self, NULL);
}

int ipc_send(struct endpoint *ep, const struct ipc_message *msg,
	     struct handle_grant *grant)
{
	struct thread *self = current_thread();
	uint64_t flags = irq_save();
	int err = -ENOENT;

	if (lock_live(ep)) {
		err = deliver_locked(ep, self, msg, grant, false);
		spin_unlock(&ep->lock);
		grant_take(self, grant); /* ours again if it was not taken */
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
	if (lock_live(ep)) {
		err = deliver_locked(ep, self, msg, grant, true);
		*reply = self->ipc_msg;
		spin_unlock(&ep->lock);
		/* A failed call leaves the object it sent, if not taken; a
		 * reply brings its own. */
		grant_take(self, err ? grant : got);
	}
	irq_restore(flags);
	return err;
}

/* Receive with ep locked; `handoff` runs if we have to wait. */
static int receive_locked(struct endpoint *ep, struct thread *self,
			  struct ipc_message *msg, struct thread *handoff)
{
	struct thread *sender = pop(&ep->senders, &ep->senders_tail);
	int err;

	KASSERT(!self->ipc_reply_endpoint,
		"thread %d receives while it owes a reply", self->id);
	if (sender) {
		*msg = sender->ipc_msg;
		grant_move(self, sender);
		/* A caller stays blocked until we reply. */
		owe_reply(self, sender, ep, sender->ipc_is_call);
		if (!sender->ipc_is_call) {
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
	shared_store(&self->ipc_wait, IPC_WAIT_MESSAGE, __ATOMIC_RELAXED);
	push(&ep->receivers, &ep->receivers_tail, self);
	err = wait_locked(ep, self, handoff);
	*msg = self->ipc_msg;
	return err;
}

/*
 * A plain receive while a reply is owed: the debt is dropped, unanswered
 * (the caller waits on, as for a reply never sent, until it is killed),
 * and nobody points at anybody any more.
 */
static void forget_caller(struct thread *self)
{
	struct endpoint *reply_ep = self->ipc_reply_endpoint;

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
	if (lock_live(ep)) {
		err = receive_locked(ep, self, msg, NULL);
		spin_unlock(&ep->lock);
		grant_take(self, got);
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
	bool owed = self->ipc_reply_endpoint;
	struct thread *caller = take_caller(self);

	*woken = caller;
	if (!caller)
		return owed ? -ESRCH : 0;
	caller->ipc_msg = *reply;
	end_wait(caller, grant);
	return 0;
}

int ipc_reply_receive(struct endpoint *ep, const struct ipc_message *reply,
		      struct handle_grant *grant, struct ipc_message *msg,
		      struct handle_grant *got)
{
	struct thread *self = current_thread(), *caller = NULL;
	struct endpoint *reply_ep = self->ipc_reply_endpoint;
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
	grant_take(self, got);
	irq_restore(flags);
	return err;
}

/* --- The fast path ----------------------------------------------------------- */

/*
 * Every client-server round trip is two halves: the client's call finds
 * the server waiting on the endpoint, and the server's reply-and-receive
 * finds the client waiting for the reply (and, with no other caller
 * queued, the server then waits again). When the partner waits on this
 * CPU, each half is one message moved and one switch, and that is all
 * ipc_fast_syscall does; the SYSCALL entry sends these two calls here
 * before the dispatcher:
 *
 *  1. the handle checked under the table's lock (handle_find_locked), the
 *     endpoint locked before the table lets go: no reference taken;
 *  2. the partner found (fast_partner) and claimed with this CPU's
 *     run-queue lock (sched_handoff_claim): blocked, not woken meanwhile;
 *  3. the general path's bookkeeping done in place, the partner's wait
 *     ended, ours begun (fast_commit);
 *  4. the switch, the scheduler's one switch (switch_mm_irqs_off with its
 *     generation checks, the FPU, the counters, tlb_trace), inline
 *     (sched_handoff_leave, sched/handoff.h).
 *
 * The caller blocks without keeping its kernel stack: all it would do on
 * waking is copy the reply into its saved user registers, so its waker
 * does that. A partner that blocked here too gets the message written
 * straight into its saved registers, and the switch goes straight to them:
 * it returns to user mode without running any kernel code of its own, and
 * hands us the endpoint reference it held for its wait. Anything else that
 * switches to a thread blocked here (the general path, a kill, an
 * endpoint dying) runs fast_resumed, which does what the general path
 * does after its wait (wait_locked if the wait is not over, the handle of
 * a message that carries one, the message out, the reference dropped, the
 * kill check), exactly as if the thread had blocked there.
 *
 * It declines, having changed nothing, whenever the general functions
 * above would do anything else: the endpoint is dead, the partner is not
 * waiting, waits on another CPU (a cross-CPU wake-up is the slow path's
 * work) or was woken meanwhile, a sender is already queued (the receive
 * would not wait), the handle is bad (the general path says why), the
 * message carries a handle. A kill is seen where the general path sees
 * it: by a thread that has to wait again, and on the way back to user
 * mode (a partner is sent straight back only if its task is not being
 * killed).
 *
 * ipc_fastpath=off sends everything the general way (the tests run both),
 * and the counters say which way each half went.
 */
static const char *const fastpath_words[] = {"on", "off", NULL};
static const struct option_desc fastpath_desc = {
	.name = "ipc_fastpath",
	.type = OPTION_CHOICE,
	.choices = fastpath_words,
	.help = "IPC fast path for calls and replies between threads of one "
		"CPU (docs/user.md)"};
static struct option_value fastpath_option;
static bool ipc_fast_on = true;

static void fastpath_option_set(const struct option_value *value)
{
	ipc_fast_on = value->choice == 0;
}
OPTION(72, ipc_fastpath, &fastpath_desc, &fastpath_option, NULL,
       fastpath_option_set);

/*
 * ipc_bug= breaks the fast path on purpose, for the tests that must catch
 * it (tools/run-tests.py: tcg-smp2-ipc-bug-*): skip_cpu_check takes a
 * partner on another CPU as if it were here (the switch still wakes it
 * correctly, but the path says fast: USER0003's count must see it);
 * drop_word copies only three of the four message words (the ping-pong's
 * check must see it); no_reference skips the reference a half takes for
 * its wait when its partner resumes on its own stack, so that the endpoint
 * is put once more than it was got (kobject_put's check must see it).
 */
enum ipc_bug {
	IPC_BUG_NONE,
	IPC_BUG_SKIP_CPU_CHECK,
	IPC_BUG_DROP_WORD,
	IPC_BUG_NO_REFERENCE,
};

static const char *const ipc_bug_words[] = {"none", "skip_cpu_check",
					    "drop_word", "no_reference", NULL};
static const struct option_desc ipc_bug_desc = {
	.name = "ipc_bug",
	.type = OPTION_CHOICE,
	.choices = ipc_bug_words,
	.help = "break the IPC fast path on purpose (tests and labs)"};
static struct option_value ipc_bug_option;
OPTION(73, ipc_bug, &ipc_bug_desc, &ipc_bug_option, NULL, NULL);

static bool ipc_bug(enum ipc_bug bug)
{
	return unlikely(ipc_bug_option.choice == bug);
}

/* By reason; IPC_DECLINE_NONE (a half that went fast) has no name. */
const char *const ipc_decline_names[IPC_DECLINE_COUNT] = {
	[IPC_DECLINE_OFF] = "off",
	[IPC_DECLINE_HANDLE] = "handle",
	[IPC_DECLINE_ERROR] = "error",
	[IPC_DECLINE_DEAD] = "dead",
	[IPC_DECLINE_NOBODY] = "nobody",
	[IPC_DECLINE_QUEUED] = "queued",
	[IPC_DECLINE_OTHER_CPU] = "other_cpu",
	[IPC_DECLINE_WOKEN] = "woken",
};

/*
 * Each CPU counts its own, on cache lines of its own: no locked operation
 * on the fast path, and no line shared between CPUs. A fast half counts
 * once, as direct or not (ipc_path_stats_read adds them up).
 */
static struct cpu_path_stats {
	uint64_t direct, to_context, resumed;
	uint64_t declined[IPC_DECLINE_COUNT];
} __aligned(128) path_stats[MAX_CPUS];

bool ipc_fast_enabled(void)
{
	return __atomic_load_n(&ipc_fast_on, __ATOMIC_RELAXED);
}

void ipc_fast_set(bool on)
{
	__atomic_store_n(&ipc_fast_on, on, __ATOMIC_RELAXED);
}

static void ipc_fast_declined(enum ipc_decline why)
{
	path_stats[this_cpu_index()].declined[why]++;
}

void ipc_path_stats_read(struct ipc_path_stats *sum)
{
	*sum = (struct ipc_path_stats){0};
	for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++) {
		const struct cpu_path_stats *s = &path_stats[cpu];
		uint64_t direct = __atomic_load_n(&s->direct, __ATOMIC_RELAXED);

		sum->fast += direct +
			     __atomic_load_n(&s->to_context, __ATOMIC_RELAXED);
		sum->direct += direct;
		sum->resumed += __atomic_load_n(&s->resumed, __ATOMIC_RELAXED);
		for (int why = 0; why < IPC_DECLINE_COUNT; why++)
			sum->declined[why] += __atomic_load_n(&s->declined[why],
							      __ATOMIC_RELAXED);
	}
}

/*
 * Why the half with partner `peer` cannot go fast (ep locked), or
 * IPC_DECLINE_NONE. The CPU test is the scheduler's own for a direct
 * switch; a partner not waiting yet (on another CPU, between queueing and
 * blocking) still shows that other CPU.
 */
static __always_inline enum ipc_decline fast_declines(const struct endpoint *ep,
						      const struct thread *peer,
						      unsigned cpu)
{
	if (ep->dead)
		return IPC_DECLINE_DEAD;
	if (!peer)
		return IPC_DECLINE_NOBODY;
	if (!sched_handoff_direct(peer, cpu) &&
	    !ipc_bug(IPC_BUG_SKIP_CPU_CHECK))
		return IPC_DECLINE_OTHER_CPU;
	return IPC_DECLINE_NONE;
}

/*
 * After the switch to the partner: we run again. The common case is that
 * the partner (or whoever) ended our wait, and then what it gave us is
 * ours to read without the lock (wait_done's release, paired with this
 * acquire). Otherwise (woken early, by a kill or a spurious wake-up) the
 * general wait takes over, under the lock, as if we had blocked there.
 */
static int fast_waited(struct endpoint *ep, struct thread *self)
{
	int err;

	if (shared_load(&self->ipc_wait, __ATOMIC_ACQUIRE) == IPC_WAIT_NONE &&
	    !shared_load(&self->ipc_error, __ATOMIC_RELAXED))
		return 0;
	spin_lock(&ep->lock);
	err = wait_locked(ep, self, NULL);
	spin_unlock(&ep->lock);
	return err;
}

/* The message, from the caller's saved registers to peer. */
static void fast_message(struct thread *peer, const struct trap_frame *f)
{
	syscall_message_in(f, &peer->ipc_msg);
	if (ipc_bug(IPC_BUG_DROP_WORD))
		peer->ipc_msg.words[IPC_WORDS - 1] = 0;
}

/*
 * The half's partner (ep locked), or NULL and the reason not to go fast.
 * Call: the first receiver, which will owe us the reply. Reply-and-receive:
 * the caller we owe, with nobody else queued (we then wait for the next
 * message, first in line).
 */
static __always_inline struct thread *fast_partner(struct endpoint *ep,
						   struct thread *self,
						   bool call, unsigned cpu,
						   enum ipc_decline *why)
{
	struct thread *peer;

	if (call) {
		peer = ep->receivers;
		*why = fast_declines(ep, peer, cpu);
	} else {
		peer = self->ipc_reply_to;
		/* None owed, or owed through another endpoint: */
		if (self->ipc_reply_endpoint != ep)
			*why = IPC_DECLINE_NOBODY;
		else if (ep->senders)
			*why = IPC_DECLINE_QUEUED;
		else
			*why = fast_declines(ep, peer, cpu);
	}
	return *why ? NULL : peer;
}

/*
 * The message, from the caller's saved registers straight into the
 * partner's (`to`), with the result its system call returns.
 */
static void fast_message_to_frame(struct trap_frame *to,
				  const struct trap_frame *f)
{
	struct ipc_message m;

	syscall_message_in(f, &m);
	to->rax = (uint64_t)syscall_message_out(to, &m);
}

/* ipc_bug=drop_word on a half that sends its partner straight back. */
static __noinline void fast_direct_bugs(struct trap_frame *to)
{
	if (ipc_bug(IPC_BUG_DROP_WORD))
		to->r9 = 0;
}

/*
 * Commits to the half (ep locked, the partner claimed): the general
 * path's bookkeeping done in place, the message moved, the partner's wait
 * ended, and ours begun, without a kernel stack. A partner that also
 * waits without one, and whose task is not being killed, gets its message
 * in its saved user registers, and the frame is returned: it goes straight
 * back to user mode. Any other partner resumes where it left off and
 * takes the message itself.
 *
 * References: each thread waiting on ep holds one. The partner that goes
 * straight back hands its own to us, for our wait; any other drops its own
 * when it resumes, and we take one (ep is locked, so it cannot go).
 */
static __always_inline struct trap_frame *
fast_commit(struct endpoint *ep, struct thread *self, struct thread *peer,
	    bool call, struct trap_frame *f, struct cpu_path_stats *stats)
{
	struct trap_frame *to = NULL;

	if (call) {
		pop_first(&ep->receivers, &ep->receivers_tail, peer);
		owe_reply(peer, self, ep, true);
		/* (ipc_is_call is read only of a queued sender: not us.) */
		shared_store(&self->ipc_wait, IPC_WAIT_REPLY, __ATOMIC_RELAXED);
	} else {
		/* take_caller, peer (checked, changed only now) known: */
		self->ipc_reply_to = NULL;
		self->ipc_reply_endpoint = NULL;
		peer->ipc_replier = NULL;
		shared_store(&self->ipc_wait, IPC_WAIT_MESSAGE,
			     __ATOMIC_RELAXED);
		push(&ep->receivers, &ep->receivers_tail, self);
	}
	/* A user thread's: peer->task is never NULL. */
	if (peer->ipc_stackless_frame &&
	    !__atomic_load_n(&peer->task->killed, __ATOMIC_RELAXED)) {
		to = peer->ipc_stackless_frame;
		fast_message_to_frame(to, f);
		peer->ipc_stackless_frame = NULL;
		if (unlikely(ipc_bug_option.choice != IPC_BUG_NONE))
			fast_direct_bugs(to);
		stats->direct++;
	} else {
		fast_message(peer, f);
		if (!ipc_bug(IPC_BUG_NO_REFERENCE))
			kobject_get(&ep->obj);
		stats->to_context++;
	}
	wait_done(peer);
	self->ipc_stackless_frame = f;
	self->ipc_wait_endpoint = ep;
	return to;
}

/*
 * A thread that blocked in the fast path runs again, switched to the
 * general way (sched_handoff_leave's resume function): whoever ended its
 * wait left the message in ipc_msg, or it was woken early. What follows
 * is what the general path does after its wait.
 */
static void fast_resumed(struct trap_frame *f)
{
	struct thread *self = current_thread();
	struct endpoint *ep = self->ipc_wait_endpoint;
	struct handle_grant got = {.obj = NULL};
	int err;

	/* No waker looks at it now: we are not blocked (any waker checks
	 * that first, sched_handoff_claim, under this CPU's queue lock). */
	self->ipc_stackless_frame = NULL;
	path_stats[this_cpu_index()].resumed++;
	err = fast_waited(ep, self);
	/* A message with a handle, from the general path, may have ended
	 * the wait: it gets its handle here as it would there. */
	if (unlikely(self->ipc_grant))
		grant_take(self, &got);
	kobject_put(&ep->obj);
	/* Ours alone now: whoever ended the wait is done with ipc_msg. */
	if (got.obj)
		handle_receive(&self->task->handles, &got, &self->ipc_msg);
	f->rax = (uint64_t)(err ? err : syscall_message_out(f, &self->ipc_msg));
	syscall_exit_if_killed();
}

/* One half (call: a call, else a reply-and-receive): ipc_fast_syscall. */
static __always_inline void fast_half(struct trap_frame *f, bool call)
{
	struct thread *self = current_thread(), *peer;
	struct handle_table *table = &self->task->handles;
	struct trap_frame *peer_frame;
	enum ipc_decline why;
	struct runqueue *rq;
	struct kobject *obj;
	struct endpoint *ep;
	unsigned cpu;

	if (!__atomic_load_n(&ipc_fast_on, __ATOMIC_RELAXED)) {
		why = IPC_DECLINE_OFF;
		goto declined;
	}
	if (f->rsi & SYS_IPC_LABEL_HANDLE) {
		why = IPC_DECLINE_HANDLE;
		goto declined;
	}
	cpu = this_cpu_index();
	spin_lock(&table->lock);
	obj = handle_find_locked(table, f->rdi, KOBJECT_ENDPOINT,
				 call ? SYS_RIGHT_SEND : SYS_RIGHT_RECEIVE);
	if (!obj) {
		spin_unlock(&table->lock);
		why = IPC_DECLINE_ERROR;
		goto declined;
	}
	/* No reference taken: the handle's keeps ep until the table lets go,
	 * and by then ep is locked, which its last reference's release waits
	 * for (ipc_endpoint_release). */
	ep = ipc_object_endpoint(obj);
	spin_lock(&ep->lock);
	spin_unlock(&table->lock);
	rq = cpu_rq(cpu);
	peer = fast_partner(ep, self, call, cpu, &why);
	if (peer && !sched_handoff_claim(rq, self, peer)) {
		why = IPC_DECLINE_WOKEN;
		peer = NULL;
	}
	if (!peer) {
		spin_unlock(&ep->lock);
		goto declined;
	}
	/* This CPU's run-queue lock held from here to the switch. */
	peer_frame = fast_commit(ep, self, peer, call, f, &path_stats[cpu]);
	spin_unlock(&ep->lock);
	sched_handoff_leave(rq, self, peer, peer_frame, f, fast_resumed);
declined:
	ipc_fast_declined(why);
	syscall_long_call(f);
}

/* Each half its own copy, so neither tests which it is more than once. */
void ipc_fast_syscall(struct trap_frame *f)
{
	if (f->rax == SYS_IPC_CALL)
		fast_half(f, true);
	else
		fast_half(f, false);
}

void ipc_thread_exit(struct thread *t)
{
	struct endpoint *ep = t->ipc_reply_endpoint;
	struct ipc_message failed = {.label = (uint64_t)-ESRCH};
	struct thread *caller;
	uint64_t flags;

	if (!ep)
		return;
	flags = irq_save(); /* until the wake: see "Lifetimes" */
	spin_lock(&ep->lock);
	/* Before answer_locked's wait_done (a release). */
	if (t->ipc_reply_to)
		shared_store(&t->ipc_reply_to->ipc_error, -ESRCH,
			     __ATOMIC_RELAXED);
	answer_locked(t, &failed, NULL, &caller);
	spin_unlock(&ep->lock);
	if (caller)
		sched_wake(caller);
	irq_restore(flags);
}

/*
 * No scan of the endpoints: a thread is queued only while its ipc_wait is
 * not IPC_WAIT_NONE (every push follows a store of its wait, and whoever
 * takes it off, or the thread itself, ends that wait), so a dead thread
 * whose wait is over is on no queue. Its own fields are read without a
 * lock: if the rule holds, nobody writes them any more.
 */
void ipc_thread_freed(struct thread *t)
{
	ipc_thread_exit(t);
	KASSERT(shared_load(&t->ipc_wait, __ATOMIC_RELAXED) == IPC_WAIT_NONE,
		"thread %d freed while it waits in IPC (wait %d): it may "
		"still be queued",
		t->id, shared_load(&t->ipc_wait, __ATOMIC_RELAXED));
	KASSERT(!t->ipc_replier,
		"thread %d freed while thread %d owes it a reply", t->id,
		t->ipc_replier ? t->ipc_replier->id : 0);
	KASSERT(!t->ipc_reply_to && !t->ipc_reply_endpoint,
		"thread %d freed while it owes a reply", t->id);
}

/* Ends every wait on ep with -ENOENT (ep locked); returns whom to wake. */
static struct thread *drain_locked(struct endpoint *ep)
{
	struct thread *woken = NULL, *t;

	while ((t = pop(&ep->senders, &ep->senders_tail)) ||
	       (t = pop(&ep->receivers, &ep->receivers_tail))) {
		shared_store(&t->ipc_error, -ENOENT, __ATOMIC_RELAXED);
		t->task_next_woken = woken;
		woken = t;
	}
	return woken;
}

void ipc_task_exit(struct task *task)
{
	for (int i = 0; i < IPC_ENDPOINTS; i++) {
		struct endpoint *ep = &endpoints[i];
		struct thread *woken = NULL;
		uint64_t flags = irq_save(); /* until the wakes: "Lifetimes" */

		spin_lock(&ep->lock);
		if (ep->owner == task) {
			woken = drain_locked(ep);
			ep->dead = true;
			ep->owner = NULL;
		}
		spin_unlock(&ep->lock);
		while (woken) {
			struct thread *t = woken;

			woken = t->task_next_woken;
			sched_wake(t);
		}
		irq_restore(flags);
	}
}
