/* SPDX-License-Identifier: MIT */
/*
 * System calls for user programs: one inline-assembly helper that executes
 * SYSCALL, and a typed wrapper for each call in uapi/syscall.h (the
 * numbers, registers and errors are explained there). Every wrapper returns
 * what the kernel returned: >= 0 on success, -SYS_E* on failure.
 */
#ifndef USER_LIB_SYSCALL_H
#define USER_LIB_SYSCALL_H

#include "lib/types.h"
#include "uapi/syscall.h"

/*
 * Executes SYSCALL number nr with six arguments and returns RAX. When words
 * is not NULL it receives RDX, R10, R8 and R9 as the kernel left them: the
 * words of a received IPC message.
 *
 * Every argument register is an output as well as an input ("+"), since
 * the kernel may return data in them and the compiler must not assume
 * they keep their values; RCX and R11 are overwritten by SYSCALL itself
 * (with the return address and RFLAGS). "memory": the kernel reads and
 * writes user memory (SYS_WRITE's buffer, SYS_MAP's pages), so values
 * the compiler holds in registers must be stored before and reloaded
 * after.
 */
static inline long syscall6_words(long nr, long a0, long a1, long a2, long a3,
				  long a4, long a5, uint64_t *words)
{
	register long r10 __asm__("r10") = a3;
	register long r8 __asm__("r8") = a4;
	register long r9 __asm__("r9") = a5;
	long ret = nr;

	__asm__ volatile("syscall"
			 : "+a"(ret), "+D"(a0), "+S"(a1), "+d"(a2), "+r"(r10),
			   "+r"(r8), "+r"(r9)
			 :
			 : "rcx", "r11", "memory");
	if (words) {
		words[0] = (uint64_t)a2;
		words[1] = (uint64_t)r10;
		words[2] = (uint64_t)r8;
		words[3] = (uint64_t)r9;
	}
	return ret;
}

/* The same when nothing comes back but RAX (most calls). */
static inline long syscall6(long nr, long a0, long a1, long a2, long a3,
			    long a4, long a5)
{
	return syscall6_words(nr, a0, a1, a2, a3, a4, a5, NULL);
}

__noreturn void sys_exit(long status);
long sys_yield(void);

/*
 * A new thread in this task, entered at entry with RSP = stack_top and
 * RDI = arg, like _start: there is no return address, so entry must not
 * return. thread_start (user/lib/ulib.h) wraps this for C functions.
 */
long sys_thread_create(void (*entry)(long), void *stack_top, long arg);
__noreturn void sys_thread_exit(void);

/*
 * A new task running the boot module called name (len bytes, no NUL), its
 * main() called with arg, holding the count handles listed (each needs
 * SYS_RIGHT_GRANT) with their rights: the child finds handles[i] at
 * spawned_handle(i) (user/lib/ulib.h).
 */
long sys_spawn(const char *name, size_t len, long arg, const long *handles,
	       size_t count);
long sys_wait(long task);

/* prot: SYS_PROT_* bits. Addresses and lengths are whole pages. */
long sys_map(void *addr, size_t len, unsigned prot);
long sys_unmap(void *addr, size_t len);
long sys_protect(void *addr, size_t len, unsigned prot);

long sys_set_affinity(uint64_t cpu_mask);
long sys_cpu_id(void);
long sys_time_ns(void);
long sys_write(const void *buf, size_t len);
long sys_sleep_ns(uint64_t ns);

/* Handles (uapi/syscall.h): values, rights, errors. */
long sys_shm_create(size_t len);
long sys_shm_map(long shm, void *addr, unsigned prot);
/* Unmaps the object from every task that maps it; needs SYS_RIGHT_REVOKE. */
long sys_shm_revoke(long shm);
long sys_handle_dup(long h, unsigned rights);
long sys_handle_close(long h);
long sys_handle_info(long h);

/*
 * One wrapper per IPC call of proc/ipc.h, which these mirror on purpose.
 * They are inline so that a message built in registers goes into the
 * SYSCALL registers directly: the IPC round trip is what the fast path
 * (docs/user.md) makes short, and a call through a wrapper that spills
 * the message to memory and back would be a fifth of it.
 *
 * The receiving calls return the label of the message received (the reply
 * for sys_ipc_call) and store the whole message in *in, label included.
 * On an error the label holds the (negative) error and the words mean
 * nothing.
 */
long sys_endpoint_create(void);

static inline long sys_ipc_send(long ep, const struct ipc_message *msg)
{
	return syscall6(SYS_IPC_SEND, ep, (long)msg->label, (long)msg->words[0],
			(long)msg->words[1], (long)msg->words[2],
			(long)msg->words[3]);
}

static inline long sys_ipc_recv(long ep, struct ipc_message *in)
{
	long label = syscall6_words(SYS_IPC_RECV, ep, 0, 0, 0, 0, 0, in->words);

	in->label = (uint64_t)label;
	return label;
}

/* A message out and one back in: the call and the reply-and-receive. */
static inline long ipc_exchange(long nr, long ep, const struct ipc_message *out,
				struct ipc_message *in)
{
	long label =
		syscall6_words(nr, ep, (long)out->label, (long)out->words[0],
			       (long)out->words[1], (long)out->words[2],
			       (long)out->words[3], in->words);

	in->label = (uint64_t)label;
	return label;
}

static inline long sys_ipc_call(long ep, const struct ipc_message *out,
				struct ipc_message *in)
{
	return ipc_exchange(SYS_IPC_CALL, ep, out, in);
}

static inline long sys_ipc_reply_recv(long ep, const struct ipc_message *out,
				      struct ipc_message *in)
{
	return ipc_exchange(SYS_IPC_REPLY_RECV, ep, out, in);
}

#endif
