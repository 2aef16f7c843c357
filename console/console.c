// SPDX-License-Identifier: MIT
#include "console/console.h"
#include "console/fbcon.h"
#include "lib/option.h"
#include "console/serial.h"
#include "sync/spinlock.h"

/* Serialises whole writes so lines from different CPUs do not interleave. */
static struct spinlock console_lock = SPINLOCK_INIT;
static enum console_targets targets = CONSOLE_BOTH;
static bool panicking;
static console_tap_fn tap;

/* console=: in the order of enum console_targets. */
static const char *const console_words[] = {[CONSOLE_BOTH] = "both",
					    [CONSOLE_SERIAL] = "serial",
					    [CONSOLE_FB] = "fb",
					    NULL};
static const struct option_desc console_desc = {.name = "console",
						.type = OPTION_CHOICE,
						.choices = console_words,
						.help = "where output goes"};
static struct option_value console_option;

/* Output moves as soon as the command line is parsed (kmain). */
static void console_option_set(const struct option_value *value)
{
	targets = (enum console_targets)value->choice;
}
OPTION(10, console, &console_desc, &console_option, NULL, console_option_set);

static bool screen_allowed(void)
{
	return targets != CONSOLE_SERIAL && fbcon_active();
}

/* wanted: where the caller sends it; console= may take an output away. */
static void write_unlocked(const char *s, size_t n, enum console_targets wanted)
{
	bool to_serial = targets != CONSOLE_FB && wanted != CONSOLE_FB;
	bool to_fb = screen_allowed() && wanted != CONSOLE_SERIAL;

	if (tap && !panicking && wanted != CONSOLE_FB)
		tap(s, n);
	for (size_t i = 0; i < n; i++) {
		if (to_serial)
			serial_putc(s[i]);
		if (to_fb)
			fbcon_putc(s[i]);
	}
}

static void write_locked(const char *s, size_t n, enum console_targets wanted)
{
	uint64_t flags;

	if (panicking) {
		write_unlocked(s, n, wanted);
		return;
	}
	flags = spin_lock_irqsave(&console_lock);
	write_unlocked(s, n, wanted);
	spin_unlock_irqrestore(&console_lock, flags);
}

void console_write(const char *s, size_t n)
{
	write_locked(s, n, CONSOLE_BOTH);
}

void console_write_serial(const char *s, size_t n)
{
	write_locked(s, n, CONSOLE_SERIAL);
}

void console_write_screen(const char *s, size_t n)
{
	write_locked(s, n, CONSOLE_FB);
}

void console_set_tap(console_tap_fn fn)
{
	uint64_t flags = spin_lock_irqsave(&console_lock);

	tap = fn;
	spin_unlock_irqrestore(&console_lock, flags);
}

/* --- The screen as a page ---------------------------------------------------- */

void console_screen_size(unsigned *columns, unsigned *rows)
{
	*columns = 0;
	*rows = 0;
	if (screen_allowed())
		fbcon_size(columns, rows);
}

void console_screen_clear(void)
{
	uint64_t flags;

	if (!screen_allowed())
		return;
	flags = spin_lock_irqsave(&console_lock);
	fbcon_clear();
	spin_unlock_irqrestore(&console_lock, flags);
}

unsigned console_screen_matrix_room(unsigned text_rows)
{
	return screen_allowed() ? fbcon_matrix_room(text_rows) : 0;
}

bool console_screen_matrix(unsigned text_rows, unsigned side, unsigned quiet,
			   bool (*dark)(const void *ctx, unsigned x,
					unsigned y),
			   const void *ctx)
{
	uint64_t flags;
	bool drawn;

	if (!screen_allowed())
		return false;
	flags = spin_lock_irqsave(&console_lock);
	drawn = fbcon_draw_matrix(text_rows, side, quiet, dark, ctx);
	spin_unlock_irqrestore(&console_lock, flags);
	return drawn;
}

void console_enter_panic(void)
{
	panicking = true;
}
