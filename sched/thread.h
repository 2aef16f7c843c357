/* SPDX-License-Identifier: MIT */
/*
 * Threads: a kernel stack, saved registers, FPU state, a CPU affinity and,
 * for user threads, an address space. Kernel threads own no user address
 * space (mm == NULL): they run on whatever page tables the CPU has loaded,
 * which is what lets idle and kernel threads be lazy about TLB switching.
 */
#ifndef SCHED_THREAD_H
#define SCHED_THREAD_H

#include "lib/types.h"
#include "mm/fault.h"
#include "uapi/syscall.h" /* struct ipc_message: the message registers */
#include "sync/cpumask.h"
#include "sync/shared.h"

struct endpoint;
struct kobject;
struct mm;
struct task;
struct trap_frame;

enum thread_state {
	/*
	 * Created, not started: on no queue, never run. sched_wake leaves it
	 * alone and only sched_start_thread queues it, once. (A task being
	 * killed wakes every thread on its list, which may hold one that
	 * start_thread, proc/task.c, has listed but not started yet: woken as
	 * if blocked, it would be queued there and again by its start, and
	 * run twice.)
	 */
	THREAD_NEW,
	THREAD_RUNNING,	 /* on a CPU now (rq->current) */
	THREAD_RUNNABLE, /* in a run queue */
	THREAD_BLOCKED,	 /* on a wait queue or sleeping */
	THREAD_DEAD,	 /* exited; its stack is freed by the reaper */
};

typedef void (*thread_fn)(void *arg);

/*
 * The queues a thread can be on at once, each through a link of its own
 * (struct thread_queue, sched/thread_queue.h). They are two because a wake
 * that does not come through a wait queue or an endpoint (task_exit waking
 * a killed task's threads) queues the thread to run while it is still on
 * that list. The list must stay intact until the thread, running again,
 * takes itself off under the list's lock.
 */
enum thread_link {
	THREAD_LINK_RUN,  /* its CPU's run queue or sleeper list */
	THREAD_LINK_WAIT, /* a wait queue or an IPC endpoint */
	THREAD_LINKS,
};

/* What a thread blocked in IPC waits for (proc/ipc.c). */
enum ipc_wait {
	IPC_WAIT_NONE,
	IPC_WAIT_TAKEN,	  /* a sender: for a receiver to take the message */
	IPC_WAIT_REPLY,	  /* a caller: for the reply */
	IPC_WAIT_MESSAGE, /* a receiver: for a message */
};

/*
 * A thread's IPC state (proc/ipc.c). Guarded by the lock of the endpoint
 * the thread waits on, with three exceptions:
 *  - the reply owed: reply_to and replier (the two ends of one call taken,
 *    each the other's) are guarded by the lock of the endpoint that call
 *    came through;
 *  - reply_endpoint is written only by the thread itself (under that lock)
 *    and read only by it;
 *  - the fast path reads its own `wait` (and, once that says done, what it
 *    was given) without the lock, paired with a release store (wait_done).
 * So `wait` and `error` are SHARED (sync/shared.h): relaxed under the lock,
 * the fast path's acquire without it.
 */
struct thread_ipc {
	struct ipc_message msg; /* to send, or just received */
	struct kobject *grant;	/* with msg: a reference to pass on */
	uint32_t grant_rights;	/* and the rights it comes with */
	SHARED(enum ipc_wait) wait;
	bool is_call;			 /* its message wants a reply */
	struct thread *reply_to;	 /* the caller it owes a reply */
	struct endpoint *reply_endpoint; /* where that call came through */
	struct thread *replier; /* who owes it a reply (it is a caller) */
	SHARED(int) error;	/* why its wait ended early, or 0 */
	/* Blocked in the fast path without its kernel stack (else NULL): its
	 * saved user registers, and the endpoint it holds a reference to. */
	struct trap_frame *stackless_frame;
	struct endpoint *stackless_endpoint;
	/* A dying endpoint's list of threads to wake (proc/endpoint.c). */
	struct thread *drain_next;
};

struct thread {
	uint64_t saved_rsp; /* must stay first: sched/switch.asm */

	/*
	 * Guarded by the run-queue lock of `cpu` (sched/sched.c). `cpu`
	 * changes only while the thread is runnable, under both locks.
	 */
	enum thread_state state;
	unsigned cpu;
	uint64_t wake_at;  /* TSC, while sleeping */
	bool sleeping;	   /* on its CPU's sleeper list */
	int migrate_to;	   /* -1, or a CPU to move to after switching */
	bool wake_pending; /* woken while running: its next block is off */

	/* Each guarded by the lock of the queue it links (enum thread_link). */
	struct thread *link[THREAD_LINKS];

	/* Set at creation, read by anyone. */
	int id;
	char name[24];
	bool is_idle;
	uint64_t stack_top;
	void *fpu; /* FPU_AREA_ALIGN-aligned save area */
	void *fpu_allocation;
	struct mm *mm;	   /* NULL: a kernel thread */
	struct task *task; /* the user task it belongs to, or NULL */

	struct thread_ipc ipc;
	struct thread *task_next; /* its task's thread list */

	/* Written by the owner (affinity: under its CPU's run-queue lock). */
	struct cpumask affinity;
	uint64_t switches_in;	    /* times it was switched to */
	struct thread *zombie_next; /* reaper list */
	bool retired; /* on it: a second retire is a double free */
	/* Its spurious page faults in a row (proc/task.c, mm/fault.c). */
	struct mm_fault_history fault_history;
};

/*
 * A new kernel thread running fn(arg), runnable on a CPU allowed by
 * affinity (NULL: any online CPU). Returns NULL when out of memory.
 */
struct thread *thread_create(thread_fn fn, void *arg, const char *name,
			     const struct cpumask *affinity);

/* Ends the calling thread. */
__noreturn void thread_exit(void);

/* Frees threads that have exited (called where no lock is held). */
void thread_reap(void);

/* Threads that exist: created or adopted, and not yet reaped. */
unsigned thread_count(void);

/*
 * Called by thread_reap before it frees t, defined by proc/ipc.c (a
 * callback by declaration, docs/architecture.layers): a reply t still owes
 * (a kernel thread's: a task's threads answer as they end) is answered
 * with an error; then t's IPC wait must be over (so it is on no endpoint's
 * queue), and it must owe no reply and be owed none.
 */
void ipc_thread_freed(struct thread *t);

/* For sched/sched.c: t has exited and nothing runs on its stack now. */
void thread_retire(struct thread *t);

/* Builds the thread the calling context already is (boot, AP idle). */
struct thread *thread_adopt_current(const char *name, bool is_idle,
				    uint64_t stack_top);

#endif
