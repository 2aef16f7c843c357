// SPDX-License-Identifier: MIT
/*
 * Context switches: what crossing into the kernel and from one thread or
 * address space to another costs.
 *
 * Kernel-thread ping-pong (bench_pingpong): two threads pinned to CPU 0
 * hand the CPU to each other with yield(), with the tick stopped there so
 * that nothing else runs or preempts them; one sample is a round trip (two
 * switches) and the row reports one switch. The user-mode rows (system call, IPC)
 * run the user program `bench` (user/bench.c), which times itself and
 * sends its samples to the kernel over IPC (uapi/bench.h).
 */
#include "bench/bench.h"
#include "bench/cpus.h"
#include "bench/fixture.h"
#include "bench/user_collect.h"
#include "uapi/bench.h"
#include "boot/boot_modules.h"
#include "lib/format.h"
#include "proc/handle.h"
#include "proc/ipc.h"
#include "console/kprintf.h"
#include "mm/tlb.h"
#include "sched/sched.h"
#include "proc/task.h"
#include "cpu/percpu.h"

#define USER_PROGRAM	 "bench"
#define SWITCHES_PER_RTT 2

/* --- User-mode rows --------------------------------------------------------- */

/* Kernel-owned endpoints live for good: made once, used by every row. */
static struct endpoint *results_endpoint, *server_endpoint;

struct user_run {
	unsigned role;
	unsigned cpu;	     /* where the measuring program runs */
	unsigned peer_cpu;   /* THREADS: the server thread's CPU */
	bool server_task;    /* a second task serves the calls */
	unsigned server_cpu; /* and runs there */
};

static uint64_t user_arg(unsigned role, unsigned cpu, unsigned peer)
{
	return role | (uint64_t)cpu << UBENCH_ARG_CPU_SHIFT |
	       (uint64_t)peer << UBENCH_ARG_PEER_SHIFT;
}

/* A handle with every endpoint right, for the programs' slots. */
static struct handle_grant endpoint_grant(struct endpoint *ep)
{
	return (struct handle_grant){ipc_endpoint_object(ep),
				     SYS_RIGHT_ENDPOINT_ALL};
}

long bench_user_collect(struct endpoint *ep, struct ipc_message *done)
{
	struct ipc_message m, orders = {0};
	int err = ipc_receive(ep, &m, NULL);

	orders.words[UBENCH_WORD_MAX_SAMPLES] = bench_max_samples();
	orders.words[UBENCH_WORD_MIN_SAMPLES] = bench_min_samples();
	orders.words[UBENCH_WORD_BUDGET] = ns_to_tsc(bench_budget_ns());
	orders.words[UBENCH_WORD_TSC_HZ] = tsc_hz();
	while (!err) {
		unsigned kind =
			m.label & ((1U << UBENCH_SAMPLES_COUNT_SHIFT) - 1);
		uint64_t n = m.label >> UBENCH_SAMPLES_COUNT_SHIFT;

		if (kind == UBENCH_HELLO) {
			bench_external_window(true);
			err = ipc_reply_receive(ep, &orders, NULL, &m, NULL);
			continue;
		}
		bench_external_window(false);
		if (kind == UBENCH_DONE) {
			*done = m;
			return (long)m.words[0];
		}
		for (uint64_t i = 0;
		     kind == UBENCH_SAMPLES && i < n && i < IPC_WORDS; i++)
			bench_add(m.words[i]);
		err = ipc_receive(ep, &m, NULL);
	}
	return err;
}

static void run_user(const struct user_run *r, const char *params)
{
	const void *image;
	size_t size;
	struct cpumask quiet;
	struct ipc_message stop = {.label = UBENCH_STOP};
	struct handle_grant grants[2];
	int server = 0, client;
	long status, server_status = 0;

	if (!boot_module(USER_PROGRAM, &image, &size)) {
		bench_na("the user programs are not boot modules here", "%s",
			 params);
		return;
	}
	if (!results_endpoint)
		results_endpoint = ipc_endpoint_create();
	if (!server_endpoint)
		server_endpoint = ipc_endpoint_create();
	if (!results_endpoint || !server_endpoint) {
		bench_na("no IPC endpoint left", "%s", params);
		return;
	}
	quiet = bench_cpu_mask(r->cpu);
	cpumask_set(&quiet, r->server_task ? r->server_cpu : r->peer_cpu);
	bench_ticks_stop(&quiet);
	bench_row_cpus(&quiet);
	bench_begin_external("%s", params);
	grants[UBENCH_HANDLE_KERNEL] = endpoint_grant(results_endpoint);
	grants[UBENCH_HANDLE_SERVER] = endpoint_grant(server_endpoint);
	if (r->server_task)
		server = task_spawn(
			USER_PROGRAM,
			user_arg(UBENCH_ROLE_SERVER, r->server_cpu, 0),
			&grants[UBENCH_HANDLE_SERVER], 1);
	client = server < 0 ? server
			    : task_spawn(USER_PROGRAM,
					 user_arg(r->role, r->cpu, r->peer_cpu),
					 grants, 2);
	if (client > 0) {
		struct ipc_message done;
		long reported = bench_user_collect(results_endpoint, &done);

		task_wait(client, &status);
		if (reported)
			status = reported;
	} else {
		status = UBENCH_FAILED_SETUP;
		if (server > 0)
			ipc_send(server_endpoint, &stop, NULL);
	}
	if (server > 0)
		task_wait(server, &server_status);
	bench_ticks_restart(&quiet);
	if (status || server_status)
		kprintf("bench: the user program failed (status %ld, server "
			"%ld)\n",
			status, server_status);
	bench_end();
}

