/* SPDX-License-Identifier: MIT */
/* System calls (numbers and registers: proc/syscall_abi.h). */
#ifndef PROC_SYSCALL_H
#define PROC_SYSCALL_H

#include "kernel/trap.h"
#include "proc/syscall_abi.h"

/* Points this CPU's SYSCALL instruction at the kernel (every CPU). */
void syscall_init_this_cpu(void);

/*
 * Called by proc/syscall_entry.asm with the caller's saved registers and
 * interrupts off; returns with interrupts off (it turns them on for the
 * calls that need them, proc/syscall.c).
 */
void syscall_dispatch(struct trap_frame *frame);

/*
 * An IPC message in the saved registers: the label in RSI on the way in
 * (RAX, less its top bit, on the way out), the four words in RDX, R10,
 * R8, R9 both ways. Here for the two paths that move messages: the
 * general one (proc/syscall.c) and the fast one (proc/ipc.c).
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
