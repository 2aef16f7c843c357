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
#ifndef PROC_SYSCALL_ABI_H
#define PROC_SYSCALL_ABI_H

#include "lib/types.h"

/* Numbers. */
#define SYS_EXIT	    0  /* (status): end the calling task */
#define SYS_YIELD	    1  /* (): give up the CPU */
#define SYS_THREAD_CREATE   2  /* (entry, stack_top, arg): thread id */
#define SYS_THREAD_EXIT	    3  /* (): end the calling thread */
#define SYS_SPAWN	    4  /* (module_name, name_len, arg): task id */
#define SYS_WAIT	    5  /* (task_id): the task's exit status */
#define SYS_MAP		    6  /* (addr, len, prot): 0; anonymous, zeroed */
#define SYS_UNMAP	    7  /* (addr, len): 0 */
#define SYS_PROTECT	    8  /* (addr, len, prot): 0 */
#define SYS_SET_AFFINITY    9  /* (cpu_mask_low64): 0; 0 = any CPU */
#define SYS_CPU_ID	    10 /* (): index of the CPU running the caller */
#define SYS_TIME_NS	    11 /* (): nanoseconds since boot (TSC) */
#define SYS_WRITE	    12 /* (buf, len): bytes written to the console */
#define SYS_SLEEP_NS	    13 /* (ns): 0 after at least ns */
#define SYS_SHM_CREATE	    14 /* (len): shared-memory object id */
#define SYS_SHM_MAP	    15 /* (id, addr, prot): 0 */
#define SYS_ENDPOINT_CREATE 16 /* (): endpoint id */
#define SYS_IPC_SEND	    17 /* (ep, label, w0, w1, w2, w3): 0 */
#define SYS_IPC_RECV	    18 /* (ep): label; words in RDX, R10, R8, R9 */
#define SYS_IPC_CALL	    19 /* (ep, label, w0..w3): reply label; words */
#define SYS_IPC_REPLY_RECV  20 /* (ep, label, w0..w3): next label; words */
#define SYS_COUNT	    21

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

/* Errors (returned negated). */
#define SYS_EPERM  1
#define SYS_ENOENT 2
#define SYS_ESRCH  3
#define SYS_ENOMEM 12
#define SYS_EFAULT 14
#define SYS_EBUSY  16
#define SYS_EEXIST 17
#define SYS_EINVAL 22
#define SYS_ENOSYS 38

#endif
