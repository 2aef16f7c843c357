// SPDX-License-Identifier: MIT
/*
 * User programs (user/), started from the boot modules: system calls, IPC,
 * threads on several CPUs, faults, a system-call fuzzer, and the memory a
 * task gives back when it ends.
 */
#include "tests/ktest.h"
#include "boot/boot_modules.h"
#include "console/console.h"
#include "lib/errno.h"
#include "proc/handle.h"
#include "proc/ipc.h"
#include "cpu/platform.h"
#include "lib/string.h"
#include "mm/kstack.h"
#include "mm/pmm.h"
#include "sched/sched.h"
#include "proc/task.h"
#include "sched/thread.h"
#include "apic/tsc.h"
#include "arch/x86.h"
#include "cpu/percpu.h"

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
#define ENTRY_AC_CASE	      3 /* user/entry.c */
#define ENTRY_SGDT_CASE	      4
#define ROLE_SERVER	      1
#define ROLE_CLIENT	      2
#define ROLE_SAME_CPU	      0
#define ROLE_TWO_CPUS	      3
#define ROLE_SAME_CPU_MIXED   4 /* handles passed now and then */
#define FRAMES_KEPT_BY_CACHES 8
#define RUN_FAILED	      (-999999)	   /* no exit status: it did not run */
#define ARG_ENDPOINT_GIVEN    (1ULL << 32) /* user/pingpong.c */

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

/*
 * Waits for task id (what names it): its exit status, or RUN_FAILED when
 * the wait gave none (said here). The status is checked after the wait
 * returns: a KEXPECT that waited in its condition could print the status
 * from before, the order of a call's arguments being unspecified.
 */
static long wait_for(struct ktest_context *t, int id, const char *what)
{
	long status = 0;
	int err = task_wait(id, &status);

	if (!KEXPECT(err == 0, "waiting for %s (task %d) gave %d", what, id,
		     err))
		return RUN_FAILED;
	return status;
}

/* Runs program with arg to its end; its exit status, or RUN_FAILED. */
static long run(struct ktest_context *t, const char *program, uint64_t arg)
{
	int id = task_spawn(program, arg, NULL, 0);

	if (!KEXPECT(id > 0, "spawning %s failed (%d)", program, id))
		return RUN_FAILED;
	return wait_for(t, id, program);
}

KTEST(USER0001, user, "a user program runs, makes system calls and exits")
{
	if (!have(t, "hello"))
		return;
	KEXPECT(run(t, "hello", 0) == 0, "hello failed");
}

/* user/hello.c's many lines: its mode, and the text of each line. */
#define HELLO_LINES	 1
#define HELLO_LINE_COUNT 64
#define HELLO_LINE_TEXT	 "one of many lines"

static uint32_t hello_taps, hello_most_lines;

/* Under the console lock: counts the newlines of each write of hello's. */
static void count_lines_tap(const char *s, size_t n)
{
	size_t text = sizeof(HELLO_LINE_TEXT) - 1;
	uint32_t newlines = 0;
	bool hellos = false;

	for (size_t i = 0; i < n; i++) {
		newlines += s[i] == '\n';
		hellos |=
			i + text <= n && !memcmp(s + i, HELLO_LINE_TEXT, text);
	}
	if (!hellos)
		return;
	hello_taps++;
	hello_most_lines = MAX(hello_most_lines, newlines);
}

/*
 * The console holds interrupts off while it writes, and each newline may
 * scroll the screen: a user's write must reach it a line at a time
 * (docs/security.md, "Interrupts-off work"), whatever one SYS_WRITE holds.
 */
KTEST(USER0024, user, "a user's write takes the console one line at a time")
{
	long status;

	if (!have(t, "hello"))
		return;
	hello_taps = hello_most_lines = 0;
	console_set_tap(count_lines_tap);
	status = run(t, "hello", HELLO_LINES);
	console_set_tap(NULL);
	KEXPECT(status == 0, "hello's write of %u lines failed",
		HELLO_LINE_COUNT);
	/* A line the copy split in two is seen in the part with the text. */
	KEXPECT(hello_taps >= HELLO_LINE_COUNT / 2,
		"the console saw %u writes of hello's %u lines", hello_taps,
		HELLO_LINE_COUNT);
	KEXPECT(hello_most_lines <= 1,
		"one hold of the console wrote %u of its lines",
		hello_most_lines);
}

/*
 * Ping-pong between two tasks: a server and a client, on the endpoint the
 * test makes, each pinned to a CPU (arg layout: user/pingpong.c).
 */
