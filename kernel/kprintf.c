// SPDX-License-Identifier: MIT
#include "kernel/kprintf.h"
#include "kernel/console.h"
#include "lib/format.h"

#define KPRINTF_BUFFER 256

struct line {
	char buf[KPRINTF_BUFFER];
	size_t used;
};

static void line_sink(char c, void *ctx)
{
	struct line *l = ctx;

	if (l->used == sizeof(l->buf)) {
		console_write(l->buf, l->used);
		l->used = 0;
	}
	l->buf[l->used++] = c;
}

int kvprintf(const char *fmt, va_list ap)
{
	struct line l;
	int n;

	l.used = 0;
	n = format_to(line_sink, &l, fmt, ap);
	console_write(l.buf, l.used);
	return n;
}

int kprintf(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kvprintf(fmt, ap);
	va_end(ap);
	return n;
}
