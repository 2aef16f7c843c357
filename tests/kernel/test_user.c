// SPDX-License-Identifier: MIT
/*
 * User programs (user/), started from the boot modules: system calls, IPC,
 * threads on several CPUs, faults, a system-call fuzzer, and the memory a
 * task gives back when it ends.
 */
#include "tests/ktest.h"
#include "kernel/boot_modules.h"
#include "lib/errno.h"
#include "proc/ipc.h"
#include "kernel/platform.h"
#include "mm/pmm.h"
#include "sched/sched.h"
#include "proc/task.h"
#include "sched/thread.h"
#include "apic/tsc.h"
#include "smp/percpu.h"

/*
 * Round trips and calls per test. Across CPUs every round trip wakes a
 * halted emulated CPU twice, which costs TCG on this kind of 2-core host
 * from 50 us to 10 ms: 2000 of them stay within a test run's time; Bochs,
 * some 50 times slower than TCG, gets a tenth of everything.
 */
#define PINGPONG_ROUNDS	      100000
#define PINGPONG_ROUNDS_CROSS 2000
#define FUZZ_CALLS	      100000
#define BOCHS_DIVISOR	      10
#define FAULT_CASES	      8
#define ROLE_SERVER	      1
#define ROLE_CLIENT	      2
#define ROLE_SAME_CPU	      0
#define ROLE_TWO_CPUS	      3
#define FRAMES_KEPT_BY_CACHES 8
#define RUN_FAILED	      (-999999) /* no exit status: it did not run */

static uint64_t scaled(uint64_t n)
{
	return platform_get() == PLATFORM_BOCHS ? n / BOCHS_DIVISOR : n;
}

static bool have(struct ktest_context *t, const char *program)
{
	const void *data;
	size_t size;

	if (boot_module(program, &data, &size))
		return true;
	ktest_skip(t, "the user programs are not boot modules here");
	return false;
}

/* Runs program with arg to its end; its exit status, or RUN_FAILED. */
static long run(struct ktest_context *t, const char *program, uint64_t arg)
{
	long status = 0;
	int id = task_spawn(program, arg);

	if (!KEXPECT(id > 0, "spawning %s failed (%d)", program, id))
		return RUN_FAILED;
	if (!KEXPECT(task_wait(id, &status) == 0, "waiting for %s", program))
		return RUN_FAILED;
	return status;
}

KTEST(USER0001, user, "a user program runs, makes system calls and exits")
{
	if (!have(t, "hello"))
		return;
	KEXPECT(run(t, "hello", 0) == 0, "hello failed");
}

/*
 * Ping-pong between two tasks: a server and a client, on the endpoint the
 * test makes, each pinned to a CPU (arg layout: user/pingpong.c).
 */
static void two_task_pingpong(struct ktest_context *t, unsigned server_cpu,
			      unsigned client_cpu, uint64_t rounds)
{
	int ep = ipc_endpoint_create();
	uint64_t common = rounds << 4 | (uint64_t)ep << 32;
	long server_status = 0, client_status = 0;
	int server, client;

	if (!KEXPECT(ep > 0, "no endpoint (%d)", ep))
		return;
	server = task_spawn("pingpong", ROLE_SERVER | common |
						(uint64_t)(server_cpu + 1)
							<< 28);
	client = task_spawn("pingpong", ROLE_CLIENT | common |
						(uint64_t)(client_cpu + 1)
							<< 28);
	if (!KEXPECT(server > 0 && client > 0, "spawn: %d %d", server, client))
		return;
	KEXPECT(task_wait(client, &client_status) == 0 && client_status == 0,
		"client: a message was lost, repeated or reordered (status "
		"%ld)",
		client_status);
	KEXPECT(task_wait(server, &server_status) == 0 && server_status == 0,
		"server: a message was lost, repeated or reordered (status "
		"%ld)",
		server_status);
}

KTEST(USER0002, user, "IPC ping-pong, two tasks on one CPU: 100000 round trips")
{
	if (!have(t, "pingpong"))
		return;
	two_task_pingpong(t, 0, 0, scaled(PINGPONG_ROUNDS));
}

KTEST(USER0003, user, "IPC ping-pong, two tasks on two CPUs: 2000 round trips")
{
	if (cpu_count < 2) {
		ktest_skip(t, "needs 2 or more CPUs");
		return;
	}
	if (!have(t, "pingpong"))
		return;
	two_task_pingpong(t, 1, 0, scaled(PINGPONG_ROUNDS_CROSS));
}

KTEST(USER0009, user, "IPC between two threads of one task, one CPU and two")
{
	if (!have(t, "pingpong"))
		return;
	KEXPECT(run(t, "pingpong", ROLE_SAME_CPU | 1000 << 4) == 0,
		"same CPU: see above");
	if (cpu_count > 1)
		KEXPECT(run(t, "pingpong", ROLE_TWO_CPUS | 200 << 4) == 0,
			"two CPUs: see above");
}

KTEST(USER0004, user, "threads of one task run on several CPUs at once")
{
	if (cpu_count < 2) {
		ktest_skip(t, "needs 2 or more CPUs");
		return;
	}
	if (!have(t, "threads"))
		return;
	KEXPECT(run(t, "threads", MIN(cpu_count, 16u)) == 0,
		"threads did not all run at once (see above)");
}

KTEST(USER0005, user, "a faulting program is killed, alone")
{
	if (!have(t, "fault") || !have(t, "hello"))
		return;
	for (uint64_t c = 0; c < FAULT_CASES; c++)
		KEXPECT(run(t, "fault", c) == TASK_STATUS_FAULT,
			"fault case %llu was not killed by its fault",
			(unsigned long long)c);
	/* The kernel and other programs go on. */
	KEXPECT(run(t, "hello", 0) == 0, "hello failed after the faults");
}

KTEST(USER0006, user, "100000 random system calls: every one answered")
{
	uint64_t seed = 0x5eed;

	if (!have(t, "fuzz"))
		return;
	KEXPECT(run(t, "fuzz", scaled(FUZZ_CALLS) | seed << 32) == 0,
		"the fuzzer reported a problem");
}

KTEST(USER0007, user, "memory of ended tasks comes back")
{
	uint64_t before;
	uint64_t deadline;

	if (!have(t, "pingpong") || !have(t, "hello"))
		return;
	/* Warm-up: heap caches and page tables of the kernel stacks. */
	run(t, "pingpong", ROLE_SAME_CPU | 100 << 4);
	thread_reap();
	sleep_ns(20000000);
	thread_reap();
	before = pmm_free_count();
	run(t, "pingpong", ROLE_SAME_CPU | 100 << 4);
	run(t, "hello", 0);
	/* Threads are freed once their CPU switched away from them. */
	deadline = tsc_read_ordered() + ns_to_tsc(5000000000ULL);
	while (pmm_free_count() + FRAMES_KEPT_BY_CACHES < before &&
	       tsc_read_ordered() < deadline) {
		sleep_ns(1000000);
		thread_reap();
	}
	/*
	 * A task's pages and page tables all come back (some 25 frames for
	 * hello alone); the heap's slab pages and the kernel-stack area's
	 * tables may stay, a few frames at most.
	 */
	KEXPECT(pmm_free_count() + FRAMES_KEPT_BY_CACHES >= before,
		"%lld frames not returned",
		(long long)(before - pmm_free_count()));
}

KTEST(USER0008, user, "spawning what is not a program fails cleanly")
{
	KEXPECT(task_spawn("no-such-program", 0) == -ENOENT,
		"a missing module must give -ENOENT");
	KEXPECT(task_wait(999999, NULL) == -ESRCH, "unknown task id");
}