static void two_task_pingpong(struct ktest_context *t, unsigned server_cpu,
			      unsigned client_cpu, uint64_t rounds)
{
	struct endpoint *ep = ipc_endpoint_create();
	uint64_t common = rounds << 4 | ARG_ENDPOINT_GIVEN;
	long server_status, client_status;
	struct handle_grant grant;
	int server, client;

	if (!KEXPECT(ep, "no endpoint left"))
		return;
	grant = (struct handle_grant){ipc_endpoint_object(ep),
				      SYS_RIGHT_SEND | SYS_RIGHT_RECEIVE};
	server = task_spawn("pingpong",
			    ROLE_SERVER | common |
				    (uint64_t)(server_cpu + 1) << 28,
			    &grant, 1);
	client = task_spawn("pingpong",
			    ROLE_CLIENT | common |
				    (uint64_t)(client_cpu + 1) << 28,
			    &grant, 1);
	ipc_endpoint_put(ep); /* the tasks' handles keep it */
	if (!KEXPECT(server > 0 && client > 0, "spawn: %d %d", server, client))
		return;
	client_status = wait_for(t, client, "the client");
	KEXPECT(client_status == 0,
		"client: a message was lost, repeated or reordered (status "
		"%ld)",
		client_status);
	server_status = wait_for(t, server, "the server");
	KEXPECT(server_status == 0,
		"server: a message was lost, repeated or reordered (status "
		"%ld)",
		server_status);
}

/*
 * The IPC fast path (proc/ipc_fast.c) and the general one each carry every
 * ping-pong: a run with ipc_fastpath off, then one with it on, whatever
 * the command line said (restored after). Off, no half may go fast; on,
 * on one CPU, nearly every half must (the first call may find nobody
 * waiting yet, and a tick may land between the two); across CPUs none
 * can, and each half must say so (other_cpu).
 */
enum pingpong_kind { TWO_TASKS, TWO_THREADS, TWO_THREADS_MIXED };

static void pingpong_once(struct ktest_context *t, enum pingpong_kind kind,
			  bool same_cpu, uint64_t rounds)
{
	if (kind == TWO_TASKS)
		two_task_pingpong(t, same_cpu ? 0 : 1, 0, rounds);
	else if (kind == TWO_THREADS_MIXED)
		KEXPECT(run(t, "pingpong", ROLE_SAME_CPU_MIXED | rounds << 4) ==
				0,
			"threads passing handles: see above");
	else
		KEXPECT(run(t, "pingpong",
			    (same_cpu ? ROLE_SAME_CPU : ROLE_TWO_CPUS) |
				    rounds << 4) == 0,
			"threads on %s: see above",
			same_cpu ? "one CPU" : "two CPUs");
}

static void pingpong_both_paths(struct ktest_context *t,
				enum pingpong_kind kind, bool same_cpu,
				uint64_t rounds)
{
	bool was_on = ipc_fast_enabled();
	struct ipc_path_stats before, after;
	uint64_t halves = 2 * rounds, fast, direct;

	for (int on = 0; on <= 1; on++) {
		unsigned endpoints = ipc_endpoints_in_use();

		ipc_fast_set(on);
		ipc_path_stats_read(&before);
		pingpong_once(t, kind, same_cpu, rounds);
		ipc_path_stats_read(&after);
		/* Every reference the run took was dropped: the tasks
		 * ended, and their endpoints went with the last one. */
		KEXPECT(ipc_endpoints_in_use() == endpoints,
			"fast path %s: %u endpoints in use before the run, %u "
			"after: a reference was lost",
			on ? "on" : "off", endpoints, ipc_endpoints_in_use());
		fast = after.fast - before.fast;
		direct = after.direct - before.direct;
		if (!on)
			KEXPECT(fast == 0,
				"ipc_fastpath=off: %llu halves went fast",
				(unsigned long long)fast);
		else if (kind == TWO_THREADS_MIXED)
			/* A quarter of the calls and of the replies carry a
			 * handle: those go the general way, the rest fast. */
			KEXPECT(fast * 4 >= halves * 2 &&
					after.declined[IPC_DECLINE_HANDLE] -
							before.declined
								[IPC_DECLINE_HANDLE] >=
						rounds / 2,
				"passing handles: %llu of %llu halves went "
				"fast, and too few calls with a handle went "
				"the general way",
				(unsigned long long)fast,
				(unsigned long long)halves);
		else if (same_cpu)
			KEXPECT(fast * 10 >= halves * 9,
				"one CPU: only %llu of %llu halves went fast",
				(unsigned long long)fast,
				(unsigned long long)halves);
		else
			KEXPECT(fast == 0 &&
					after.declined[IPC_DECLINE_OTHER_CPU] >
						before.declined
							[IPC_DECLINE_OTHER_CPU],
				"two CPUs: %llu halves went fast, and no "
				"other_cpu decline was counted",
				(unsigned long long)fast);
		if (on && kind == TWO_THREADS_MIXED)
			/* A general call with a handle meets a server that
			 * blocked in the fast path without its stack. */
			KEXPECT(after.resumed > before.resumed,
				"passing handles: no thread that blocked in "
				"the fast path was resumed the general way");
		if (on && same_cpu)
			/* The first fast half meets a partner that waited
			 * the general way (with its stack); from then on
			 * nearly every partner waited in the fast path and
			 * goes straight back to user mode. */
			KEXPECT(fast > direct && (kind == TWO_THREADS_MIXED ||
						  direct * 10 >= fast * 9),
				"one CPU: %llu of %llu fast halves sent the "
				"partner straight back to user mode",
				(unsigned long long)direct,
				(unsigned long long)fast);
	}
	ipc_fast_set(was_on);
}

