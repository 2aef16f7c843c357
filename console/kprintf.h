/* SPDX-License-Identifier: MIT */
/* Formatted output to the console (lib/format.h lists the conversions). */
#ifndef CONSOLE_KPRINTF_H
#define CONSOLE_KPRINTF_H

#include "lib/types.h"

/*
 * Formats into a line buffer, then writes it in one console_write, so a
 * line is never split by another CPU's output. Lines longer than the buffer
 * (FORMAT_CHUNK bytes, lib/format.h) are written in pieces.
 */
int kprintf(const char *fmt, ...) __printf(1, 2);
int kvprintf(const char *fmt, va_list ap);

/* To the serial log alone, or to the screen alone (console/console.h). */
int kprintf_serial(const char *fmt, ...) __printf(1, 2);
int kprintf_screen(const char *fmt, ...) __printf(1, 2);

/* Through console_write_emergency: for NMI handlers. */
int kprintf_emergency(const char *fmt, ...) __printf(1, 2);

#endif