BENCH(syscall, switch,
      "null system call from user mode (SYS_CPU_ID; Linux getppid is the "
      "usual stand-in)")
{
	struct user_run r = {.role = UBENCH_ROLE_SYSCALL, .cpu = MEASURING_CPU};

	run_user(&r, "call=cpu_id");
}

BENCH(ipc, switch,
      "user-to-user IPC round trip through the kernel: call and reply (the "
      "pipe ping-pong / lat_ctx analogue)")
{
	struct user_run two_spaces = {.role = UBENCH_ROLE_CLIENT,
				      .cpu = MEASURING_CPU,
				      .server_task = true,
				      .server_cpu = MEASURING_CPU};
	struct user_run one_space = {.role = UBENCH_ROLE_THREADS,
				     .cpu = MEASURING_CPU,
				     .peer_cpu = MEASURING_CPU};

	run_user(&two_spaces, "spaces=2,cpus=1");
	run_user(&one_space, "spaces=1,cpus=1");
	if (cpu_count < 2) {
		bench_na("one CPU", "spaces=2,cpus=2");
		bench_na("one CPU", "spaces=1,cpus=2");
		return;
	}
	two_spaces.server_cpu = bench_other_cpu();
	one_space.peer_cpu = bench_other_cpu();
	run_user(&two_spaces, "spaces=2,cpus=2");
	run_user(&one_space, "spaces=1,cpus=2");
}

BENCH(thread_switch, switch,
      "thread to thread on one CPU, no address-space change (per switch)")
{
	struct bench_space space;
	struct bench_pingpong kernel = {{NULL, NULL}, {NULL, NULL}, 0};
	struct bench_pingpong same;

	bench_begin(SWITCHES_PER_RTT, "threads=kernel");
	bench_pingpong(MEASURING_CPU, &kernel);
	bench_end();
	if (!bench_space_create(&space, 0)) {
		bench_na("out of memory", "threads=same_mm");
		return;
	}
	same = (struct bench_pingpong){{space.mm, space.mm}, {NULL, NULL}, 0};
	bench_begin(SWITCHES_PER_RTT, "threads=same_mm");
	bench_pingpong(MEASURING_CPU, &same);
	bench_end();
	bench_space_destroy(&space);
}

/* One row of mm_switch: two address spaces, `pages` touched per turn. */
static void mm_switch_row(bool pcid, unsigned pages)
{
	struct bench_space a, b;
	struct bench_pingpong p = {{NULL, NULL}, {&a, &b}, pages};

	if (!bench_space_create(&a, pages)) {
		bench_na("out of memory", "pcid=%s,pages=%u",
			 pcid ? "on" : "off", pages);
		return;
	}
	if (!bench_space_create(&b, pages)) {
		bench_space_destroy(&a);
		bench_na("out of memory", "pcid=%s,pages=%u",
			 pcid ? "on" : "off", pages);
		return;
	}
	p.mm[0] = a.mm;
	p.mm[1] = b.mm;
	bench_begin(SWITCHES_PER_RTT, "pcid=%s,pages=%u", pcid ? "on" : "off",
		    pages);
	bench_pingpong(MEASURING_CPU, &p);
	bench_end();
	bench_space_destroy(&a);
	bench_space_destroy(&b);
}