KTEST(USER0002, user,
      "IPC ping-pong, two tasks on one CPU: 100000 round trips on each path")
{
	if (!have(t, "pingpong"))
		return;
	pingpong_both_paths(t, TWO_TASKS, true, scaled(PINGPONG_ROUNDS));
}

KTEST(USER0003, user,
      "IPC ping-pong, two tasks on two CPUs: 2000 round trips on each path")
{
	if (cpu_count < 2) {
		ktest_skip(t, "needs 2 or more CPUs");
		return;
	}
	if (!have(t, "pingpong"))
		return;
	pingpong_both_paths(t, TWO_TASKS, false, scaled(PINGPONG_ROUNDS_CROSS));
}

KTEST(USER0009, user,
      "IPC between two threads of one task, one CPU and two, on each path")
{
	if (!have(t, "pingpong"))
		return;
	pingpong_both_paths(t, TWO_THREADS, true, 1000);
	if (cpu_count > 1)
		pingpong_both_paths(t, TWO_THREADS, false, 200);
}

/*
 * A handle in a message is the general path's, and that path must meet
 * threads waiting on the fast one: a call carrying a handle to a server
 * that waits in the fast reply-and-receive, and a reply carrying one to a
 * client that waits in the fast call. Each side checks the handle it got.
 */
KTEST(USER0016, user,
      "IPC passing handles between threads: the general path meets the fast")
{
	if (!have(t, "pingpong"))
		return;
	pingpong_both_paths(t, TWO_THREADS_MIXED, true, 1000);
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

/*
 * The entry and exit paths against a program that tries the ways in and
 * out it should not have (user/entry.c): compatibility-mode SYSCALL,
 * SYSENTER, a SYSCALL whose return address is non-canonical, RFLAGS.AC
 * across the kernel, SGDT. Each ends its task or comes back cleanly;
 * the kernel goes on.
 */
KTEST(USER0017, user,
      "forbidden ways into and out of the kernel end the task, not the kernel")
{
	static const char *const what[] = {
		"SYSCALL from compatibility mode",
		"SYSENTER",
		"SYSCALL from the last user page",
	};

	if (!have(t, "entry") || !have(t, "hello"))
		return;
	for (uint64_t c = 0; c < ARRAY_SIZE(what); c++)
		KEXPECT(run(t, "entry", c) == TASK_STATUS_FAULT,
			"entry case %llu (%s) did not end its task",
			(unsigned long long)c, what[c]);
	KEXPECT(run(t, "entry", ENTRY_AC_CASE) == 0,
		"RFLAGS.AC did not come back set (see above)");
	if (read_cr4() & CR4_UMIP)
		KEXPECT(run(t, "entry", ENTRY_SGDT_CASE) == TASK_STATUS_FAULT,
			"SGDT ran in ring 3 with CR4.UMIP on");
	else
		KEXPECT(run(t, "entry", ENTRY_SGDT_CASE) == 0,
			"SGDT without UMIP did not run");
	KEXPECT(run(t, "hello", 0) == 0, "hello failed after the entry cases");
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
	KEXPECT(task_spawn("no-such-program", 0, NULL, 0) == -ENOENT,
		"a missing module must give -ENOENT");
	KEXPECT(task_wait(999999, NULL) == -ESRCH, "unknown task id");
}

/*
 * A receiver of a killed task, woken (as task_exit wakes it) while blocked
 * on an endpoint between two others: it leaves with -ESRCH, and the
 * endpoint's queue of receivers stays whole. Kernel threads stand in for
 * the task's threads; the killed one's task is a stand-in too, as only its
 * `killed` is looked at on this path.
 */
#define KILLED_RECEIVERS 3
#define KILLED_ONE	 1

static struct endpoint *killed_ep;
static long killed_result[KILLED_RECEIVERS];
static uint32_t killed_received, killed_sent;
static struct task killed_task;

static void killed_receiver(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	struct ipc_message msg = {0};
	int err = ipc_receive(killed_ep, &msg, NULL);

	killed_result[i] = err ? err : (long)msg.label;
	__atomic_fetch_add(&killed_received, 1, __ATOMIC_RELEASE);
}

static void killed_sender(void *arg)
{
	(void)arg;
	for (uint64_t label = 1; label < KILLED_RECEIVERS; label++) {
		struct ipc_message msg = {.label = label};

		if (ipc_send(killed_ep, &msg, NULL) == 0)
			__atomic_fetch_add(&killed_sent, 1, __ATOMIC_RELEASE);
	}
}

static bool until(const uint32_t *counter, uint32_t want, uint64_t ns)
{
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(ns);

	while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < want &&
	       tsc_read_ordered() < deadline)
		sleep_ns(1000000);
	return __atomic_load_n(counter, __ATOMIC_ACQUIRE) >= want;
}

