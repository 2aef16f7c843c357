/* SPDX-License-Identifier: MIT */
/* System calls (numbers and registers: uapi/syscall.h). */
#ifndef PROC_SYSCALL_H
#define PROC_SYSCALL_H

#include "trap/trap.h"
#include "arch/x86.h"
#include "uapi/syscall.h"
#include "proc/task.h"

/* Points this CPU's SYSCALL instruction at the kernel (every CPU). */
void syscall_init_this_cpu(void);

/*
 * Called by proc/syscall_entry.asm with the caller's saved registers and
 * interrupts off; returns with interrupts off (it turns them on for the
 * calls that need them, proc/syscall.c).
 */
void syscall_dispatch(struct trap_frame *frame);

/*
 * The general path of every call that is not short (proc/syscall.c), with
 * interrupts on; called, and returns, with them off, like the dispatcher.
 * The IPC fast path hands it what it declines.
 */
void syscall_long_call(struct trap_frame *frame);

/*
 * Last on every path back to user mode from a system call, interrupts
 * off: a killed task's thread ends here instead, the way SYS_THREAD_EXIT
 * ends one (with interrupts on).
 */
static inline void syscall_exit_if_killed(void)
{
	if (unlikely(task_current_killed())) {
		sti();
		task_exit_thread();
	}
}

/*
 * An IPC message in the saved registers: the label in RSI on the way in
 * (RAX, less its top bit, on the way out), the four words in RDX, R10,
 * R8, R9 both ways. Here for the two paths that move messages: the
 * general one (proc/syscall.c) and the fast one (proc/ipc_fast.c).
 */
static inline void syscall_message_in(const struct trap_frame *f,
				      struct ipc_message *m)
{
	m->label = f->rsi;
	m->words[0] = f->rdx;
	m->words[1] = f->r10;
	m->words[2] = f->r8;
	m->words[3] = f->r9;
}

/* Returns what RAX gets. */
static inline long syscall_message_out(struct trap_frame *f,
				       const struct ipc_message *m)
{
	f->rdx = m->words[0];
	f->r10 = m->words[1];
	f->r8 = m->words[2];
	f->r9 = m->words[3];
	return (long)(m->label & INT64_MAX);
}

#endif
