// SPDX-License-Identifier: MIT
/*
 * The user side of the benchmarks (bench/switch.c): what only user mode can
 * measure, timed here with the TSC and reported to the kernel over IPC
 * (the protocol and the argument: uapi/bench.h).
 *
 *   syscall  null system calls (SYS_CPU_ID: a per-CPU load and back), the
 *            floor under every other system call
 *   client   IPC round trips (call and reply) to a server: with a server
 *            task, two address spaces; the lat_ctx / pipe ping-pong
 *            analogue
 *   server   answers every call on the endpoint it is given with the
 *            message it got, until told to stop
 *   threads  client and server as two threads of this task: one address
 *            space
 *
 * Each sample is one operation timed alone, minus what reading the clock
 * twice costs (measured here first): under QEMU with -icount the samples
 * are then exact instruction counts (times two) of the kernel path.
 */
#include "apic/tsc.h"
#include "uapi/bench.h"
#include "user/lib/ulib.h"

/* Enough for bench_scale=1000 (bench/harness.c: 1001 samples x 10). */
#define SAMPLES_MAX	  10010
#define OVERHEAD_PAIRS	  101
#define SERVER_STACK_SIZE 16384

struct orders {
	uint64_t max_samples, min_samples, budget_cycles;
};

static long kernel_endpoint;
static uint64_t clock_overhead;
static uint64_t samples[SAMPLES_MAX];

static void measure_clock_overhead(void)
{
	uint64_t least = UINT64_MAX;

	for (int i = 0; i < OVERHEAD_PAIRS; i++) {
		uint64_t start = tsc_read_ordered();
		uint64_t end = tsc_read_ordered();

		least = MIN(least, end - start);
	}
	clock_overhead = least;
}

static bool get_orders(struct orders *o)
{
	struct ipc_message hello = {.label = UBENCH_HELLO}, reply;

	if (sys_ipc_call(kernel_endpoint, &hello, &reply) < 0)
		return false;
	o->max_samples = MIN(reply.words[UBENCH_WORD_MAX_SAMPLES], SAMPLES_MAX);
	o->min_samples =
		MIN(reply.words[UBENCH_WORD_MIN_SAMPLES], o->max_samples);
	o->budget_cycles = reply.words[UBENCH_WORD_BUDGET];
	return true;
}

static void report(const uint64_t *v, size_t n, long status)
{
	struct ipc_message m;

	for (size_t i = 0; i < n; i += SYS_IPC_WORDS) {
		size_t k = MIN(n - i, (size_t)SYS_IPC_WORDS);

		m.label =
			UBENCH_SAMPLES | (long)k << UBENCH_SAMPLES_COUNT_SHIFT;
		for (size_t j = 0; j < k; j++)
			m.words[j] = v[i + j];
		sys_ipc_send(kernel_endpoint, &m);
	}
	m = (struct ipc_message){.label = UBENCH_DONE,
				 .words = {(uint64_t)status}};
	sys_ipc_send(kernel_endpoint, &m);
}

/*
 * Warm-up, then samples of op() until max_samples, or min_samples and the
 * budget spent. Returns the number of samples, or -1 when op failed.
 */
static long sample(const struct orders *o, bool (*op)(void))
{
	uint64_t started;
	size_t n = 0;

	for (int i = 0; i < UBENCH_WARMUP; i++) {
		if (!op())
			return -1;
	}
	started = tsc_read_ordered();
	while (n < o->max_samples &&
	       (n < o->min_samples ||
		tsc_read_ordered() - started < o->budget_cycles)) {
		uint64_t start = tsc_read_ordered(), t;

		if (!op())
			return -1;
		t = tsc_read_ordered() - start;
		samples[n++] = t > clock_overhead ? t - clock_overhead : 0;
	}
	return (long)n;
}

static void measure_and_report(const struct orders *o, bool (*op)(void))
{
	long n = sample(o, op);

	if (n < 0)
		report(NULL, 0, UBENCH_FAILED_IPC);
	else
		report(samples, (size_t)n, UBENCH_OK);
}