KTEST(USER0010, user, "a killed thread leaves an IPC queue others still use")
{
	struct thread *th[KILLED_RECEIVERS], *sender;
	uint64_t deadline;
	uint32_t got_one = 0;

	killed_ep = ipc_endpoint_create();
	if (!KEXPECT(killed_ep, "no endpoint left"))
		return;
	memset(&killed_task, 0, sizeof(killed_task));
	killed_received = killed_sent = 0;
	for (unsigned i = 0; i < KILLED_RECEIVERS; i++) {
		killed_result[i] = 0;
		th[i] = thread_create(killed_receiver, (void *)(uintptr_t)i,
				      "receiver", NULL);
		if (!KEXPECT(th[i], "thread_create failed"))
			return;
		if (i == KILLED_ONE)
			th[i]->task = &killed_task;
		sched_start_thread(th[i]);
		/* Queued in this order. */
		deadline = tsc_read_ordered() + ns_to_tsc(20000000000ULL);
		while (__atomic_load_n(&th[i]->state, __ATOMIC_ACQUIRE) !=
			       THREAD_BLOCKED &&
		       tsc_read_ordered() < deadline)
			sleep_ns(1000000);
		if (!KEXPECT(th[i]->state == THREAD_BLOCKED,
			     "receiver %u never blocked", i))
			return;
	}
	/* What task_exit does to a thread of the task it ends. */
	__atomic_store_n(&killed_task.killed, true, __ATOMIC_RELEASE);
	sched_wake(th[KILLED_ONE]);
	KEXPECT(until(&killed_received, 1, 20000000000ULL),
		"the killed receiver did not leave");
	KEXPECT(killed_result[KILLED_ONE] == -ESRCH,
		"the killed receiver got %ld, not -ESRCH",
		killed_result[KILLED_ONE]);
	sender = thread_create(killed_sender, NULL, "sender", NULL);
	if (!KEXPECT(sender, "thread_create failed"))
		return;
	sched_start_thread(sender);
	KEXPECT(until(&killed_received, KILLED_RECEIVERS, 20000000000ULL) &&
			until(&killed_sent, KILLED_RECEIVERS - 1,
			      20000000000ULL),
		"%u of %d received, %u sent: the endpoint lost a receiver",
		killed_received, KILLED_RECEIVERS, killed_sent);
	for (unsigned i = 0; i < KILLED_RECEIVERS; i++)
		if (i != KILLED_ONE && killed_result[i] > 0)
			got_one++;
	KEXPECT(got_one == KILLED_RECEIVERS - 1,
		"%u of the other receivers got a message", got_one);
	ipc_endpoint_put(killed_ep);
}

/* user/killrace.c: its exit status, whatever the mode. */
#define KILLRACE_STATUS 7
#define KILLRACE_RUNS	60

/*
 * A task killed while one of its threads creates threads, many times, the
 * kill (from a thread on another CPU) landing at a different point each
 * time: now and then (about once in 60 to 300 runs under TCG with 4 CPUs)
 * some thread is listed in its task but not started yet when the kill
 * wakes the task's threads. Each run must end with the kill's status,
 * and the kernel must go on (a thread queued twice would run twice). A
 * stress test of the whole path from user mode: SCHED0008 is the one that
 * hits the window every time. Its runs are few because each is a task
 * spawn (a quarter of a second on TCG with 16 CPUs).
 */
KTEST(USER0011, user, "a task killed while it creates threads ends cleanly")
{
	unsigned runs = (unsigned)scaled(KILLRACE_RUNS);

	if (cpu_count < 2) {
		ktest_skip(t, "needs 2 or more CPUs");
		return;
	}
	if (!have(t, "killrace") || !have(t, "hello"))
		return;
	for (uint64_t i = 0; i < runs; i++) {
		long status = run(t, "killrace", 0 | (i * 7 % 64) << 4);

		if (!KEXPECT(status == KILLRACE_STATUS,
			     "run %llu ended with %ld", (unsigned long long)i,
			     status))
			break;
	}
	KEXPECT(run(t, "hello", 0) == 0, "hello failed after the kills");
}

