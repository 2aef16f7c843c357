/* SPDX-License-Identifier: MIT */
/*
 * The boot modules (the user programs) the loader handed over, found by name
 * for the rest of the kernel. boot/multiboot2.c parses them out of the
 * boot information; kmain registers the result here once.
 */
#ifndef BOOT_BOOT_MODULES_H
#define BOOT_BOOT_MODULES_H

#include "boot/multiboot2.h"
#include "lib/types.h"

/* Keeps info (which must live forever) as the source of every lookup. */
void boot_modules_register(const struct boot_info *info);

/*
 * The boot module named `name` (its multiboot2 command line: tools/make/mkiso.sh
 * names each user program after its file). Returns false if there is none.
 */
bool boot_module(const char *name, const void **data, size_t *size);

/* The modules' names, in the order the loader listed them. */
size_t boot_module_count(void);
const char *boot_module_name(size_t i);

#endif
