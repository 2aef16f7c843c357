/* SPDX-License-Identifier: MIT */
/*
 * The console: every line the kernel prints goes to the serial port and to
 * the framebuffer, or to one of them, as `console=` says (declared in
 * console/console.c, in force once kmain has parsed the command line).
 */
#ifndef CONSOLE_CONSOLE_H
#define CONSOLE_CONSOLE_H

#include "lib/types.h"

enum console_targets {
	CONSOLE_BOTH,	/* console=both (default) */
	CONSOLE_SERIAL, /* console=serial */
	CONSOLE_FB,	/* console=fb */
};

/* Writes n bytes atomically with respect to other CPUs' console writes. */
void console_write(const char *s, size_t n);

/*
 * The same to one output only, if console= lets output go there: a line
 * for the serial log alone (what the screen shows instead, for tests), or
 * for the screen alone (a page of results that serial has in full).
 */
void console_write_serial(const char *s, size_t n);
void console_write_screen(const char *s, size_t n);

/*
 * A tap sees every byte written for the serial log (console_write and
 * console_write_serial, whatever console= says), under the console lock:
 * bench/record.c keeps the benchmarks' output this way. NULL removes it.
 */
typedef void (*console_tap_fn)(const char *s, size_t n);
void console_set_tap(console_tap_fn tap);

/*
 * The screen as a page (console/fbcon.h), under the console lock; nothing
 * happens without a screen or with console=serial. console_screen_size
 * gives 0 and 0 then.
 */
void console_screen_size(unsigned *columns, unsigned *rows);
void console_screen_clear(void);
unsigned console_screen_matrix_room(unsigned text_rows);
bool console_screen_matrix(unsigned text_rows, unsigned side, unsigned quiet,
			   bool (*dark)(const void *ctx, unsigned x,
					unsigned y),
			   const void *ctx);

/*
 * For panic: from now on this CPU writes without taking the console lock,
 * which another CPU may hold forever.
 */
void console_enter_panic(void);

#endif