/*
 * A task killed while one of its threads waits in an IPC receive, behind
 * and ahead of kernel threads that wait on the same endpoint: they still
 * get the messages sent to it afterwards.
 */
KTEST(USER0012, user, "a task killed in an IPC receive leaves the queue whole")
{
	struct thread *th[2], *sender;
	struct handle_grant grant;
	long status = 0;
	int id;

	if (!have(t, "killrace"))
		return;
	killed_ep = ipc_endpoint_create();
	if (!KEXPECT(killed_ep, "no endpoint left"))
		return;
	grant = (struct handle_grant){ipc_endpoint_object(killed_ep),
				      SYS_RIGHT_RECEIVE};
	killed_received = killed_sent = 0;
	killed_result[0] = killed_result[2] = 0;
	killed_result[1] = 1; /* not used: the task is receiver 1 */
	th[0] = thread_create(killed_receiver, (void *)0, "receiver", NULL);
	if (!KEXPECT(th[0], "thread_create failed"))
		return;
	sched_start_thread(th[0]);
	while (__atomic_load_n(&th[0]->state, __ATOMIC_ACQUIRE) !=
	       THREAD_BLOCKED)
		sleep_ns(1000000);
	/* The task's receiver blocks next; it exits 200 ms after it starts. */
	id = task_spawn("killrace", 1 | 200 << 4, &grant, 1);
	if (!KEXPECT(id > 0, "spawning killrace failed (%d)", id))
		return;
	sleep_ns(50000000);
	th[1] = thread_create(killed_receiver, (void *)2, "receiver", NULL);
	if (!KEXPECT(th[1], "thread_create failed"))
		return;
	sched_start_thread(th[1]);
	status = wait_for(t, id, "killrace");
	KEXPECT(status == KILLRACE_STATUS, "killrace ended with %ld", status);
	sender = thread_create(killed_sender, NULL, "sender", NULL);
	if (!KEXPECT(sender, "thread_create failed"))
		return;
	sched_start_thread(sender);
	KEXPECT(until(&killed_received, 2, 20000000000ULL) &&
			until(&killed_sent, 2, 20000000000ULL),
		"%u of 2 received, %u sent: the endpoint lost a receiver",
		killed_received, killed_sent);
	KEXPECT(killed_result[0] > 0 && killed_result[2] > 0,
		"the kernel receivers got %ld and %ld", killed_result[0],
		killed_result[2]);
	ipc_endpoint_put(killed_ep);
}

/* user/isolate.c: its modes, mode 8's status, and how many handle values
 * mode 0 tries. */
#define ISOLATE_ALONE	      0
#define ISOLATE_PARENT	      1
#define ISOLATE_REVOKER	      3
#define ISOLATE_OWNER	      5
#define ISOLATE_FAMILY	      7
#define ISOLATE_WAITED	      8
#define ISOLATE_ABANDONER     10
#define ISOLATE_WAITED_STATUS 42
#define ISOLATE_TRIES	      4096

KTEST(USER0013, user, "a task with no handles reaches no object")
{
	if (!have(t, "isolate") || !have(t, "hello"))
		return;
	KEXPECT(run(t, "isolate", ISOLATE_ALONE | scaled(ISOLATE_TRIES) << 4) ==
			0,
		"isolate reached something (see above)");
}

KTEST(USER0014, user, "handles passed at spawn and over IPC keep their rights")
{
	if (!have(t, "isolate") || !have(t, "hello"))
		return;
	KEXPECT(run(t, "isolate", ISOLATE_PARENT) == 0,
		"a passed handle did too much or too little (see above)");
}

KTEST(USER0015, user, "a revoke takes shared memory back from every task")
{
	if (!have(t, "isolate") || !have(t, "hello"))
		return;
	KEXPECT(run(t, "isolate", ISOLATE_REVOKER) == 0,
		"the revoked memory stayed reachable, or more went (see "
		"above)");
}

KTEST(USER0019, user, "shared memory gives no more than the handle's rights")
{
	if (!have(t, "isolate") || !have(t, "hello"))
		return;
	KEXPECT(run(t, "isolate", ISOLATE_OWNER) == 0,
		"a handle mapped or raised a page beyond its rights, or a "
		"huge object was made (see above)");
}

KTEST(USER0020, user, "only the parent waits for a task, once")
{
	if (!have(t, "isolate") || !have(t, "hello"))
		return;
	KEXPECT(run(t, "isolate", ISOLATE_FAMILY) == 0,
		"a sibling took a child's status, or the parent lost it "
		"(see above)");
}

