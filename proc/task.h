/* SPDX-License-Identifier: MIT */
/*
 * Tasks: a user program, its address space and its threads. A task ends
 * when its last thread exits, when a thread calls exit, or when one of its
 * threads faults; its exit status then wakes whoever waits for it.
 */
#ifndef PROC_TASK_H
#define PROC_TASK_H

#include "lib/types.h"
#include "proc/handle.h"
#include "uapi/syscall.h"
#include "sched/thread.h"
#include "sched/wait.h"
#include "cpu/percpu.h"

struct mm;
struct trap_frame;

#define TASK_MAX	  256
#define TASK_ID_MAX	  0x7fffffff
#define TASK_STATUS_FAULT SYS_STATUS_FAULT /* a task killed by a fault */

/*
 * What one task may hold at once, so that no task can use up a table the
 * whole system shares (docs/security.md, "Limits"). Past each, the call
 * fails with -EBUSY: the caller's own share is used up, whereas -ENOMEM
 * means the system ran out. Each is well above what any program of user/
 * needs (killrace runs 66 threads at once, race a few children and
 * objects per worker) and well below the system's table.
 *   threads: 128, of KSTACK_MAX (4096) kernel stacks;
 *   children spawned and not yet waited for, ended or not (an ended
 *   child keeps its memory until then): 32, of TASK_MAX (256);
 *   endpoints and shared-memory objects it created that are still alive
 *   (held by it or by anyone it gave them to): 16 each, of 64 each.
 */
#define TASK_THREADS_MAX   128
#define TASK_CHILDREN_MAX  32
#define TASK_ENDPOINTS_MAX 16
#define TASK_SHM_MAX	   16

struct task {
	int id;
	int parent;  /* the spawning task's id, 0 for the kernel; set once */
	bool orphan; /* the parent ended: nobody waits; by registry_lock */
	char name[24];
	struct mm *mm;		     /* a reference */
	struct handle_table handles; /* what it may use; closed as it ends */
	/* The objects it created count here; set at spawn, a reference. */
	struct kobject_charge *charge;

	/* Guarded by exit_wait.lock. */
	unsigned threads;	    /* live threads */
	struct thread *thread_list; /* linked by thread->task_next */
	bool exited;
	bool killed; /* its threads exit when they next leave the kernel */
	bool reaped; /* a wait took the status: no other wait may */
	long status;
	struct wait_queue exit_wait;
	uint32_t refcount; /* atomic: the registry, threads, waiters */
};

/*
 * Starts the user program in boot module `name` with `arg` in RDI, and
 * the `count` objects in `grants` (the caller keeps its references) in
 * its handle slots 0..count-1 with their rights. Returns the task id, or
 * a negative error (-ENOENT: no such module, -EINVAL: not a valid
 * executable or count above SYS_HANDLE_SPAWN_MAX, -ENOMEM, -EBUSY: too
 * many tasks, or the caller has TASK_CHILDREN_MAX children already).
 */
int task_spawn(const char *name, uint64_t arg,
	       const struct handle_grant *grants, unsigned count);

/*
 * A new thread of the calling thread's task, starting in user mode: its
 * id, or -EBUSY when the task has TASK_THREADS_MAX threads, -ENOMEM.
 */
int task_thread_create(uint64_t entry, uint64_t stack_top, uint64_t arg);

/*
 * Waits until task id, a child of the caller, ends; its status in *status.
 * By then its handles are closed and its endpoints dead. A child is a
 * task the calling task spawned, or, for a kernel thread, one the kernel
 * spawned. Each status is taken once. -ESRCH when id is no such task, not
 * the caller's child, or already waited for; -EINVAL for the caller's own
 * task.
 */
int task_wait(int id, long *status);

/*
 * Tasks in the registry: running, or ended with a parent that may still
 * wait for them. For tests: once every task a test started is waited for,
 * and every orphan has ended, it is back where it was.
 */
unsigned task_count(void);

/* The calling thread's task, or NULL for a kernel thread. */
static inline struct task *task_current(void)
{
	return current_thread()->task;
}

/* Ends the calling thread; the task ends with its last thread. */
__noreturn void task_exit_thread(void);

/* Ends the whole task with status (its other threads follow). */
__noreturn void task_exit(long status);

/*
 * Whether the calling user thread's task was killed (the caller must have a
 * task): three dependent loads (the thread from %gs, its task, the flag),
 * no call, for the system-call return, the hottest way back to user mode.
 * Read without the lock: a kill that lands just after is seen on the
 * thread's next way out.
 */
static inline bool task_current_killed(void)
{
	return __atomic_load_n(&task_current()->killed, __ATOMIC_RELAXED);
}

/* Called on every way back to user mode: exits if the task was killed. */
void task_check_killed(void);

/*
 * A page fault at the user address cr2, in ring 3 or in a user copy
 * (trap/trap.c asks, registered with SYSCALL): true when the page tables
 * of the thread's address space allow the access, which then runs again
 * (mm_fault_check, mm/fault.h; the thread's fault_history bounds the
 * retries). Interrupts off, as the trap path runs.
 */
bool task_user_page_retry(struct trap_frame *frame, uint64_t cr2);

/*
 * A user program faulted (trap/trap.c calls it, registered with
 * SYSCALL): reports the fault and ends its task. The kernel and the other
 * tasks go on.
 */
__noreturn void task_user_fault(struct trap_frame *frame, uint64_t cr2);

#endif
