// SPDX-License-Identifier: MIT
#include "kernel/console.h"
#include "kernel/fbcon.h"
#include "kernel/serial.h"
#include "smp/spinlock.h"

/* Serialises whole writes so lines from different CPUs do not interleave. */
static struct spinlock console_lock = SPINLOCK_INIT;
static enum console_targets targets = CONSOLE_BOTH;
static bool panicking;

void console_set_targets(enum console_targets t)
{
	targets = t;
}

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