/*
 * The kernel spawns until the registry is full, without waiting, while
 * the children end. Each must keep its status until the kernel waits: a
 * full registry refuses a spawn (-EBUSY) rather than drop an ended child
 * its parent may still wait for.
 */
KTEST(USER0025, user, "ended children keep their status through a full table")
{
	static int ids[TASK_MAX + 1]; /* one more than can fit */
	unsigned spawned = 0, tasks = task_count();
	int refused = 0;

	if (!have(t, "isolate"))
		return;
	while (spawned < ARRAY_SIZE(ids) && !refused) {
		int id = task_spawn("isolate", ISOLATE_WAITED, NULL, 0);

		if (id > 0)
			ids[spawned++] = id;
		else
			refused = id;
		/* Let the first ones end before the table fills. */
		if (spawned == 1)
			sleep_ns(50000000);
	}
	KEXPECT(refused == -EBUSY,
		"%u spawns into a table of %u holding %u: the last gave %d, "
		"not -EBUSY",
		spawned, TASK_MAX, tasks, refused);
	for (unsigned i = 0; i < spawned; i++) {
		long status = wait_for(t, ids[i], "a child");

		KEXPECT(status == ISOLATE_WAITED_STATUS,
			"child %u of %u (task %d) ended with %ld", i + 1,
			spawned, ids[i], status);
	}
	KEXPECT(task_count() == tasks, "%u tasks before, %u after", tasks,
		task_count());
}

/*
 * A task ends without waiting for its children: nobody can take their
 * statuses, so those that ended go with it and the rest as they end.
 * Nothing else would ever free them.
 */
KTEST(USER0026, user, "a task's children that nobody can wait for are freed")
{
	unsigned tasks = task_count();
	uint64_t deadline;

	if (!have(t, "isolate"))
		return;
	KEXPECT(run(t, "isolate", ISOLATE_ABANDONER) == 0,
		"the abandoner could not spawn its children (see above)");
	deadline = tsc_read_ordered() + ns_to_tsc(5000000000ULL);
	while (task_count() != tasks && tsc_read_ordered() < deadline)
		sleep_ns(10000000);
	KEXPECT(task_count() == tasks,
		"%u tasks before, %u once the orphans ended: they stayed",
		tasks, task_count());
}

/*
 * A slot closed at its last generation is never filled again, so a stale
 * handle from the slot's first use can never name a new object there.
 * The slot is brought to that generation by hand: 2^24 closes would take
 * minutes under TCG.
 */
KTEST(USER0021, user, "a handle slot retires rather than wrap its generation")
{
	static struct handle_table table;
	struct kobject *obj = shm_object_create(PAGE_SIZE);
	long stale = (long)HANDLE_GEN_FIRST << SYS_HANDLE_SLOT_BITS, h;

	if (!KEXPECT(obj, "no memory for an object"))
		return;
	handle_table_init(&table);
	table.slots[0].gen = HANDLE_GEN_MAX;
	h = handle_install(&table, obj, SYS_RIGHT_MAP_READ, -1);
	KEXPECT(h == (long)HANDLE_GEN_MAX << SYS_HANDLE_SLOT_BITS,
		"slot 0 at its last generation gave %ld", h);
	KEXPECT(handle_close(&table, (uint64_t)h) == 0, "closing %ld", h);
	h = handle_install(&table, obj, SYS_RIGHT_MAP_READ, -1);
	KEXPECT((h & (HANDLE_SLOTS - 1)) == 1,
		"the next handle, %ld, is not in slot 1", h);
	KEXPECT(handle_install(&table, obj, SYS_RIGHT_MAP_READ, 0) == -EMFILE,
		"the retired slot 0 was filled again");
	KEXPECT(handle_info(&table, (uint64_t)stale) == -EBADF,
		"the stale handle %ld names an object", stale);
	handle_table_close_all(&table);
	kobject_put(obj);
}

/* user/exhaust.c: its modes. */
#define EXHAUST_LIMITS 0
#define EXHAUST_MEMORY 3
#define EXHAUST_AFTER  4
/* Filling more RAM than this from user mode takes too long under TCG. */
#define EXHAUST_RAM_MAX GiB(1)

/*
 * A hostile task takes endpoints, shared objects, mappings of one object,
 * threads, children and a receiver's handle slots until each is refused;
 * each refusal must be its task's limit with the documented error
 * (docs/security.md, "Limits"), and the kernel goes on.
 */
KTEST(USER0022, user, "a task's share of each table is refused past its limit")
{
	if (!have(t, "exhaust"))
		return;
	KEXPECT(run(t, "exhaust", EXHAUST_LIMITS) == 0,
		"a limit was refused at the wrong count or with the wrong "
		"error, or not refused at all (see above)");
}

/* Frees the stacks of ended threads until free frames are back to frames
 * (less what caches keep), or 5 s pass. */
