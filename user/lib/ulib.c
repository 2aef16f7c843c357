// SPDX-License-Identifier: MIT
/*
 * The user-space runtime (see ulib.h).
 * The memory and string functions are the kernel's (lib/string.c), the
 * formatter too (lib/format.c): both are pure and built for user space
 * as well.
 */
#include "user/lib/ulib.h"

/* --- Output ----------------------------------------------------------------- */

/* Writes all len bytes unless the kernel refuses; returns 0 or the error. */
static long write_all(const char *buf, size_t len)
{
	while (len) {
		long n = sys_write(buf, len);

		if (n < 0)
			return n;
		if (n == 0) /* no progress: do not spin forever */
			return -SYS_EINVAL;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* printf has nowhere to report a failed write: like C's, it goes on. */
static void write_out(const char *buf, size_t len)
{
	write_all(buf, len);
}

int vprintf(const char *fmt, va_list ap)
{
	return format_chunked(write_out, fmt, ap);
}

/* The variadic front end; console/kprintf.c's kprintf is its twin. */
int printf(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vprintf(fmt, ap);
	va_end(ap);
	return n;
}

/* --- Threads ------------------------------------------------------------------ */

/* What user/lib/start.asm's ulib_thread_entry finds at RDI. */
struct thread_start {
	void (*fn)(long);
	long arg;
};

/* In start.asm; its argument is the address of a struct thread_start. */
void ulib_thread_entry(long start);

long thread_start(void (*fn)(long), void *stack, size_t size, long arg)
{
	uintptr_t top = ALIGN_DOWN((uintptr_t)stack + size, 16);
	struct thread_start *ts;

	if (size < 256)
		return -SYS_EINVAL;
	/*
	 * The function and its argument go at the very top of the new stack
	 * (16 bytes, so the stack below stays 16-byte aligned); the thread
	 * gets their address in RDI and its pushes go below them.
	 */
	ts = (struct thread_start *)(top - sizeof(*ts));
	ts->fn = fn;
	ts->arg = arg;
	return sys_thread_create(ulib_thread_entry, ts, (long)ts);
}

/* The names uapi/syscall.h gives its errors, by number. */
static const char *const error_names[SYS_ERROR_LIMIT] = {
	[SYS_EPERM] = "EPERM",	 [SYS_ENOENT] = "ENOENT",
	[SYS_ESRCH] = "ESRCH",	 [SYS_EBADF] = "EBADF",
	[SYS_ENOMEM] = "ENOMEM", [SYS_EFAULT] = "EFAULT",
	[SYS_EBUSY] = "EBUSY",	 [SYS_EEXIST] = "EEXIST",
	[SYS_EINVAL] = "EINVAL", [SYS_EMFILE] = "EMFILE",
	[SYS_ENOSYS] = "ENOSYS", [SYS_EIDRM] = "EIDRM",
};

const char *sys_error_name(unsigned long e)
{
	return e < SYS_ERROR_LIMIT ? error_names[e] : NULL;
}
