/* SPDX-License-Identifier: MIT */
/*
 * The system-call interface between user programs (user/) and the kernel.
 * Shared by both sides: no kernel types, only lib/types.h's fixed-width
 * integers.
 *
 * Convention (the same registers as Linux x86-64, so tools read it easily):
 * SYSCALL with the number in RAX and arguments in RDI, RSI, RDX, R10, R8,
 * R9; the result comes back in RAX: >= 0 on success, a negative SYS_E*
 * error otherwise. SYSCALL itself clobbers RCX and R11.
 *
 * IPC messages are short and travel in registers: a label (a
 * non-negative number the receiver interprets) and SYS_IPC_WORDS data
 * words. Sending: the label in RSI, the words in RDX, R10, R8, R9. A
 * received message: the label in RAX, the words in RDX, R10, R8, R9.
 */
#ifndef UAPI_SYSCALL_H
#define UAPI_SYSCALL_H

#include "lib/types.h"

/* Numbers. */
#define SYS_EXIT	    0  /* (status): end the calling task */
#define SYS_YIELD	    1  /* (): give up the CPU */
#define SYS_THREAD_CREATE   2  /* (entry, stack_top, arg): thread id */
#define SYS_THREAD_EXIT	    3  /* (): end the calling thread */
#define SYS_SPAWN	    4  /* (name, len, arg, handles, count): task id */
#define SYS_WAIT	    5  /* (task_id): the task's exit status */
#define SYS_MAP		    6  /* (addr, len, prot): 0; anonymous, zeroed */
#define SYS_UNMAP	    7  /* (addr, len): 0 */
#define SYS_PROTECT	    8  /* (addr, len, prot): 0 */
#define SYS_SET_AFFINITY    9  /* (cpu_mask_low64): 0; 0 = any CPU */
#define SYS_CPU_ID	    10 /* (): index of the CPU running the caller */
#define SYS_TIME_NS	    11 /* (): nanoseconds since boot (TSC) */
#define SYS_WRITE	    12 /* (buf, len): bytes written to the console */
#define SYS_SLEEP_NS	    13 /* (ns): 0 after at least ns */
#define SYS_SHM_CREATE	    14 /* (len): a shared-memory handle */
#define SYS_SHM_MAP	    15 /* (handle, addr, prot): 0 */
#define SYS_ENDPOINT_CREATE 16 /* (): an endpoint handle */
#define SYS_IPC_SEND	    17 /* (ep, label, w0, w1, w2, w3): 0 */
#define SYS_IPC_RECV	    18 /* (ep): label; words in RDX, R10, R8, R9 */
#define SYS_IPC_CALL	    19 /* (ep, label, w0..w3): reply label; words */
#define SYS_IPC_REPLY_RECV  20 /* (ep, label, w0..w3): next label; words */
#define SYS_HANDLE_DUP	    21 /* (handle, rights): a new handle */
#define SYS_HANDLE_CLOSE    22 /* (handle): 0 */
#define SYS_HANDLE_INFO	    23 /* (handle): type and rights, see below */
#define SYS_SHM_REVOKE	    24 /* (handle): 0; unmapped from every task */
#define SYS_COUNT	    25

/*
 * Handles. A task names the kernel objects it may use (shared memory,
 * endpoints) by handles: indexes into its own handle table (proc/handle.h),
 * never by a global number. A handle value is
 *
 *	generation << SYS_HANDLE_SLOT_BITS | slot
 *
 * and is always > 0. Closing a slot bumps its generation, so a closed
 * handle stays refused after its slot is reused. Each handle carries
 * rights, SYS_RIGHT_* below; an operation needs the right it names.
 * SYS_SHM_MAP's prot must be covered by the handle's MAP_* rights
 * (SYS_PROT_READ is SYS_RIGHT_MAP_READ and so on), and every mapping
 * needs SYS_RIGHT_MAP_READ (x86 pages are always readable); prot 0 is
 * -SYS_EINVAL. SYS_PROTECT on a shared page gives at most the prot it
 * was mapped with (-SYS_EPERM). SYS_HANDLE_DUP makes a
 * handle to the same object with rights & the mask given; asking for a
 * right the handle lacks is -SYS_EPERM, never a raise.
 *
 * What a new object's handle holds: shm, SYS_RIGHT_SHM_ALL; endpoint,
 * SYS_RIGHT_ENDPOINT_ALL.
 *
 * SYS_HANDLE_INFO returns type << SYS_HANDLE_INFO_TYPE_SHIFT | rights.
 *
 * Passing handles (each needs SYS_RIGHT_GRANT on the handle passed; the
 * receiver gets the rights the sender had, or fewer):
 *  - SYS_SPAWN: the `count` handles in the array at `handles` go, in
 *    order, to the child's slots 0..count-1, generation 1: the child finds
 *    the i-th at SYS_HANDLE_SPAWNED(i).
 *  - IPC (SYS_IPC_SEND, SYS_IPC_CALL and the reply of SYS_IPC_REPLY_RECV):
 *    a label with SYS_IPC_LABEL_HANDLE set carries the handle in word 0
 *    and a rights mask in word 1 (the rights it gets: those of the handle
 *    & the mask). The receiver sees the label as sent, a new handle of its
 *    own in word 0 and the rights it holds in word 1; when the handle
 *    would leave its table fewer than 8 free slots, word 0 is -SYS_EMFILE
 *    and the object is not received (the send still succeeds).
 * The sender keeps its own handle. A task's handles close when it ends.
 */
