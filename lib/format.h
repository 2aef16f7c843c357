/* SPDX-License-Identifier: MIT */
/*
 * printf-style formatting, independent of where the text goes (pure logic;
 * host unit tests compile it against the C library's snprintf as a reference).
 *
 * Conversions: d i u x X o p s c %; flags - 0 + space #; width and precision
 * (numbers or *); length modifiers hh h l ll z t. No floating point: the kernel
 * has no FPU state of its own to spend on it.
 */
#ifndef LIB_FORMAT_H
#define LIB_FORMAT_H

#include "lib/types.h"

typedef void (*format_sink)(char c, void *ctx);

/* Formats into sink; returns the number of characters produced. */
int format_to(format_sink sink, void *ctx, const char *fmt, va_list ap);

/*
 * Formats through a FORMAT_CHUNK-byte buffer on the stack and hands the text
 * to write in as few calls as possible: one for output that fits, so a line
 * goes out whole (kprintf's console, a user program's SYS_WRITE).
 */
#define FORMAT_CHUNK 256
typedef void (*format_write)(const char *s, size_t n);
int format_chunked(format_write write, const char *fmt, va_list ap);

/*
 * Like C's vsnprintf: writes at most size-1 characters and a NUL (when
 * size > 0); returns the length the whole output would have had.
 */
int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int ksnprintf(char *buf, size_t size, const char *fmt, ...) __printf(3, 4);

#endif
