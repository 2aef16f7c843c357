// SPDX-License-Identifier: MIT
#include "arch/extable.h"

extern const struct extable_entry extable_start[], extable_end[];

uint64_t extable_fixup(uint64_t rip)
{
	/* Linker symbols: compare them as numbers, not as C objects. */
	size_t count = ((uintptr_t)extable_end - (uintptr_t)extable_start) /
		       sizeof(struct extable_entry);

	/* A handful of entries: a linear scan is enough. */
	for (size_t i = 0; i < count; i++) {
		if (extable_start[i].fault_rip == rip)
			return extable_start[i].fixup_rip;
	}
	return 0;
}
