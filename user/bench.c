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
 *   tlb_flush2  threads of this task on CPUs 0 .. n-1, each mapping,
 *            writing, unmapping and checking pages in a loop: loops per
 *            second over all threads (below)
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
	uint64_t max_samples, min_samples, budget_cycles, tsc_hz;
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
	o->tsc_hz = reply.words[UBENCH_WORD_TSC_HZ];
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

/* --- tlb_flush2 ------------------------------------------------------------ */

/*
 * will-it-scale's tlb_flush2 with threads: every thread maps a few pages
 * of its own, writes each, and throws them away, in a loop. Unmapping in
 * an address space that other CPUs run is what sends a shootdown to them.
 *
 * The test checks itself: a page mapped afresh must read zero. The thread
 * that unmapped checks its own pages; that alone would miss a flush that
 * never reached another CPU, since no other CPU read them. So each
 * odd-numbered thread is also the witness of the thread before it: it
 * reads that thread's pages (its TLB now holds them), waits until that
 * thread has unmapped and mapped them again, and reads them again before
 * it unmaps anything itself (its own flush would drop what it holds). A
 * translation the unmap left on the witness's CPU reads the old frame.
 * That frame must not come back as the new one (frames are handed out
 * lowest first): two decoy regions take turns. The unmap frees the old
 * frames; the one decoy takes them, with the pattern written in them;
 * the other decoy lets go of the frames it held, and the region is mapped
 * again with those. The region thus alternates between two sets of
 * frames, and a stale translation reads the pattern.
 *
 * Each thread's region is even-numbered in `seq` while it is mapped and
 * reads zero, odd while its owner writes, unmaps and maps it. A witness
 * sets `pinned`, then reads `seq`; the owner makes `seq` odd, then waits
 * while `pinned` is set: sequentially consistent on both sides, so
 * either the owner sees the pin and waits, or the witness sees `seq` odd
 * and stays away (the two stores and loads of Dekker's algorithm).
 *
 * While thread 0 takes its samples, owners go straight on: `seq` is even
 * for a few instructions per loop, and a witness reads only when it
 * happens to catch one. Waiting for the witness would time the checker,
 * not the flushes. Once the samples are taken, thread 0 sets `checking`
 * and loops on until each witness has checked FLUSH2_WITNESSED_MIN
 * cycles: a witness sets `wanted` while it waits, and its owner, the
 * region mapped, stays until it is clear. `wanted` is only a hint for
 * progress, relaxed: the pin alone keeps the read safe. An odd thread
 * waits for an even one's `seq`; an even one waits for nothing but its
 * witness's read of a region it holds mapped: no cycle, no deadlock.
 */
#define FLUSH2_PAGES	    4
#define FLUSH2_SPAN	    0x10000UL /* room of one region */
#define FLUSH2_OWN_AT	    0x500000000000UL
#define FLUSH2_DECOY_AT	    0x540000000000UL
#define FLUSH2_STACK_SIZE   8192
#define FLUSH2_PROT	    (SYS_PROT_READ | SYS_PROT_WRITE)
#define PAGE_BYTES	    4096UL
#define FLUSH2_LEN	    (FLUSH2_PAGES * PAGE_BYTES)
#define PATTERN_THREAD_BITS 8

/*
 * However the host schedules the CPUs, each witness checks this many of
 * its owner's cycles before the test ends: a flush that skips its CPU is
 * then always seen, not only when the witness happened to keep up.
 */
#define FLUSH2_WITNESSED_MIN 4

/* One thread: n, seq, witnessed, moved and stopped are written by it
 * alone; pinned and wanted by its witness alone. */
static struct {
	uint64_t n;	    /* loops done */
	uint64_t seq;	    /* even: its region is mapped and reads zero */
	uint64_t witnessed; /* owner's cycles it checked (odd threads) */
	bool pinned;	    /* its witness is reading its region */
	bool wanted;	    /* its witness waits for it to be mapped */
	bool moved;	    /* it runs on its own CPU */
	bool stopped;	    /* it has ended its loop */
} __aligned(64) flush2_threads[UBENCH_TLB_FLUSH2_THREADS_MAX];

