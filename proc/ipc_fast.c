// SPDX-License-Identifier: MIT
/*
 * The IPC fast path.
 *
 * Every client-server round trip is two halves: the client's call finds
 * the server waiting on the endpoint, and the server's reply-and-receive
 * finds the client waiting for the reply (and, with no other caller
 * queued, the server then waits again). When the partner waits on this
 * CPU, each half is one message moved and one switch, and that is all
 * ipc_fast_syscall does. The SYSCALL entry sends these two calls here
 * before the dispatcher. One half has seL4's shape: checks, a point of no
 * return, the commit.
 *
 *  1. the checks, each of which declines having changed nothing: the
 *     handle checked under the table's lock (handle_find_locked), the
 *     endpoint locked before the table lets go (no reference taken), the
 *     partner found (fast_partner), and last the partner claimed with this
 *     CPU's run-queue lock (sched_handoff_claim): blocked, not woken
 *     meanwhile;
 *  2. the point of no return;
 *  3. the commit: the general path's bookkeeping done in place, the
 *     partner's wait ended, ours begun (fast_commit), and the switch, the
 *     scheduler's one switch (sched_handoff_stackless: switch_mm_irqs_off
 *     with its generation checks, the FPU, the counters, tlb_trace).
 *
 * The caller blocks without keeping its kernel stack: all it would do on
 * waking is copy the reply into its saved user registers, so its waker
 * does that. A partner that blocked here too gets the message written
 * straight into its saved registers, and the switch goes straight to them.
 * It returns to user mode without running any kernel code of its own, and
 * hands us the endpoint reference it held for its wait. Anything else that
 * switches to a thread blocked here (the general path, a kill, an endpoint
 * dying) runs ipc_fast_resumed. That does what the general path does after
 * its wait (ipc_wait_locked if the wait is not over, the handle of a
 * message that carries one, the message out, the reference dropped, the
 * kill check), exactly as if the thread had blocked there.
 *
 * It declines whenever the general path (proc/ipc.c) would do anything
 * else: the endpoint is dead, the partner is not waiting, waits on another
 * CPU (a cross-CPU wake-up is the slow path's work) or was woken meanwhile,
 * a sender is already queued (the receive would not wait), the handle is
 * bad (the general path says why), the message carries a handle. A kill is
 * seen where the general path sees it: by a thread that has to wait again,
 * and on the way back to user mode (a partner is sent straight back only
 * if its task is not being killed).
 *
 * ipc_fastpath=off sends everything the general way (the tests run both),
 * and the counters say which way each half went.
 */
#include "proc/ipc.h"
#include "proc/endpoint.h"
#include "proc/ipc_wait.h"
#include "lib/inject.h"
#include "lib/option.h"
#include "proc/handle.h"
#include "proc/syscall.h"
#include "proc/task.h"
#include "sched/handoff.h"
#include "sched/sched.h"
#include "sched/thread.h"
#include "sched/thread_queue.h"
#include "cpu/percpu.h"
#include "sync/shared.h"
#include "sync/spinlock.h"

/* proc/syscall_entry.asm: a thread blocked here resumes at ipc_fast_resume,
 * and a partner sent straight back leaves by syscall_return. */
extern stackless_code ipc_fast_resume, syscall_return;

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
 * it; only the injection kernel has it (lib/inject.h).
 *  - skip_cpu_check takes a partner on another CPU as if it were here. The
 *    switch still wakes it correctly, but the path says fast: the user
 *    suite's count of the halves across CPUs must see it.
 *  - drop_word copies only three of the four message words: the
 *    ping-pong's check must see it.
 *  - no_reference skips the reference a half takes for its wait when its
 *    partner resumes on its own stack. The endpoint is then put once more
 *    than it was got: kobject_put's check must see it.
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
static unsigned ipc_bug_choice; /* enum ipc_bug, for INJECTED() */

static void ipc_bug_option_set(const struct option_value *value)
{
	ipc_bug_choice = value->choice;
}
OPTION(73, ipc_bug, &ipc_bug_desc, &ipc_bug_option, NULL, ipc_bug_option_set);

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

/* --- The checks ------------------------------------------------------------ */

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
	    !INJECTED(ipc, IPC_BUG_SKIP_CPU_CHECK))
		return IPC_DECLINE_OTHER_CPU;
	return IPC_DECLINE_NONE;
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
		peer = thread_queue_first(&ep->receivers);
		*why = fast_declines(ep, peer, cpu);
	} else {
		peer = self->ipc.reply_to;
		/* None owed, or owed through another endpoint: */
		if (self->ipc.reply_endpoint != ep)
			*why = IPC_DECLINE_NOBODY;
		else if (!thread_queue_empty(&ep->senders))
			*why = IPC_DECLINE_QUEUED;
		else
			*why = fast_declines(ep, peer, cpu);
	}
	return *why ? NULL : peer;
}