static void wait_for_frames(uint64_t frames)
{
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(5000000000ULL);

	do {
		sleep_ns(1000000);
		thread_reap();
	} while (pmm_free_count() + FRAMES_KEPT_BY_CACHES < frames &&
		 tsc_read_ordered() < deadline);
}

/*
 * A hostile task maps, and makes shared objects, until refused: each by
 * its share of memory (mm/mm.c, "Memory accounts"), not by the memory
 * running out. It then hands on to another task like it, and so on, until
 * no user memory is left. The kernel's own allocations still succeed from
 * the reserve (mm/pmm.c); once the tasks ended, every frame and kernel
 * stack comes back, and another task spawns, makes a thread and maps a
 * page.
 */
KTEST(USER0023, user, "one task gets its share of memory, all get it back")
{
	uint64_t frames, stacks;

	if (!have(t, "exhaust"))
		return;
	if (pmm_total_count() * PAGE_SIZE > EXHAUST_RAM_MAX) {
		ktest_skip(t, "more RAM than a test fills in time");
		return;
	}
	/* Warm-up: heap caches and the kernel-stack area's tables. */
	run(t, "exhaust", EXHAUST_AFTER);
	wait_for_frames(pmm_free_count());
	frames = pmm_free_count();
	stacks = kstack_in_use();
	KEXPECT(run(t, "exhaust", EXHAUST_MEMORY) == 0,
		"a map or an object past a task's share or the memory, or a "
		"kernel allocation meanwhile, gave the wrong answer (see "
		"above)");
	/* Its memory comes back once its last thread is reaped. */
	wait_for_frames(frames);
	KEXPECT(pmm_free_count() + FRAMES_KEPT_BY_CACHES >= frames,
		"%lld frames not returned",
		(long long)(frames - pmm_free_count()));
	KEXPECT(kstack_in_use() <= stacks, "%lld kernel stacks not returned",
		(long long)(kstack_in_use() - stacks));
	KEXPECT(run(t, "exhaust", EXHAUST_AFTER) == 0,
		"after a task filled memory, another could not run, make a "
		"thread or map a page (see above)");
}

/* user/replyrace.c: its modes and labels. */
#define REPLYRACE_CALLER  0
#define REPLYRACE_SERVER  1
#define REPLYRACE_TAKEN	  2
#define REPLYRACE_RESULT  4
#define REPLYRACE_HUNG	  5
#define REPLYRACE_KILLED  9
#define REPLYRACE_STOP	  77 /* the test's own, to the bystanders */
#define REPLYRACE_RUNS	  16 /* on each path */
#define REPLYRACE_THREADS 4  /* bystanders made after each kill */
#define REPLYRACE_WAIT_NS 10000000000ULL

static struct endpoint *bystander_ep;
static uint32_t bystanders_wrong, bystanders_done;

/*
 * A thread made after the caller's threads were freed (it may get one of
 * their structs), waiting on an endpoint nobody else uses: it must get
 * the test's STOP and nothing else.
 */
static void replyrace_bystander(void *arg)
{
	struct ipc_message msg = {0};

	(void)arg;
	while (ipc_receive(bystander_ep, &msg, NULL) ||
	       msg.label != REPLYRACE_STOP)
		__atomic_fetch_add(&bystanders_wrong, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&bystanders_done, 1, __ATOMIC_RELEASE);
}

/* Reaps until at most `want` threads exist; false if time ran out. */
static bool reap_down_to(unsigned want)
{
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(REPLYRACE_WAIT_NS);

	while (thread_count() > want && tsc_read_ordered() < deadline) {
		thread_reap();
		sleep_ns(1000000);
	}
	return thread_count() <= want;
}

static void replyrace_once(struct ktest_context *t, unsigned run,
			   struct endpoint *const eps[4])
{
	struct endpoint *ep = eps[0], *kill = eps[1], *note = eps[2];
	struct handle_grant server_grants[2] = {
		{ipc_endpoint_object(ep), SYS_RIGHT_RECEIVE},
		{ipc_endpoint_object(note), SYS_RIGHT_SEND}};
	struct handle_grant caller_grants[2] = {
		{ipc_endpoint_object(ep), SYS_RIGHT_SEND},
		{ipc_endpoint_object(kill), SYS_RIGHT_RECEIVE}};
	struct ipc_message msg = {0}, word = {.label = 1};
	unsigned before = thread_count();
	long status = 0;
	int server, caller, err;