static char flush2_stacks[UBENCH_TLB_FLUSH2_THREADS_MAX]
			 [FLUSH2_STACK_SIZE] __aligned(16);

/* Thread 0 has its samples: owners now wait for their witnesses. */
static bool flush2_checking;

/* Thread 0 has its samples and the witnesses their checks: all stop. */
static bool flush2_stopping;

/* The first failure: its status and, for a stale read, where. Only the
 * thread that won `taken` writes the rest, before it stops. */
static struct {
	bool taken;
	long status;
	uint64_t va, value, cpu;
} flush2_failure;

static bool flush2_failed(void)
{
	return __atomic_load_n(&flush2_failure.taken, __ATOMIC_RELAXED);
}

static bool flush2_stop(void)
{
	return __atomic_load_n(&flush2_stopping, __ATOMIC_RELAXED) ||
	       flush2_failed();
}

/* Keeps the first failure; later ones are what it caused. */
static void flush2_fail(long status, uint64_t va, uint64_t value)
{
	if (__atomic_exchange_n(&flush2_failure.taken, true, __ATOMIC_RELAXED))
		return;
	flush2_failure.status = status;
	flush2_failure.va = va;
	flush2_failure.value = value;
	flush2_failure.cpu = (uint64_t)sys_cpu_id();
}

static bool flush2_setup_ok(long err)
{
	if (err < 0)
		flush2_fail(UBENCH_FAILED_SETUP, 0, (uint64_t)-err);
	return err >= 0;
}

static uintptr_t own_region(unsigned thread)
{
	return FLUSH2_OWN_AT + thread * FLUSH2_SPAN;
}

/* Decoy `which` (0 or 1) of a thread: loop k maps decoy k % 2. */
static uintptr_t decoy_region(unsigned thread, uint64_t which)
{
	return FLUSH2_DECOY_AT + (thread * 2 + which % 2) * FLUSH2_SPAN;
}

/* Every page of the region at va reads zero; else the failure is kept. */
static bool reads_zero(uintptr_t va)
{
	for (unsigned i = 0; i < FLUSH2_PAGES; i++) {
		uintptr_t page = va + i * PAGE_BYTES;
		uint64_t value = *(volatile uint64_t *)page;

		if (value) {
			flush2_fail(UBENCH_FAILED_STALE, page, value);
			return false;
		}
	}
	return true;
}

static void write_pages(uintptr_t va, uint64_t pattern)
{
	for (unsigned i = 0; i < FLUSH2_PAGES; i++)
		*(volatile uint64_t *)(va + i * PAGE_BYTES) = pattern;
}

/* Write, unmap, map afresh (with the frames a decoy let go), check. */
static bool flush2_cycle(unsigned thread, uint64_t loop)
{
	uintptr_t va = own_region(thread);
	uintptr_t taker = decoy_region(thread, loop);
	uintptr_t giver = decoy_region(thread, loop + 1);
	uint64_t pattern = loop << PATTERN_THREAD_BITS | (thread + 1);

	write_pages(va, pattern);
	if (!flush2_setup_ok(sys_unmap((void *)va, FLUSH2_LEN)) ||
	    !flush2_setup_ok(sys_map((void *)taker, FLUSH2_LEN, FLUSH2_PROT)))
		return false;
	write_pages(taker, pattern);
	return flush2_setup_ok(sys_unmap((void *)giver, FLUSH2_LEN)) &&
	       flush2_setup_ok(sys_map((void *)va, FLUSH2_LEN, FLUSH2_PROT)) &&
	       reads_zero(va);
}

/*
 * The witness reads the region of thread `owner` while it is mapped.
 * Returns true when it read zero, with the owner's seq at the read; false
 * on a stale read or when the test is ending or has failed.
 */
