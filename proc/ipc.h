/* SPDX-License-Identifier: MIT */
/*
 * Synchronous IPC through endpoints, in the style of L4: a sender blocks
 * until a receiver takes its message; a call is a send that then waits for
 * the receiver's reply; reply-and-receive answers the last call and waits
 * for the next message in one step. Messages are a label and
 * IPC_WORDS words and travel in registers (proc/syscall_abi.h).
 */
#ifndef PROC_IPC_H
#define PROC_IPC_H

#include "proc/syscall_abi.h"
#include "lib/types.h"
#include "sched/thread.h" /* struct ipc_message: a thread's message registers */

#define IPC_WORDS     SYS_IPC_WORDS
#define IPC_ENDPOINTS 64

/* A new endpoint's id (> 0), or -ENOMEM when the table is full. */
int ipc_endpoint_create(void);

/* All return 0 or a negative error (-ENOENT: no such endpoint). */
int ipc_send(int endpoint, const struct ipc_message *msg);
int ipc_receive(int endpoint, struct ipc_message *msg);
int ipc_call(int endpoint, const struct ipc_message *msg,
	     struct ipc_message *reply);
/* Answers the last call received (if any), then receives. */
int ipc_reply_receive(int endpoint, const struct ipc_message *reply,
		      struct ipc_message *msg);

struct thread;
struct task;

/* A thread ends: the caller it owes a reply gets -ESRCH. */
void ipc_thread_exit(struct thread *t);

/* A task ended: its endpoints go, and whoever waits on them gets -ENOENT. */
void ipc_task_exit(struct task *task);

#endif
