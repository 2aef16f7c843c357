// SPDX-License-Identifier: MIT
/* The system-call wrappers: each puts its arguments where the ABI says. */
#include "user/lib/syscall.h"

void sys_exit(long status)
{
	syscall6(SYS_EXIT, status, 0, 0, 0, 0, 0);
	/* Not reached; if the kernel ever returned, stop here visibly. */
	__builtin_trap();
}

long sys_yield(void)
{
	return syscall6(SYS_YIELD, 0, 0, 0, 0, 0, 0);
}

long sys_thread_create(void (*entry)(long), void *stack_top, long arg)
{
	return syscall6(SYS_THREAD_CREATE, (long)entry, (long)stack_top, arg, 0,
			0, 0);
}

void sys_thread_exit(void)
{
	syscall6(SYS_THREAD_EXIT, 0, 0, 0, 0, 0, 0);
	__builtin_trap();
}

long sys_spawn(const char *name, size_t len, long arg, const long *handles,
	       size_t count)
{
	return syscall6(SYS_SPAWN, (long)name, (long)len, arg, (long)handles,
			(long)count, 0);
}

long sys_wait(long task)
{
	return syscall6(SYS_WAIT, task, 0, 0, 0, 0, 0);
}

long sys_map(void *addr, size_t len, unsigned prot)
{
	return syscall6(SYS_MAP, (long)addr, (long)len, prot, 0, 0, 0);
}

long sys_unmap(void *addr, size_t len)
{
	return syscall6(SYS_UNMAP, (long)addr, (long)len, 0, 0, 0, 0);
}

long sys_protect(void *addr, size_t len, unsigned prot)
{
	return syscall6(SYS_PROTECT, (long)addr, (long)len, prot, 0, 0, 0);
}

long sys_set_affinity(uint64_t cpu_mask)
{
	return syscall6(SYS_SET_AFFINITY, (long)cpu_mask, 0, 0, 0, 0, 0);
}

long sys_cpu_id(void)
{
	return syscall6(SYS_CPU_ID, 0, 0, 0, 0, 0, 0);
}

long sys_time_ns(void)
{
	return syscall6(SYS_TIME_NS, 0, 0, 0, 0, 0, 0);
}

long sys_write(const void *buf, size_t len)
{
	return syscall6(SYS_WRITE, (long)buf, (long)len, 0, 0, 0, 0);
}

long sys_sleep_ns(uint64_t ns)
{
	return syscall6(SYS_SLEEP_NS, (long)ns, 0, 0, 0, 0, 0);
}

long sys_shm_create(size_t len)
{
	return syscall6(SYS_SHM_CREATE, (long)len, 0, 0, 0, 0, 0);
}

long sys_shm_map(long shm, void *addr, unsigned prot)
{
	return syscall6(SYS_SHM_MAP, shm, (long)addr, prot, 0, 0, 0);
}

long sys_shm_revoke(long shm)
{
	return syscall6(SYS_SHM_REVOKE, shm, 0, 0, 0, 0, 0);
}

long sys_handle_dup(long h, unsigned rights)
{
	return syscall6(SYS_HANDLE_DUP, h, rights, 0, 0, 0, 0);
}

long sys_handle_close(long h)
{
	return syscall6(SYS_HANDLE_CLOSE, h, 0, 0, 0, 0, 0);
}

long sys_handle_info(long h)
{
	return syscall6(SYS_HANDLE_INFO, h, 0, 0, 0, 0, 0);
}

long sys_endpoint_create(void)
{
	return syscall6(SYS_ENDPOINT_CREATE, 0, 0, 0, 0, 0, 0);
}
