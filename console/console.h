/* SPDX-License-Identifier: MIT */
/*
 * The console: every line the kernel prints goes to the serial port and to
 * the framebuffer, or to one of them, as `console=` says (declared in
 * console/console.c, in force once kmain has parsed the command line).
 */
#ifndef CONSOLE_CONSOLE_H
#define CONSOLE_CONSOLE_H

#include "console/fbcon.h"
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
 * For NMI handlers: console_write, unless the console lock stays taken
 * for a bounded while (the NMI may have interrupted its holder on this
 * CPU); then it writes without the lock, perhaps mixed into the holder's
 * line, rather than wait forever.
 */
void console_write_emergency(const char *s, size_t n);

/* Runs fn(ctx) holding the console lock, interrupts off (for tests). */
void console_hold(void (*fn)(void *ctx), void *ctx);

/*
 * For panic: from now on every CPU writes without taking the console lock,
 * which another CPU may hold forever. A screen that is known but not yet
 * drawing starts, with the early log (below).
 */
void console_enter_panic(void);

/*
 * The screen's life at boot (docs/hardware.md, "The screen at boot").
 * Until it draws, whatever is meant for it is kept in the early log and
 * drawn when it starts, so no line of the boot is missing from it.
 *
 * console_screen_found: the framebuffer is known and mapped at virt
 * (NULL: not until the kernel page tables), which a panic from now on
 * starts it at. console_screen_start starts it there, once console= and
 * font_scale= are in force; true if it draws. console_screen_pause and
 * console_screen_resume surround the switch to the kernel page tables:
 * in between, output is kept rather than drawn; resume draws at virt, the
 * new mapping, and starts the screen if it had not started.
 */
void console_screen_found(const struct fb_info *fb, void *virt);
bool console_screen_start(void);
void console_screen_pause(void);
void console_screen_resume(void *virt);

enum console_screen {
	CONSOLE_SCREEN_ABSENT, /* none, or a mode fbcon cannot draw in */
	CONSOLE_SCREEN_ON,     /* drawing */
	CONSOLE_SCREEN_LATER, /* drawable, starts with the kernel page tables */
};
enum console_screen console_screen_state(void);

#endif
