// SPDX-License-Identifier: MIT
#include "kernel/console.h"
#include "kernel/fbcon.h"
#include "kernel/option_registry.h"
#include "kernel/serial.h"
#include "smp/spinlock.h"

/* Serialises whole writes so lines from different CPUs do not interleave. */
static struct spinlock console_lock = SPINLOCK_INIT;
static enum console_targets targets = CONSOLE_BOTH;
static bool panicking;

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

static void write_unlocked(const char *s, size_t n)
{
	bool to_serial = targets != CONSOLE_FB;
	bool to_fb = targets != CONSOLE_SERIAL && fbcon_active();

	for (size_t i = 0; i < n; i++) {
		if (to_serial)
			serial_putc(s[i]);
		if (to_fb)
			fbcon_putc(s[i]);
	}
}

void console_write(const char *s, size_t n)
{
	uint64_t flags;

	if (panicking) {
		write_unlocked(s, n);
		return;
	}
	flags = spin_lock_irqsave(&console_lock);
	write_unlocked(s, n);
	spin_unlock_irqrestore(&console_lock, flags);
}

void console_enter_panic(void)
{
	panicking = true;
}
