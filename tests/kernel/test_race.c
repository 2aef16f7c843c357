// SPDX-License-Identifier: MIT
/*
 * The fuzzer that races (user/race.c): tasks with threads on every CPU
 * make random system calls on resources that other threads close, revoke,
 * unmap and end under them, once with the IPC fast path off and once on.
 * The kernel must not panic or assert (the run would end there), every
 * answer must be one the ABI allows, every page a task reads must hold
 * what the fuzzer wrote, and once the tasks are gone every task, thread
 * and endpoint they used must be back (a child whose parent ended without
 * waiting for it goes as it ends).
 *
 * The suite runs only with heap_debug=on. Then a write after free in the
 * kernel panics where it happens, instead of corrupting memory unseen.
 * The test matrix boots it under each lazy= and unmap_batch= value.
 */
#include "tests/ktest.h"
#include "apic/tsc.h"
#include "boot/boot_modules.h"
#include "cpu/platform.h"
#include "mm/heap.h"
#include "proc/ipc.h"
#include "proc/task.h"
#include "sched/sched.h"
#include "sched/thread.h"
#include "cpu/percpu.h"

/*
 * Milliseconds of racing per path. The counts the program prints say how
 * much happened; on Bochs, some 50 times slower than TCG, a run gets
 * about as many calls in a quarter of the time.
 */
#define RACE_MS	      6000
#define RACE_MS_BOCHS 1500
#define RACE_SEED     0x7ace
#define SETTLE_NS     10000000000ULL /* for the last threads to be freed */

static uint64_t race_arg(bool fast)
{
	uint64_t ms =
		platform_get() == PLATFORM_BOCHS ? RACE_MS_BOCHS : RACE_MS;
	uint64_t seed = RACE_SEED + fast;

	return (uint64_t)MIN(cpu_count, 16u) << 4 | ms << 12 | seed << 32;
}

/* Threads alive, once those that ended have been reaped. */
static unsigned threads_alive(void)
{
	thread_reap();
	return thread_count();
}

static void race(struct ktest_context *t, bool fast)
{
	bool was_on = ipc_fast_enabled();
	unsigned endpoints = ipc_endpoints_in_use();
	unsigned threads = threads_alive(), tasks = task_count();
	uint64_t deadline;
	long status = 0;
	int id;

	if (!boot_module("race", &(const void *){NULL}, &(size_t){0})) {
		ktest_skip(t, "the user programs are not boot modules here");
		return;
	}
	/* Without the heap's checks a use after free goes unseen. The run
	 * also costs half a minute, too much for every test=all boot. */
	if (!heap_debug_enabled()) {
		ktest_skip(t, "runs with heap_debug=on only");
		return;
	}
	ipc_fast_set(fast);
	id = task_spawn("race", race_arg(fast), NULL, 0);
	if (KEXPECT(id > 0, "spawning race failed (%d)", id)) {
		int err = task_wait(id, &status);

		KEXPECT(err == 0 && status == 0,
			"the fuzzer found the kernel wrong, or could not run "
			"(wait %d, status %ld; see above)",
			err, status);
	}
	ipc_fast_set(was_on);

	/* Orphaned children end by themselves; threads are freed late. */
	deadline = tsc_read_ordered() + ns_to_tsc(SETTLE_NS);
	while ((threads_alive() != threads ||
		ipc_endpoints_in_use() != endpoints || task_count() != tasks) &&
	       tsc_read_ordered() < deadline)
		sleep_ns(10000000);
	KEXPECT(ipc_endpoints_in_use() == endpoints,
		"%u endpoints in use before, %u after: a reference was lost",
		endpoints, ipc_endpoints_in_use());
	KEXPECT(threads_alive() == threads,
		"%u threads before, %u after: some never ended", threads,
		threads_alive());
	KEXPECT(task_count() == tasks,
		"%u tasks before, %u after: an orphan or an unwaited child "
		"stayed",
		tasks, task_count());
}

KTEST(RACE0001, race, "tasks race on every CPU: the general IPC path")
{
	race(t, false);
}

KTEST(RACE0002, race, "tasks race on every CPU: the IPC fast path")
{
	race(t, true);
}
