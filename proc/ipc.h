/* SPDX-License-Identifier: MIT */
/*
 * Synchronous IPC through endpoints, in the style of L4: a sender blocks
 * until a receiver takes its message; a call is a send that then waits for
 * the receiver's reply; reply-and-receive answers the last call and waits
 * for the next message in one step. Messages are a label and
 * IPC_WORDS words and travel in registers (struct ipc_message,
 * uapi/syscall.h); a message may carry one object besides (struct
 * handle_grant, proc/handle.h), which the receiver then holds.
 *
 * An endpoint is a kernel object (struct kobject): user code reaches it
 * only through a handle; kernel code holds a pointer and a reference.
 */
#ifndef PROC_IPC_H
#define PROC_IPC_H

#include "uapi/syscall.h"
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

/* Endpoints whose memory is in use: made, and not yet released (tests). */
unsigned ipc_endpoints_in_use(void);
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
/*
 * Answers the last call received (if any), then receives. If that call's
 * caller died first, the reply reaches nobody: -ESRCH, and no receive.
 */
int ipc_reply_receive(struct endpoint *ep, const struct ipc_message *reply,
		      struct handle_grant *grant, struct ipc_message *msg,
		      struct handle_grant *got);

/*
 * The fast path (proc/ipc_fast.c, docs/user.md): SYS_IPC_CALL or
 * SYS_IPC_REPLY_RECV, from the caller's saved registers to the partner's,
 * when the partner waits on this CPU and the message carries no handle.
 * The whole system call, result in f, called by the SYSCALL entry with
 * interrupts off, as SYSCALL left them: every lock it takes is taken so
 * anyway, and its switch is one. What it declines, having changed
 * nothing, it hands to the general path (syscall_long_call) and returns,
 * interrupts off. A half that goes fast does not return: the partner runs,
 * and the caller, which left its kernel stack, returns to user mode when
 * its reply is written (proc/ipc_fast.c).
 */
struct trap_frame;
void ipc_fast_syscall(struct trap_frame *f);

enum ipc_decline {
	IPC_DECLINE_NONE,      /* it goes fast */
	IPC_DECLINE_OFF,       /* ipc_fastpath=off */
	IPC_DECLINE_HANDLE,    /* the message carries a handle */
	IPC_DECLINE_ERROR,     /* a bad handle: the general path says why */
	IPC_DECLINE_DEAD,      /* the endpoint's owner ended */
	IPC_DECLINE_NOBODY,    /* no receiver waits; no caller is owed here */
	IPC_DECLINE_QUEUED,    /* a sender waits: the receive would not */
	IPC_DECLINE_OTHER_CPU, /* the partner waits on another CPU */
	IPC_DECLINE_WOKEN,     /* it, or we, were woken meanwhile */
	IPC_DECLINE_COUNT,
};

/*
 * Halves that went fast; of those, the ones whose partner went straight
 * back to user mode (direct: it had blocked in the fast path too); threads
 * that blocked in the fast path and were switched to some other way
 * (resumed: by the general path, or woken early); and why the halves that
 * did not go fast did not (index: reason).
 */
struct ipc_path_stats {
	uint64_t fast;
	uint64_t direct;
	uint64_t resumed;
	uint64_t declined[IPC_DECLINE_COUNT];
};

extern const char *const ipc_decline_names[IPC_DECLINE_COUNT];

/* ipc_fastpath= now; tests turn it off and on to run both paths. */
bool ipc_fast_enabled(void);
void ipc_fast_set(bool on);
/* Every CPU's counters summed. */
void ipc_path_stats_read(struct ipc_path_stats *sum);

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