#define SYS_HANDLE_SLOT_BITS	   6
#define SYS_HANDLE_SLOTS	   (1 << SYS_HANDLE_SLOT_BITS)
#define SYS_HANDLE_SPAWNED(i)	   ((1L << SYS_HANDLE_SLOT_BITS) | (i))
#define SYS_HANDLE_SPAWN_MAX	   8
#define SYS_HANDLE_INFO_TYPE_SHIFT 16
#define SYS_IPC_LABEL_HANDLE	   (1ULL << 62)

/* Object types (SYS_HANDLE_INFO). */
#define SYS_HANDLE_TYPE_SHM	 1
#define SYS_HANDLE_TYPE_ENDPOINT 2

/* Rights. */
#define SYS_RIGHT_MAP_READ  0x01 /* shm: SYS_SHM_MAP with SYS_PROT_READ */
#define SYS_RIGHT_MAP_WRITE 0x02 /* shm: ... SYS_PROT_WRITE */
#define SYS_RIGHT_MAP_EXEC  0x04 /* shm: ... SYS_PROT_EXEC */
#define SYS_RIGHT_SEND	    0x08 /* endpoint: send and call */
#define SYS_RIGHT_RECEIVE   0x10 /* endpoint: receive, reply-and-receive */
#define SYS_RIGHT_GRANT	    0x20 /* pass the handle: spawn, IPC */
#define SYS_RIGHT_REVOKE    0x40 /* shm: take the memory back from all */
#define SYS_RIGHT_MAP_ALL \
	(SYS_RIGHT_MAP_READ | SYS_RIGHT_MAP_WRITE | SYS_RIGHT_MAP_EXEC)
#define SYS_RIGHT_SHM_ALL \
	(SYS_RIGHT_MAP_ALL | SYS_RIGHT_GRANT | SYS_RIGHT_REVOKE)
#define SYS_RIGHT_ENDPOINT_ALL \
	(SYS_RIGHT_SEND | SYS_RIGHT_RECEIVE | SYS_RIGHT_GRANT)

#define SYS_IPC_WORDS 4

/*
 * An IPC message: the kernel's (proc/ipc.c) and the user runtime's
 * (user/lib/syscall.c), which moves it to and from the registers above.
 */
struct ipc_message {
	uint64_t label;
	uint64_t words[SYS_IPC_WORDS];
};

/* Memory protections for SYS_MAP and SYS_PROTECT. */
#define SYS_PROT_READ  0x1
#define SYS_PROT_WRITE 0x2
#define SYS_PROT_EXEC  0x4

/* SYS_WAIT's status of a task killed by a fault. */
#define SYS_STATUS_FAULT (-1000)

/* Errors (returned negated). */
#define SYS_EPERM  1 /* the handle lacks a right */
#define SYS_ENOENT 2
#define SYS_ESRCH  3
#define SYS_EBADF  9 /* not a handle (closed, stale, forged, other type) */
#define SYS_ENOMEM 12
#define SYS_EFAULT 14
#define SYS_EBUSY  16 /* a task's share used up, or the task table full */
#define SYS_EEXIST 17
#define SYS_EINVAL 22
#define SYS_EMFILE 24 /* the handle table is full */
#define SYS_ENOSYS 38
#define SYS_EIDRM  43 /* the shared memory was revoked */

#endif
