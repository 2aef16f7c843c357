// SPDX-License-Identifier: MIT
#include "proc/uaccess.h"
#include "cpu/cpu.h"
#include "lib/errno.h"
#include "arch/x86.h"
#include "mm/mm.h"

int copy_user_bytes(void *dst, const void *src, size_t n);

static int copy_user(void *dst, const void *src, size_t n)
{
	int err;

	if (boot_cpu.smap)
		stac();
	err = copy_user_bytes(dst, src, n);
	if (boot_cpu.smap)
		clac();
	return err;
}

int copy_from_user(void *dst, uint64_t user_src, size_t n)
{
	if (!user_range_ok(user_src, n))
		return -EFAULT;
	return copy_user(dst, (const void *)user_src, n);
}