static bool witness_read(unsigned owner, uint64_t *seq)
{
	bool done = false, ok = false;

	__atomic_store_n(&flush2_threads[owner].wanted, true, __ATOMIC_RELAXED);
	while (!done && !flush2_stop()) {
		uint64_t now;

		__atomic_store_n(&flush2_threads[owner].pinned, true,
				 __ATOMIC_SEQ_CST);
		now = __atomic_load_n(&flush2_threads[owner].seq,
				      __ATOMIC_SEQ_CST);
		done = now % 2 == 0;
		ok = done && reads_zero(own_region(owner));
		__atomic_store_n(&flush2_threads[owner].pinned, false,
				 __ATOMIC_RELEASE);
		*seq = now;
	}
	__atomic_store_n(&flush2_threads[owner].wanted, false,
			 __ATOMIC_RELAXED);
	return ok;
}

/*
 * Thread `self` reads its owner's region (the thread before it), waits
 * for the owner's next cycle, and reads it again.
 */
static void witness(unsigned self)
{
	unsigned owner = self - 1;
	uint64_t first, second;

	if (!witness_read(owner, &first))
		return;
	while (!flush2_stop() && __atomic_load_n(&flush2_threads[owner].seq,
						 __ATOMIC_RELAXED) == first)
		__builtin_ia32_pause();
	if (witness_read(owner, &second))
		__atomic_store_n(&flush2_threads[self].witnessed,
				 flush2_threads[self].witnessed + 1,
				 __ATOMIC_RELAXED);
}

/* One loop of one thread; false once the test has failed. */
static bool flush2_loop(unsigned thread, uint64_t loop)
{
	uint64_t *seq = &flush2_threads[thread].seq;
	bool ok;

	__atomic_store_n(seq, *seq + 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&flush2_threads[thread].pinned,
			       __ATOMIC_SEQ_CST))
		__builtin_ia32_pause();
	ok = flush2_cycle(thread, loop);
	/* Release: the new mapping is in place before a witness that sees
	 * the even seq reads it. */
	__atomic_store_n(seq, *seq + 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&flush2_checking, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&flush2_threads[thread].wanted,
			       __ATOMIC_RELAXED) &&
	       !flush2_stop())
		__builtin_ia32_pause();
	if (ok && thread % 2)
		witness(thread);
	return ok && !flush2_failed();
}

static void flush2_count(unsigned thread)
{
	__atomic_store_n(&flush2_threads[thread].n,
			 flush2_threads[thread].n + 1, __ATOMIC_RELAXED);
}

static uint64_t flush2_total(unsigned threads)
{
	uint64_t sum = 0;

	for (unsigned t = 0; t < threads; t++)
		sum += __atomic_load_n(&flush2_threads[t].n, __ATOMIC_RELAXED);
	return sum;
}

/* Threads 1 .. n-1: loop on their CPU until the test ends or fails. */
static void flush2_worker(long arg)
{
	unsigned thread = (unsigned)arg;

	if (flush2_setup_ok(sys_set_affinity(1UL << thread))) {
		__atomic_store_n(&flush2_threads[thread].moved, true,
				 __ATOMIC_RELAXED);
		while (!flush2_stop() &&
		       flush2_loop(thread, flush2_threads[thread].n))
			flush2_count(thread);
	}
	/* Release: a failure this thread kept is written before thread 0,
	 * whose acquire in flush2_wait pairs with it, reads it. */
	__atomic_store_n(&flush2_threads[thread].stopped, true,
			 __ATOMIC_RELEASE);
}

/*
 * A new thread starts on thread 0's CPU, which the kernel does not preempt
 * while it measures: thread 0 yields until each has moved to its own.
 */
static void flush2_wait_moved(unsigned started)
{
	for (unsigned t = 1; t < started; t++) {
		while (!__atomic_load_n(&flush2_threads[t].moved,
					__ATOMIC_RELAXED) &&
		       !__atomic_load_n(&flush2_threads[t].stopped,
					__ATOMIC_RELAXED))
			sys_yield();
	}
}