/* --- Null system call ------------------------------------------------------ */

static bool null_syscall(void)
{
	return sys_cpu_id() >= 0;
}

/* --- IPC ----------------------------------------------------------------- */

static long server_endpoint;

static bool round_trip(void)
{
	struct ipc_message ping = {.label = UBENCH_PING}, pong;

	return sys_ipc_call(server_endpoint, &ping, &pong) == UBENCH_PING;
}

/* Echoes every call on ep until UBENCH_STOP; false on an IPC error. */
static bool serve(long ep)
{
	struct ipc_message m;
	long label = sys_ipc_recv(ep, &m);

	while (label >= 0 && label != UBENCH_STOP)
		label = sys_ipc_reply_recv(ep, &m, &m);
	return label == UBENCH_STOP;
}

static void stop_server(long ep)
{
	struct ipc_message stop = {.label = UBENCH_STOP};

	sys_ipc_send(ep, &stop);
}

/* --- Client and server threads in one task ---------------------------------- */

static char server_stack[SERVER_STACK_SIZE] __aligned(16);
static uint64_t server_cpu_mask;

static void server_thread(long ep)
{
	if (sys_set_affinity(server_cpu_mask) == 0)
		serve(ep);
}

/*
 * The server thread needs no waiting for: once it has taken the stop
 * message, the task may end, and ending the task ends its threads. (A
 * client spinning on a flag until the server thread ends would also stall
 * QEMU's -icount mode, which runs the CPUs in turns.)
 */
static bool start_server_thread(unsigned server_cpu)
{
	server_endpoint = sys_endpoint_create();
	server_cpu_mask = 1UL << server_cpu;
	return server_endpoint >= 0 &&
	       thread_start(server_thread, server_stack, sizeof(server_stack),
			    server_endpoint) >= 0;
}

static long threads(const struct orders *o)
{
	long n = sample(o, round_trip);

	stop_server(server_endpoint);
	if (n < 0)
		return UBENCH_FAILED_IPC;
	report(samples, (size_t)n, UBENCH_OK);
	return UBENCH_OK;
}

int main(long arg)
{
	unsigned long a = (unsigned long)arg;
	unsigned role = (unsigned)(a & UBENCH_ARG_ROLE_MASK);
	unsigned cpu =
		(unsigned)(a >> UBENCH_ARG_CPU_SHIFT & UBENCH_ARG_CPU_MASK);
	unsigned peer =
		(unsigned)(a >> UBENCH_ARG_PEER_SHIFT & UBENCH_ARG_CPU_MASK);
	struct orders o;
	long status = UBENCH_OK;

	kernel_endpoint = spawned_handle(UBENCH_HANDLE_KERNEL);
	if (role == UBENCH_ROLE_SERVER) {
		/* Its endpoint is the one to serve: it reports nothing. */
		return sys_set_affinity(1UL << cpu) || !serve(kernel_endpoint);
	}
	/* Set-up before asking for orders: the kernel counts TLB events
	 * from that request on, for the measurement alone. */
	if (sys_set_affinity(1UL << cpu) ||
	    (role == UBENCH_ROLE_THREADS && !start_server_thread(peer))) {
		report(NULL, 0, UBENCH_FAILED_SETUP);
		return 1;
	}
	measure_clock_overhead();
	if (!get_orders(&o)) {
		report(NULL, 0, UBENCH_FAILED_SETUP);
		return 1;
	}
	switch (role) {
	case UBENCH_ROLE_SYSCALL:
		measure_and_report(&o, null_syscall);
		break;
	case UBENCH_ROLE_CLIENT:
		server_endpoint = spawned_handle(UBENCH_HANDLE_SERVER);
		measure_and_report(&o, round_trip);
		stop_server(server_endpoint);
		break;
	case UBENCH_ROLE_THREADS:
		status = threads(&o);
		if (status != UBENCH_OK)
			report(NULL, 0, status);
		break;
	default:
		status = UBENCH_FAILED_SETUP;
		report(NULL, 0, status);
		break;
	}
	return status != UBENCH_OK;
}
