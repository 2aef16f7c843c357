/* SPDX-License-Identifier: MIT */
/*
 * Synchronous IPC through endpoints, in the style of L4: a sender blocks
 * until a receiver takes its message; a call is a send that then waits for
 * the receiver's reply; reply-and-receive answers the last call and waits
 * for the next message in one step. Messages are a label and
 * IPC_WORDS words and travel in registers (struct ipc_message,
 * proc/syscall_abi.h); a message may carry one object besides (struct
 * handle_grant, proc/handle.h), which the receiver then holds.
 *
 * An endpoint is a kernel object (struct kobject): user code reaches it
 * only through a handle; kernel code holds a pointer and a reference.
 */
#ifndef PROC_IPC_H
#define PROC_IPC_H

#include "proc/syscall_abi.h"
#include "lib/types.h"

#define IPC_WORDS     SYS_IPC_WORDS
#define IPC_ENDPOINTS 64

struct endpoint;
struct handle_grant;
struct kobject;

/*
 * A new endpoint owned by the calling task (none for a kernel thread: it
 * lives until its last reference goes), with one reference for the
 * caller; NULL when all IPC_ENDPOINTS are in use.
 */
struct endpoint *ipc_endpoint_create(void);
struct kobject *ipc_endpoint_object(struct endpoint *ep);
struct endpoint *ipc_object_endpoint(struct kobject *obj);
/* Drops the caller's reference (kobject_put). */
void ipc_endpoint_put(struct endpoint *ep);
/* The last reference went (proc/handle.c calls it): the slot is free. */
void ipc_endpoint_release(struct kobject *obj);

/*
 * All return 0 or a negative error (-ENOENT: the endpoint's owner ended).
 * `grant`, when not NULL, is an object to pass with the message (its obj
 * NULL: none); on return its obj is NULL when the receiver took it and
 * still the caller's reference otherwise. `got`, when not NULL, receives
 * the object that came with the message received (obj NULL: none); with
 * `got` NULL such an object is dropped.
 */
int ipc_send(struct endpoint *ep, const struct ipc_message *msg,
	     struct handle_grant *grant);
int ipc_receive(struct endpoint *ep, struct ipc_message *msg,
		struct handle_grant *got);
int ipc_call(struct endpoint *ep, const struct ipc_message *msg,
	     struct handle_grant *grant, struct ipc_message *reply,
	     struct handle_grant *got);
/* Answers the last call received (if any), then receives. */
int ipc_reply_receive(struct endpoint *ep, const struct ipc_message *reply,
		      struct handle_grant *grant, struct ipc_message *msg,
		      struct handle_grant *got);

struct thread;
struct task;

/* A thread ends: the caller it owes a reply gets -ESRCH. */
void ipc_thread_exit(struct thread *t);

/*
 * A task ended: the endpoints it created die, and whoever waits on them
 * gets -ENOENT, as does every later use (the objects go with their last
 * handle).
 */
void ipc_task_exit(struct task *task);

#endif
