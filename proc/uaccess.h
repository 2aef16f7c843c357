/* SPDX-License-Identifier: MIT */
/*
 * Copying from user memory (system calls only read it). Every user pointer
 * a system call gets is checked to lie in the user half, and the copy itself
 * survives a fault (arch/probe.asm): a bad pointer becomes -EFAULT, never
 * a kernel crash. With SMAP the kernel cannot touch user pages by accident:
 * copy_from_user opens that door (STAC) for the copy alone.
 */
#ifndef PROC_UACCESS_H
#define PROC_UACCESS_H

#include "lib/types.h"

int copy_from_user(void *dst, uint64_t user_src, size_t n);

#endif