/* Every witness among threads 1 .. started-1 has checked enough cycles. */
static bool flush2_witnesses_done(unsigned started)
{
	for (unsigned t = 1; t < started; t += 2) {
		if (__atomic_load_n(&flush2_threads[t].witnessed,
				    __ATOMIC_RELAXED) < FLUSH2_WITNESSED_MIN &&
		    !__atomic_load_n(&flush2_threads[t].stopped,
				     __ATOMIC_RELAXED))
			return false;
	}
	return true;
}

/* Waits for threads 1 .. started-1, so that no failure goes unreported. */
static void flush2_wait(unsigned started)
{
	__atomic_store_n(&flush2_stopping, true, __ATOMIC_RELAXED);
	for (unsigned t = 1; t < started; t++) {
		while (!__atomic_load_n(&flush2_threads[t].stopped,
					__ATOMIC_ACQUIRE))
			sys_yield();
	}
}

/*
 * Thread 0: maps every thread's regions, starts the others, loops like them
 * and turns each window of budget / min_samples cycles into one sample,
 * the loops per second of all threads together.
 */
static long tlb_flush2(const struct orders *o, unsigned threads)
{
	uint64_t window = o->budget_cycles / MAX(o->min_samples, 1);
	uint64_t last, last_total, loop = 0;
	unsigned started = 1;
	size_t n = 0;

	/* Loop 0 of each thread maps decoy 0 and lets go of decoy 1. */
	for (unsigned t = 0; t < threads; t++) {
		if (!flush2_setup_ok(sys_map((void *)own_region(t), FLUSH2_LEN,
					     FLUSH2_PROT)) ||
		    !flush2_setup_ok(sys_map((void *)decoy_region(t, 1),
					     FLUSH2_LEN, FLUSH2_PROT)))
			return UBENCH_FAILED_SETUP;
	}
	for (; started < threads; started++) {
		if (!flush2_setup_ok(thread_start(flush2_worker,
						  flush2_stacks[started],
						  FLUSH2_STACK_SIZE, started)))
			break;
	}
	flush2_wait_moved(started);
	for (int i = 0; i < UBENCH_WARMUP && flush2_loop(0, loop); i++)
		loop++;
	last = tsc_read_ordered();
	last_total = flush2_total(threads);
	while (n < o->min_samples && flush2_loop(0, loop)) {
		uint64_t now, total;

		loop++;
		flush2_count(0);
		now = tsc_read_ordered();
		if (now - last < window)
			continue;
		total = flush2_total(threads);
		samples[n++] = (total - last_total) * o->tsc_hz / (now - last);
		last = now;
		last_total = total;
	}
	/* Past the samples: untimed loops that let the witnesses check. */
	__atomic_store_n(&flush2_checking, true, __ATOMIC_RELAXED);
	while (n == o->min_samples && !flush2_witnesses_done(started) &&
	       flush2_loop(0, loop))
		loop++;
	flush2_wait(started);
	if (flush2_failed())
		return flush2_failure.status;
	report(samples, n, UBENCH_OK);
	return UBENCH_OK;
}

static void report_flush2_failure(long status)
{
	struct ipc_message m = {.label = UBENCH_DONE,
				.words = {(uint64_t)status}};

	if (status == UBENCH_FAILED_STALE) {
		m.words[UBENCH_WORD_STALE_VA] = flush2_failure.va;
		m.words[UBENCH_WORD_STALE_VALUE] = flush2_failure.value;
		m.words[UBENCH_WORD_STALE_CPU] = flush2_failure.cpu;
	}
	sys_ipc_send(kernel_endpoint, &m);
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
	    (role == UBENCH_ROLE_THREADS && !start_server_thread(peer)) ||
	    (role == UBENCH_ROLE_TLB_FLUSH2 &&
	     (peer < 1 || peer > UBENCH_TLB_FLUSH2_THREADS_MAX))) {
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
	case UBENCH_ROLE_TLB_FLUSH2:
		status = tlb_flush2(&o, peer);
		if (status != UBENCH_OK)
			report_flush2_failure(status);
		break;
	default:
		status = UBENCH_FAILED_SETUP;
		report(NULL, 0, status);
		break;
	}
	return status != UBENCH_OK;
}
