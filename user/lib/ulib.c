// SPDX-License-Identifier: MIT
/*
 * The user-space runtime (see ulib.h).
 * The memory and string functions are the kernel's (lib/string.c), the
 * formatter too (lib/format.c): both are pure and built for user space
 * as well.
 */
#include "user/lib/ulib.h"
#include "lib/format.h"

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

/* printf's output collects here and leaves in as few writes as possible. */
struct out_buffer {
	char data[256];
	size_t used;
};

static void flush(struct out_buffer *b)
{
	write_all(b->data, b->used);
	b->used = 0;
}

static void to_buffer(char c, void *ctx)
{
	struct out_buffer *b = ctx;

	if (b->used == sizeof(b->data))
		flush(b);
	b->data[b->used++] = c;
}

int vprintf(const char *fmt, va_list ap)
{
	struct out_buffer b;
	int n;

	b.used = 0;
	n = format_to(to_buffer, &b, fmt, ap);
	flush(&b);
	return n;
}

int printf(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vprintf(fmt, ap);
	va_end(ap);
	return n;
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	return kvsnprintf(buf, size, fmt, ap);
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kvsnprintf(buf, size, fmt, ap);
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
