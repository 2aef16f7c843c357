/* SPDX-License-Identifier: MIT */
/*
 * The local-APIC timer of the calling CPU. It raises VECTOR_TIMER; the
 * handler is whoever installed one with trap_set_handler.
 *
 * One-shots use TSC-deadline mode where the CPU has it (an absolute TSC
 * value: no conversion to a second clock, no 32-bit limit); otherwise, and
 * always for periodic interrupts (TSC-deadline has no periodic mode), the
 * timer counts down at its own rate, divided by 1, which the boot CPU
 * measures once against the TSC.
 *
 * Needs tsc_init and the CPU's local APIC enabled (lapic_init_*).
 */
#ifndef APIC_TIMER_H
#define APIC_TIMER_H

#include "lib/types.h"

/*
 * Masks and stops this CPU's timer and sets its divider. The first call,
 * which must be on the boot CPU, also chooses the one-shot mode and
 * measures the count rate; it prints one line saying what it found.
 */
void apic_timer_init_this_cpu(void);

/*
 * One interrupt, ns nanoseconds from now (0: as soon as possible). In
 * count mode the wait is at most 2^32 - 1 counts (seconds at most): longer
 * requests fire then, and the caller re-arms. Replaces any armed timer.
 */
void apic_timer_oneshot_ns(uint64_t ns);

/* An interrupt every ns nanoseconds (count mode) until stopped. */
void apic_timer_periodic_ns(uint64_t ns);

/*
 * Disarms the timer. An interrupt already pending in the APIC (the timer
 * expired just before, with interrupts off) is still delivered once.
 */
void apic_timer_stop(void);

/* How one-shots are timed: "tsc-deadline" or "oneshot" (count mode);
 * "none" when neither works. Periodic is always the count mode. */
const char *apic_timer_mode_name(void);

/* Count-mode rate at divide-by-1, in Hz; 0 when unknown or unusable. */
uint64_t apic_timer_hz(void);

#endif
