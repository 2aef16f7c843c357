/* SPDX-License-Identifier: MIT */
/*
 * panic(): the kernel cannot go on. Prints the reason, the registers and a
 * backtrace with symbol names, then halts (in test runs it also ends the
 * emulator with a failure status, so a test run never waits for a timeout).
 */
#ifndef TRAP_PANIC_H
#define TRAP_PANIC_H

#include "lib/types.h"

struct trap_frame;

__noreturn void panic(const char *fmt, ...) __printf(1, 2);

/* For the exception handler: the registers come from the trap frame. */
__noreturn void panic_with_frame(const struct trap_frame *frame,
				 const char *fmt, ...) __printf(2, 3);

/* Prints a frame-pointer backtrace starting from rbp (one line per frame). */
void backtrace_print(uint64_t rip, uint64_t rbp);

/* In test runs, panic ends the emulator with the failure status. */
void panic_set_exit_on_panic(bool exit);

/*
 * How a panic stops the other CPUs (an NMI to all but self): registered by
 * init/smp_boot.c once a second CPU is online; with one CPU there is none.
 */
void panic_set_stop_other_cpus(void (*stop)(void));

/* True once a panic stopped the other CPUs: an NMI then means "halt". */
bool panic_stopping_others(void);

/*
 * KASSERT(cond, "invariant in words: values", ...): checks an invariant that
 * must hold; if it does not, panics naming the condition, the place and the
 * values involved.
 */
#define KASSERT(cond, fmt, ...)                                              \
	do {                                                                 \
		if (unlikely(!(cond)))                                       \
			panic("assertion '%s' failed at %s:%d: " fmt, #cond, \
			      __FILE__, __LINE__, ##__VA_ARGS__);            \
	} while (0)

#endif
