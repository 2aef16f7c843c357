/* SPDX-License-Identifier: MIT */
/*
 * The console: every line the kernel prints goes to the serial port and to
 * the framebuffer, or to one of them, as `console=` says (declared in
 * kernel/console.c, in force once kmain has parsed the command line).
 */
#ifndef KERNEL_CONSOLE_H
#define KERNEL_CONSOLE_H

#include "lib/types.h"

enum console_targets {
	CONSOLE_BOTH,	/* console=both (default) */
	CONSOLE_SERIAL, /* console=serial */
	CONSOLE_FB,	/* console=fb */
};

/* Writes n bytes atomically with respect to other CPUs' console writes. */
void console_write(const char *s, size_t n);

/*
 * For panic: from now on this CPU writes without taking the console lock,
 * which another CPU may hold forever.
 */
void console_enter_panic(void);

#endif
