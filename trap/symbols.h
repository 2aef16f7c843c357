/* SPDX-License-Identifier: MIT */
/* Function names for addresses, from the table embedded at link time. */
#ifndef TRAP_SYMBOLS_H
#define TRAP_SYMBOLS_H

#include "lib/types.h"

/*
 * The function containing addr, and addr's offset into it; NULL when addr
 * is outside the kernel's text.
 */
const char *symbol_lookup(uint64_t addr, uint64_t *offset);

/* "<name+0xoff>", or "<?>" when unknown. */
void symbol_format(uint64_t addr, char *buf, size_t size);

/* The address of a function by name, or 0. */
uint64_t symbol_address(const char *name);

#endif
