/* SPDX-License-Identifier: MIT */
/* System calls (numbers and registers: proc/syscall_abi.h). */
#ifndef PROC_SYSCALL_H
#define PROC_SYSCALL_H

struct trap_frame;

/* Points this CPU's SYSCALL instruction at the kernel (every CPU). */
void syscall_init_this_cpu(void);

/*
 * Called by proc/syscall_entry.asm with the caller's saved registers and
 * interrupts off; returns with interrupts off (it turns them on for the
 * calls that need them, proc/syscall.c).
 */
void syscall_dispatch(struct trap_frame *frame);

#endif