BENCH(mm_switch, switch,
      "switch between two address spaces on one CPU, touching 0 or 512 "
      "pages after each, with PCID and without (the PCID series, Linux 4.14: "
      "1.8 us against 6.2 us; per switch)")
{
	static const unsigned touched[] = {0, BENCH_SPACE_PAGES_MAX};
	struct tlb_policy p = tlb_policy;

	for (int pcid = 1; pcid >= 0; pcid--) {
		if (pcid && !bench_pcid_possible()) {
			for (size_t i = 0; i < ARRAY_SIZE(touched); i++)
				bench_na("no PCID", "pcid=on,pages=%u",
					 touched[i]);
			continue;
		}
		p.pcid = pcid;
		/* Where the CPU has it (bench_policy_set settles it). */
		p.invpcid = true;
		bench_policy_set(&p);
		for (size_t i = 0; i < ARRAY_SIZE(touched); i++)
			mm_switch_row(pcid, touched[i]);
	}
}

/* A thread on an address space and a kernel thread, as a CPU between a
 * user thread and the idle thread. */
static void lazy_row(enum tlb_lazy_policy lazy, const char *what)
{
	struct tlb_policy p = tlb_policy;
	struct bench_space space;
	struct bench_pingpong pp;

	p.lazy = lazy;
	bench_policy_set(&p);
	if (!bench_space_create(&space, 0)) {
		bench_na("out of memory", "%s", what);
		return;
	}
	pp = (struct bench_pingpong){{space.mm, NULL}, {NULL, NULL}, 0};
	bench_begin(SWITCHES_PER_RTT, "%s", what);
	bench_pingpong(MEASURING_CPU, &pp);
	bench_end();
	bench_space_destroy(&space);
}

BENCH(idle_lazy, switch,
      "a user thread to a kernel thread (as to idle) and back, under each "
      "lazy= policy: lazy TLB keeps the user mm loaded (per switch)")
{
	for (unsigned i = 0; tlb_lazy_names[i]; i++) {
		char what[BENCH_PARAMS_MAX];

		ksnprintf(what, sizeof(what), "lazy=%s", tlb_lazy_names[i]);
		lazy_row((enum tlb_lazy_policy)i, what);
	}
}

/* --- Cross-CPU wake-up ---------------------------------------------------- */

struct wakeup {
	struct wait_queue wq[2];
	int turn; /* whose turn it is: 0 or 1; guarded by both sides' use */
	bool stop;
};

/* Waits on my queue until it is my turn (or the end). */
static void wait_turn(struct wakeup *w, int me)
{
	uint64_t flags = spin_lock_irqsave(&w->wq[me].lock);

	while (__atomic_load_n(&w->turn, __ATOMIC_ACQUIRE) != me &&
	       !__atomic_load_n(&w->stop, __ATOMIC_RELAXED))
		wait_queue_sleep_locked(&w->wq[me]);
	spin_unlock_irqrestore(&w->wq[me].lock, flags);
}

/* Gives the turn to the other side and wakes it. */
static void pass_turn(struct wakeup *w, int other)
{
	uint64_t flags = spin_lock_irqsave(&w->wq[other].lock);

	/* Release: pairs with the acquire load in wait_turn. */
	__atomic_store_n(&w->turn, other, __ATOMIC_RELEASE);
	spin_unlock_irqrestore(&w->wq[other].lock, flags);
	wake_one(&w->wq[other]);
}

static void wakeup_measure(void *arg)
{
	struct wakeup *w = arg;

	while (bench_more()) {
		uint64_t start = bench_clock();

		pass_turn(w, 1);
		wait_turn(w, 0);
		bench_add(bench_clock() - start);
	}
	__atomic_store_n(&w->stop, true, __ATOMIC_RELAXED);
	pass_turn(w, 1);
}

static void wakeup_answer(void *arg)
{
	struct wakeup *w = arg;

	for (;;) {
		wait_turn(w, 1);
		if (__atomic_load_n(&w->stop, __ATOMIC_RELAXED))
			return;
		pass_turn(w, 0);
	}
}

BENCH(wakeup, switch,
      "cross-CPU wake-up: a thread wakes one blocked on another, idle CPU, "
      "which wakes it back (per round trip)")
{
	static struct wakeup w;
	struct cpumask both;

	if (cpu_count < 2) {
		bench_na("one CPU", "target=idle");
		return;
	}
	wait_queue_init(&w.wq[0]);
	wait_queue_init(&w.wq[1]);
	w.turn = 0;
	w.stop = false;
	both = bench_cpu_mask(MEASURING_CPU);
	cpumask_set(&both, bench_other_cpu());
	bench_ticks_stop(&both);
	bench_row_cpus(&both);
	bench_begin(1, "target=idle");
	if (!bench_thread_start(wakeup_answer, &w, bench_other_cpu(), NULL) ||
	    !bench_thread_start(wakeup_measure, &w, MEASURING_CPU, NULL)) {
		w.stop = true;
		pass_turn(&w, 1);
	}
	bench_threads_wait();
	bench_end();
	bench_ticks_restart(&both);
}
