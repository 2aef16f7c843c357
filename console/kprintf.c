// SPDX-License-Identifier: MIT
#include "console/kprintf.h"
#include "console/console.h"
#include "lib/format.h"

int kvprintf(const char *fmt, va_list ap)
{
	return format_chunked(console_write, fmt, ap);
}

/* The variadic front end; user/lib/ulib.c's printf is its twin for user mode. */
int kprintf(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kvprintf(fmt, ap);
	va_end(ap);
	return n;
}

int kprintf_serial(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = format_chunked(console_write_serial, fmt, ap);
	va_end(ap);
	return n;
}

int kprintf_screen(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = format_chunked(console_write_screen, fmt, ap);
	va_end(ap);
	return n;
}

int kprintf_emergency(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = format_chunked(console_write_emergency, fmt, ap);
	va_end(ap);
	return n;
}
