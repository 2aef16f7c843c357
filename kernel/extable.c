// SPDX-License-Identifier: MIT
#include "kernel/extable.h"

extern const struct extable_entry extable_start[], extable_end[];

uint64_t extable_fixup(uint64_t rip)
{
	/* A handful of entries: a linear scan is enough. */
	for (const struct extable_entry *e = extable_start; e < extable_end;
	     e++) {
		if (e->fault_rip == rip)
			return e->fixup_rip;
	}
	return 0;
}