	bystander_ep = eps[3];
	bystanders_wrong = bystanders_done = 0;
	server = task_spawn("replyrace", REPLYRACE_SERVER, server_grants, 2);
	if (!KEXPECT(server > 0, "spawning the server failed (%d)", server))
		return;
	sleep_ns(2000000); /* it waits first: the call may go fast */
	caller = task_spawn("replyrace", REPLYRACE_CALLER, caller_grants, 2);
	if (!KEXPECT(caller > 0, "spawning the caller failed (%d)", caller))
		return;
	err = ipc_receive(note, &msg, NULL);
	if (!KEXPECT(!err && msg.label == REPLYRACE_TAKEN,
		     "run %u: the server said %d, label %llu", run, err,
		     (unsigned long long)msg.label))
		return;
	/* The server holds the call: its caller's task ends, and the
	 * caller's structs are freed before new threads are made. */
	ipc_send(kill, &word, NULL);
	status = wait_for(t, caller, "the caller");
	KEXPECT(status == REPLYRACE_KILLED, "run %u: the caller ended with %ld",
		run, status);
	KEXPECT(reap_down_to(before + 1),
		"run %u: the caller's threads were "
		"never freed",
		run);
	for (unsigned i = 0; i < REPLYRACE_THREADS; i++) {
		struct thread *b = thread_create(replyrace_bystander, NULL,
						 "bystander", NULL);

		if (!KEXPECT(b, "thread_create failed"))
			return;
		sched_start_thread(b);
		while (__atomic_load_n(&b->state, __ATOMIC_ACQUIRE) !=
		       THREAD_BLOCKED)
			sleep_ns(100000);
	}
	/* Go: the server replies to the dead caller, then reports. */
	err = ipc_reply_receive(note, &word, NULL, &msg, NULL);
	err = KEXPECT(!err && msg.label == REPLYRACE_RESULT &&
			      (long)msg.words[0] == -SYS_ESRCH,
		      "run %u: the reply to a killed caller returned %ld "
		      "(label %llu: %d is the server's watchdog), not -ESRCH",
		      run, (long)msg.words[0], (unsigned long long)msg.label,
		      REPLYRACE_HUNG)
		      ? 0
		      : -EINVAL;
	status = wait_for(t, server, "the server");
	KEXPECT(status == 0, "run %u: the server ended with %ld", run, status);
	/* The reply went somewhere: the bystanders may not all be there to
	 * stop, and the test stops here, failed. */
	if (err)
		return;
	for (unsigned i = 0; i < REPLYRACE_THREADS; i++) {
		struct ipc_message stop = {.label = REPLYRACE_STOP};

		ipc_send(bystander_ep, &stop, NULL);
	}
	KEXPECT(until(&bystanders_done, REPLYRACE_THREADS, REPLYRACE_WAIT_NS),
		"run %u: %u of %d bystanders ended", run, bystanders_done,
		REPLYRACE_THREADS);
	KEXPECT(bystanders_wrong == 0,
		"run %u: threads made after the caller died received %u "
		"messages not meant for them",
		run, bystanders_wrong);
	KEXPECT(reap_down_to(before), "run %u: threads left over", run);
}

/*
 * A server holds a call whose caller's task is killed; new threads are
 * made (and may get the caller's freed struct); then the server replies.
 * The reply must fail with -ESRCH and reach nobody, on each path, many
 * times; and every endpoint reference taken must be given back.
 */
KTEST(USER0018, user, "a reply to a killed caller fails and reaches nobody")
{
	bool was_on = ipc_fast_enabled();
	unsigned endpoints = ipc_endpoints_in_use();
	unsigned runs = (unsigned)scaled(REPLYRACE_RUNS);
	struct ipc_path_stats before, after = {0};
	struct endpoint *eps[4];

	if (!have(t, "replyrace"))
		return;
	for (int i = 0; i < 4; i++) {
		eps[i] = ipc_endpoint_create();
		if (!KEXPECT(eps[i], "no endpoint left")) {
			while (i--)
				ipc_endpoint_put(eps[i]);
			return;
		}
	}
	ipc_path_stats_read(&before);
	for (unsigned run = 0; run < 2 * runs && !t->failed; run++) {
		ipc_fast_set(run < runs);
		replyrace_once(t, run, eps);
		if (run == runs - 1)
			ipc_path_stats_read(&after);
	}
	ipc_fast_set(was_on);
	/* A caller killed while it waited in the fast path resumes the
	 * general way, which is where it detaches. It waits there only if
	 * the server waited first (2 ms after its spawn): not certain in
	 * any one run, so only the full count of runs is checked. */
	KEXPECT(t->failed || runs < REPLYRACE_RUNS ||
			after.resumed > before.resumed,
		"no caller waited in the fast path (%llu resumed)",
		(unsigned long long)(after.resumed - before.resumed));
	for (int i = 0; i < 4; i++)
		ipc_endpoint_put(eps[i]);
	KEXPECT(ipc_endpoints_in_use() == endpoints,
		"%u endpoints in use, %u before", ipc_endpoints_in_use(),
		endpoints);
}
