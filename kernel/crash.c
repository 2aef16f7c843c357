// SPDX-License-Identifier: MIT
#include "kernel/crash.h"
#include "kernel/panic.h"
#include "lib/types.h"

/* An address in the user half: the kernel page tables map nothing there. */
#define UNMAPPED_ADDRESS 0x0000000000badbadULL

/*
 * Each call takes a 1 KiB frame; the boot stack is 16 KiB, so this reaches
 * the guard page after a few calls. The #PF cannot push its frame on the
 * dead stack, which turns it into a #DF, handled on the IST stack.
 */
#define RECURSION_LIMIT 1000000 /* far beyond any stack: never reached */

static __attribute__((noinline)) uint64_t recurse(unsigned depth)
{
	volatile uint8_t frame[1024];

	frame[0] = (uint8_t)depth;
	if (depth == RECURSION_LIMIT)
		return frame[0];
	return recurse(depth + 1) + frame[0];
}

__noreturn void crash_now(enum crash_kind kind)
{
	switch (kind) {
	case CRASH_PANIC:
		panic("crash=panic: a deliberate panic (value %#x)", 0x5eed);
	case CRASH_PAGE_FAULT:
		(void)*(volatile uint64_t *)UNMAPPED_ADDRESS;
		break;
	case CRASH_STACK:
		recurse(0);
		break;
	case CRASH_NONE:
		break;
	}
	panic("crash=%d did not crash", (int)kind);
}
