/* SPDX-License-Identifier: MIT */
/*
 * Deliberate crashes (`crash=` on the command line), so the fatal paths can
 * be seen and tested: what a panic, a kernel page fault and a kernel stack
 * overflow print.
 */
#ifndef TRAP_CRASH_H
#define TRAP_CRASH_H

enum crash_kind {
	CRASH_NONE,	  /* crash=none (default) */
	CRASH_PANIC,	  /* crash=panic: panic() with a message */
	CRASH_PAGE_FAULT, /* crash=pagefault: read an unmapped address */
	CRASH_STACK,	  /* crash=stack: overflow into the guard page */
};

__attribute__((noreturn)) void crash_now(enum crash_kind kind);

/* Crashes as crash= asks (kmain, after boot); returns with crash=none. */
void crash_if_requested(void);

#endif
