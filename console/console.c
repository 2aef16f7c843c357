// SPDX-License-Identifier: MIT
#include "console/console.h"
#include "console/early_log.h"
#include "console/fbcon.h"
#include "lib/option.h"
#include "console/serial.h"
#include "sync/spinlock.h"
#include "arch/x86.h"

/* Serialises whole writes so lines from different CPUs do not interleave. */
static struct spinlock console_lock = SPINLOCK_INIT;
static enum console_targets targets = CONSOLE_BOTH;
static bool panicking;
static console_tap_fn tap;

/* What the screen missed while it was not drawing (console/early_log.h). */
static struct early_log early_log;
/* Closed once the kernel page tables are live without a screen: nothing
 * would ever draw what it kept. */
static bool early_log_open = true;

/*
 * The screen, once the framebuffer is known (console_screen_found): where
 * it is mapped until the kernel page tables (NULL if nowhere), and whether
 * it is between mappings (console_screen_pause), when nothing is drawn.
 */
static struct fb_info screen_fb;
static void *screen_early_virt;
static bool screen_paused;

/*
 * How long an NMI's write waits for the console lock before it writes
 * without it: the holder may be the CPU the NMI interrupted, which cannot
 * let go until the NMI returns. A line takes well under this many spins
 * on any machine we run on.
 */
#define EMERGENCY_LOCK_SPINS 1000000

/* console=: in the order of enum console_targets. */
static const char *const console_words[] = {[CONSOLE_BOTH] = "both",
					    [CONSOLE_SERIAL] = "serial",
					    [CONSOLE_FB] = "fb",
					    NULL};
static const struct option_desc console_desc = {
	.name = "console",
	.type = OPTION_CHOICE,
	.choices = console_words,
	.help = "where output goes: COM1 and the screen, COM1 alone, or the "
		"screen alone"};
static struct option_value console_option;

/* Output moves as soon as the command line is parsed (kmain). */
static void console_option_set(const struct option_value *value)
{
	targets = (enum console_targets)value->choice;
}
OPTION(10, console, &console_desc, &console_option, NULL, console_option_set);

static bool screen_drawing(void)
{
	return fbcon_active() && !screen_paused;
}

static bool screen_allowed(void)
{
	return targets != CONSOLE_SERIAL && screen_drawing();
}

static void draw(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fbcon_putc(s[i]);
}

/* Draws the early log, if console= lets output go to the screen. */
static void early_log_replay(void)
{
	if (targets != CONSOLE_SERIAL && fbcon_active())
		early_log_drain(&early_log, draw);
	else
		early_log_clear(&early_log);
}

/* wanted: where the caller sends it; console= may take an output away. */
static void write_unlocked(const char *s, size_t n, enum console_targets wanted)
{
	bool to_serial = targets != CONSOLE_FB && wanted != CONSOLE_FB;
	bool to_fb = screen_allowed() && wanted != CONSOLE_SERIAL;

	if (tap && !panicking && wanted != CONSOLE_FB)
		tap(s, n);
	if (!screen_drawing() && early_log_open && wanted != CONSOLE_SERIAL)
		early_log_keep(&early_log, s, n);
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

void console_write_emergency(const char *s, size_t n)
{
	uint64_t flags = irq_save();

	for (int spins = 0; !panicking && spins < EMERGENCY_LOCK_SPINS;
	     spins++) {
		if (spin_trylock(&console_lock)) {
			write_unlocked(s, n, CONSOLE_BOTH);
			spin_unlock(&console_lock);
			irq_restore(flags);
			return;
		}
		cpu_relax();
	}
	write_unlocked(s, n, CONSOLE_BOTH);
	irq_restore(flags);
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

void console_hold(void (*fn)(void *ctx), void *ctx)
{
	uint64_t flags = spin_lock_irqsave(&console_lock);

	fn(ctx);
	spin_unlock_irqrestore(&console_lock, flags);
}

/* --- The screen's start and its move ----------------------------------------- */

void console_screen_found(const struct fb_info *fb, void *virt)
{
	uint64_t flags = spin_lock_irqsave(&console_lock);

	screen_fb = *fb;
	screen_early_virt = virt;
	spin_unlock_irqrestore(&console_lock, flags);
}

/* Under the console lock, or in panic. */
static void start_at(void *virt)
{
	if (!fbcon_active() && !fbcon_init(&screen_fb, virt))
		return;
	early_log_replay();
}

bool console_screen_start(void)
{
	uint64_t flags = spin_lock_irqsave(&console_lock);

	if (!fbcon_active() && !screen_paused && screen_early_virt)
		start_at(screen_early_virt);
	spin_unlock_irqrestore(&console_lock, flags);
	return fbcon_active();
}

enum console_screen console_screen_state(void)
{
	if (screen_drawing())
		return CONSOLE_SCREEN_ON;
	return fbcon_usable(&screen_fb) ? CONSOLE_SCREEN_LATER
					: CONSOLE_SCREEN_ABSENT;
}

void console_screen_pause(void)
{
	uint64_t flags = spin_lock_irqsave(&console_lock);

	/* The early mapping goes with the boot page tables. */
	screen_early_virt = NULL;
	screen_paused = true;
	spin_unlock_irqrestore(&console_lock, flags);
}

void console_screen_resume(void *virt)
{
	uint64_t flags = spin_lock_irqsave(&console_lock);

	screen_paused = false;
	if (virt) {
		if (fbcon_active())
			fbcon_move(virt);
		start_at(virt);
	}
	early_log_open = fbcon_active();
	spin_unlock_irqrestore(&console_lock, flags);
}

void console_enter_panic(void)
{
	panicking = true;
	/* A screen known but not yet drawing starts now, with the log. */
	if (!fbcon_active() && !screen_paused && screen_early_virt)
		start_at(screen_early_virt);
}
