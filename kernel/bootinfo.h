/* SPDX-License-Identifier: MIT */
/* What the boot loader handed over, for the rest of the kernel. */
#ifndef KERNEL_BOOTINFO_H
#define KERNEL_BOOTINFO_H

#include "kernel/types.h"

/*
 * The boot module named `name` (its multiboot2 command line: tools/mkiso.sh
 * names each user program after its file). Returns false if there is none.
 */
bool boot_module(const char *name, const void **data, size_t *size);

/* The modules' names, in the order the loader listed them. */
size_t boot_module_count(void);
const char *boot_module_name(size_t i);

#endif
