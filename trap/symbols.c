// SPDX-License-Identifier: MIT
/*
 * The table (tools/make/mksyms.py, section .ksyms): function addresses sorted
 * ascending, each with the offset of its name in a string block.
 */
#include "trap/symbols.h"
#include "lib/format.h"
#include "lib/string.h"

struct ksym {
	uint64_t address;
	uint64_t name_offset;
};

extern const uint64_t ksyms_count;
extern const struct ksym ksyms_entries[];
extern const char ksyms_names[];
extern const char kernel_text_start[], kernel_text_end[];

const char *symbol_lookup(uint64_t addr, uint64_t *offset)
{
	uint64_t lo = 0, hi = ksyms_count;

	if (addr < (uint64_t)kernel_text_start ||
	    addr >= (uint64_t)kernel_text_end || !ksyms_count ||
	    addr < ksyms_entries[0].address)
		return NULL;
	/* The last entry whose address is <= addr. */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (ksyms_entries[mid].address <= addr)
			lo = mid;
		else
			hi = mid;
	}
	*offset = addr - ksyms_entries[lo].address;
	return ksyms_names + ksyms_entries[lo].name_offset;
}

void symbol_format(uint64_t addr, char *buf, size_t size)
{
	uint64_t offset;
	const char *name = symbol_lookup(addr, &offset);

	if (name)
		ksnprintf(buf, size, "<%s+%#llx>", name,
			  (unsigned long long)offset);
	else
		ksnprintf(buf, size, "<?>");
}

uint64_t symbol_address(const char *name)
{
	for (uint64_t i = 0; i < ksyms_count; i++) {
		if (!strcmp(ksyms_names + ksyms_entries[i].name_offset, name))
			return ksyms_entries[i].address;
	}
	return 0;
}