/* --- The commit ------------------------------------------------------------ */

/* The message, from the caller's saved registers to peer. */
static void fast_message(struct thread *peer, const struct trap_frame *f)
{
	syscall_message_in(f, &peer->ipc.msg);
	if (INJECTED(ipc, IPC_BUG_DROP_WORD))
		peer->ipc.msg.words[IPC_WORDS - 1] = 0;
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
	if (INJECTED(ipc, IPC_BUG_DROP_WORD))
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
		thread_queue_remove_first(&ep->receivers, peer, ENDPOINT_LINK);
		owe_reply(peer, self, ep, true);
		/* (ipc.is_call is read only of a queued sender: not us.) */
		shared_store(&self->ipc.wait, IPC_WAIT_REPLY, __ATOMIC_RELAXED);
	} else {
		/* take_caller, peer (checked, changed only now) known: */
		self->ipc.reply_to = NULL;
		self->ipc.reply_endpoint = NULL;
		peer->ipc.replier = NULL;
		shared_store(&self->ipc.wait, IPC_WAIT_MESSAGE,
			     __ATOMIC_RELAXED);
		thread_queue_push(&ep->receivers, self, ENDPOINT_LINK);
	}
	/* A user thread's: peer->task is never NULL. */
	if (peer->ipc.stackless_frame &&
	    !__atomic_load_n(&peer->task->killed, __ATOMIC_RELAXED)) {
		to = peer->ipc.stackless_frame;
		fast_message_to_frame(to, f);
		peer->ipc.stackless_frame = NULL;
		stats->direct++;
	} else {
		fast_message(peer, f);
		if (!INJECTED(ipc, IPC_BUG_NO_REFERENCE))
			kobject_get(&ep->obj);
		stats->to_context++;
	}
	wait_done(peer);
	self->ipc.stackless_frame = f;
	self->ipc.stackless_endpoint = ep;
	return to;
}

/* --- Resuming the general way ---------------------------------------------- */

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

	if (shared_load(&self->ipc.wait, __ATOMIC_ACQUIRE) == IPC_WAIT_NONE &&
	    !shared_load(&self->ipc.error, __ATOMIC_RELAXED))
		return 0;
	spin_lock(&ep->lock);
	err = ipc_wait_locked(ep, self, NULL);
	spin_unlock(&ep->lock);
	return err;
}

/* From ipc_fast_resume (proc/syscall_entry.asm), the switch done. */
void ipc_fast_resumed(struct trap_frame *f);

/*
 * A thread that blocked here runs again, switched to the general way:
 * whoever ended its wait left the message in ipc.msg, or it was woken
 * early. What follows is what the general path does after its wait.
 */
void ipc_fast_resumed(struct trap_frame *f)
{
	struct thread *self = current_thread();
	struct endpoint *ep = self->ipc.stackless_endpoint;
	struct handle_grant got = {.obj = NULL};
	int err;

	/* No waker looks at it now: we are not blocked (any waker checks
	 * that first, sched_handoff_claim, under this CPU's queue lock). */
	self->ipc.stackless_frame = NULL;
	path_stats[this_cpu_index()].resumed++;
	err = fast_waited(ep, self);
	/* A message with a handle, from the general path, may have ended
	 * the wait: it gets its handle here as it would there. */
	if (unlikely(self->ipc.grant))
		ipc_grant_take(self, &got);
	kobject_put(&ep->obj);
	/* Ours alone now: whoever ended the wait is done with ipc.msg. */
	if (got.obj)
		handle_receive(&self->task->handles, &got, &self->ipc.msg);
	f->rax = (uint64_t)(err ? err : syscall_message_out(f, &self->ipc.msg));
	syscall_exit_if_killed();
}

/* --- One half -------------------------------------------------------------- */

/* One half (call: a call, else a reply-and-receive): ipc_fast_syscall. */
static __always_inline void fast_half(struct trap_frame *f, bool call)
{
	struct thread *self = current_thread(), *peer;
	struct handle_table *table = &self->task->handles;
	struct trap_frame *peer_frame;
	enum ipc_decline why;
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
	ep = endpoint_of(obj);
	spin_lock(&ep->lock);
	spin_unlock(&table->lock);
	peer = fast_partner(ep, self, call, cpu, &why);
	if (peer && !sched_handoff_claim(cpu, self, peer)) {
		why = IPC_DECLINE_WOKEN;
		peer = NULL;
	}
	if (!peer) {
		spin_unlock(&ep->lock);
		goto declined;
	}

	/* --- POINT OF NO RETURN: this CPU's run-queue lock is held, and
	 * held to the switch. --- */

	peer_frame = fast_commit(ep, self, peer, call, f, &path_stats[cpu]);
	spin_unlock(&ep->lock);
	sched_handoff_stackless(cpu, self, peer, peer_frame, f, ipc_fast_resume,
				syscall_return);
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
