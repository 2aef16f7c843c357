/* SPDX-License-Identifier: MIT */
/*
 * The user-space runtime: the few C library functions programs need,
 * printf on top of the kernel's own formatter (lib/format.c, compiled
 * into the user library too), and threads.
 *
 * A program defines int main(long arg); user/lib/start.asm calls it with
 * the argument the kernel passed and ends the task with its return value.
 */
#ifndef USER_LIB_ULIB_H
#define USER_LIB_ULIB_H

/* memcpy and friends: the kernel's (the compiler may call them itself). */
#include "lib/string.h"
#include "lib/types.h"
#include "lib/format.h"
#include "user/lib/syscall.h"

int main(long arg);

/*
 * Formatted output to the console through SYS_WRITE; the conversions are
 * those of lib/format.h (no floating point). Up to FORMAT_CHUNK (256)
 * characters go out in one system call, so lines from different programs
 * do not mix unless they are longer than that. Return the number of
 * characters formatted.
 */
int printf(const char *fmt, ...) __printf(1, 2);
int vprintf(const char *fmt, va_list ap);

/*
 * C's names for lib/format.c's own, whose k prefix keeps them apart from the
 * C library's in the host tests.
 */
#define snprintf  ksnprintf
#define vsnprintf kvsnprintf

/*
 * Runs fn(arg) in a new thread on the stack [stack, stack + size); when fn
 * returns the thread ends. Returns the thread id or a negative error. The
 * stack must stay untouched by others until the thread has ended.
 */
long thread_start(void (*fn)(long), void *stack, size_t size, long arg);

/* Every error of uapi/syscall.h is a positive number below this. */
#define SYS_ERROR_LIMIT (SYS_EIDRM + 1)

/* The name of error e ("EPERM" for SYS_EPERM), or NULL: no such error. */
const char *sys_error_name(unsigned long e);

/* The i-th handle the parent passed to sys_spawn. */
static inline long spawned_handle(unsigned i)
{
	return SYS_HANDLE_SPAWNED((long)i);
}

#endif
