// SPDX-License-Identifier: MIT
#include "trap/crash.h"
#include "lib/option.h"
#include "trap/panic.h"
#include "lib/types.h"

/* crash=: in the order of enum crash_kind. */
static const char *const crash_words[] = {[CRASH_NONE] = "none",
					  [CRASH_PANIC] = "panic",
					  [CRASH_PAGE_FAULT] = "pagefault",
					  [CRASH_STACK] = "stack",
					  NULL};
static const struct option_desc crash_desc = {
	.name = "crash",
	.type = OPTION_CHOICE,
	.choices = crash_words,
	.help = "crash on purpose after boot, to see the report"};
static struct option_value crash_option;
OPTION(30, crash, &crash_desc, &crash_option, NULL, NULL);

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

void crash_if_requested(void)
{
	if (crash_option.choice != CRASH_NONE)
		crash_now((enum crash_kind)crash_option.choice);
}
