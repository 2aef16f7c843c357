// SPDX-License-Identifier: MIT
/*
 * A task killed at an awkward moment (started by tests/kernel/test_user.c).
 *
 * arg bits 0-3, the mode:
 *   0  killed while creating threads: this thread (on CPU 0) creates
 *      threads (which end at once) as fast as it can while a second one
 *      (on CPU 1) calls exit after bits 4-15 times 20 us: the kill lands
 *      in the middle of a thread's creation, sooner or later.
 *   1  killed while a thread is blocked in an IPC receive on the endpoint
 *      handle given at spawn, slot 0 (the kernel test's, which others wait
 *      on too): this
 *      thread calls exit after bits 4-15 milliseconds.
 * The exit status is KILLRACE_STATUS (the exit's), whatever else happened.
 */
#include "user/lib/ulib.h"

#define KILLRACE_STATUS 7
#define THREADS		64
#define STACK_SIZE	4096

static char stacks[THREADS + 1][STACK_SIZE] __aligned(16);
static int go;

static int busy[THREADS]; /* stacks[i] in use by a thread */

/* Frees its stack and ends, touching the stack no more after the store. */
static void quit_at_once(long i)
{
	__atomic_store_n(&busy[i], 0, __ATOMIC_RELEASE);
	syscall6(SYS_THREAD_EXIT, 0, 0, 0, 0, 0, 0);
	__builtin_unreachable();
}

/* Waits for go, then ends the task after arg microseconds. */
static void killer(long arg)
{
	long start;

	sys_set_affinity(1UL << 1);
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		;
	start = sys_time_ns();
	while (sys_time_ns() - start < arg * 1000)
		;
	sys_exit(KILLRACE_STATUS);
}

static void receiver(long ep)
{
	struct ipc_message in;

	sys_ipc_recv(ep, &in); /* killed in here */
	sys_thread_exit();
}

int main(long arg)
{
	long mode = arg & 0xf, delay = (arg >> 4) & 0xfff;

	if (mode == 1) {
		if (thread_start(receiver, stacks[THREADS], STACK_SIZE,
				 spawned_handle(0)) < 0)
			return 1;
		sys_sleep_ns((uint64_t)delay * 1000000);
		sys_exit(KILLRACE_STATUS);
	}
	sys_set_affinity(1UL << 0);
	if (thread_start(killer, stacks[THREADS], STACK_SIZE, delay * 20) < 0)
		return 1;
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	/* Until the kill ends us, at the return of some system call. */
	for (long i = 0;; i = (i + 1) % THREADS) {
		if (__atomic_load_n(&busy[i], __ATOMIC_ACQUIRE)) {
			sys_yield();
			continue;
		}
		busy[i] = 1;
		if (thread_start(quit_at_once, stacks[i], STACK_SIZE, i) < 0)
			busy[i] = 0;
	}
}
