/* SPDX-License-Identifier: MIT */
/*
 * Copying to and from user memory. Every user pointer a system call gets is
 * checked to lie in the user half, and the copy itself survives a fault
 * (kernel/probe.asm): a bad pointer becomes -EFAULT, never a kernel crash.
 * With SMAP the kernel cannot touch user pages by accident: these calls
 * open that door (STAC) for the copy alone.
 */
#ifndef PROC_UACCESS_H
#define PROC_UACCESS_H

#include "lib/types.h"

int copy_from_user(void *dst, uint64_t user_src, size_t n);
int copy_to_user(uint64_t user_dst, const void *src, size_t n);

#endif
