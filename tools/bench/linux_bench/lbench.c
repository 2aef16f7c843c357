// SPDX-License-Identifier: MIT
/*
 * The Linux side of `make compare-linux` (tools/compare_linux.py): /init of
 * a small initramfs booted with Debian's stock kernel. It measures the
 * Linux analogue of some of shootdown's benchmarks and prints them in the
 * kernel's own format (docs/bench.md, "Output": `bench: env`, `@ ` rows,
 * `bench: NAME: N results in T ms`, `bench: end`), so that tools/bench.py
 * parses both sides alike; then it powers the machine off.
 *
 * The method is the kernel's (docs/bench.md, "Method"): RDTSC between
 * LFENCEs, the clock's own overhead taken off, 5 warm-up samples dropped,
 * then samples until 1001, or at least 11 and 200 ms (both scaled by
 * `scale=`), median, p10, p90 (nearest rank, rounded down), minimum, count.
 * Round trips report one switch, as the kernel's rows do.
 *
 * Arguments (after `--` on the kernel command line): `scale=P` (percent,
 * default 100) and `icount` (QEMU counts instructions: insns = cycles / 2).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/reboot.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE	      4096
#define WARMUP	      5
#define MAX_SAMPLES   1001
#define MIN_SAMPLES   11
#define BUDGET_NS     200000000ull
#define SPACE_PAGES   512
#define UNMAP_PAGES   64
#define CALIBRATE_NS  50000000ull
#define CLOCK_REPEATS 101

static unsigned scale = 100;
static bool icount;
static uint64_t tsc_hz, clock_overhead;
static unsigned cpus, results_total, benchmarks_total;
static uint64_t samples[MAX_SAMPLES * 10];

static inline uint64_t tsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("lfence\n\trdtsc\n\tlfence"
			 : "=a"(lo), "=d"(hi)::"memory");
	return (uint64_t)hi << 32 | lo;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void pin(unsigned cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		perror("lbench: sched_setaffinity");
}

static void die(const char *what)
{
	perror(what);
	reboot(RB_POWER_OFF);
	exit(1);
}

/* The TSC's rate against CLOCK_MONOTONIC, and the clock's own cost. */
static void calibrate(void)
{
	uint64_t t0 = now_ns(), c0 = tsc(), t1, c1;

	do
		t1 = now_ns();
	while (t1 - t0 < CALIBRATE_NS);
	c1 = tsc();
	tsc_hz = (c1 - c0) * 1000000000ull / (t1 - t0);
	clock_overhead = UINT64_MAX;
	for (unsigned i = 0; i < CLOCK_REPEATS; i++) {
		uint64_t a = tsc(), b = tsc();

		if (b - a < clock_overhead)
			clock_overhead = b - a;
	}
}

static unsigned max_samples(void)
{
	unsigned n = MAX_SAMPLES * scale / 100;

	return n < MIN_SAMPLES ? MIN_SAMPLES : n;
}

static int compare(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static uint64_t rank(unsigned n, unsigned p)
{
	return samples[(n - 1) * p / 100];
}

/* Sorts the row's samples, each divided by `per`, and prints the row. */
static void row(const char *name, const char *params, unsigned n, unsigned per)
{
	for (unsigned i = 0; i < n; i++)
		samples[i] /= per;
	qsort(samples, n, sizeof(samples[0]), compare);
	uint64_t median = rank(n, 50);
	char insns[32] = "-";

	if (icount)
		snprintf(insns, sizeof(insns), "%llu",
			 (unsigned long long)median / 2);
	printf("@ %-16s %-30s %-8s %9llu %9llu %9llu %9llu %6u %9.1f %7s -\n",
	       name, params, "cycles", (unsigned long long)median,
	       (unsigned long long)rank(n, 10), (unsigned long long)rank(n, 90),
	       (unsigned long long)samples[0], n,
	       (double)median * 1e9 / (double)tsc_hz, insns);
	fflush(stdout);
	results_total++;
}

/*
 * The harness: calls op() for the warm-up, then until the row has its
 * samples or its time; op returns its cost in TSC cycles (before the
 * clock's overhead is taken off). Returns the sample count.
 */
static unsigned measure(uint64_t (*op)(void *), void *arg)
{
	unsigned limit = max_samples(), n = 0;
	uint64_t budget = BUDGET_NS * scale / 100, start;

	for (unsigned i = 0; i < WARMUP; i++)
		op(arg);
	start = now_ns();
	while (n < limit && (n < MIN_SAMPLES || now_ns() - start < budget)) {
		uint64_t c = op(arg);

		samples[n++] = c > clock_overhead ? c - clock_overhead : 0;
	}
	return n;
}

static uint64_t bench_started;
static unsigned bench_rows;

static void begin(const char *name, const char *experiment)
{
	printf("bench: %s (linux): %s\n", name, experiment);
	printf("# benchmark        parameters                     unit     "
	       "   median       p10       p90       min  count median_ns   "
	       "insns tlb counters\n");
	bench_started = now_ns();
	bench_rows = results_total;
	benchmarks_total++;
}

static void end(const char *name)
{
	printf("bench: %s: %u results in %llu ms\n", name,
	       results_total - bench_rows,
	       (unsigned long long)(now_ns() - bench_started) / 1000000);
	fflush(stdout);
}

static void na(const char *name, const char *params, const char *why)
{
	printf("@ %-16s %-30s n/a: %s\n", name, params, why);
	results_total++;
}

/* --- syscall ---------------------------------------------------------------- */

static uint64_t op_getppid(void *arg)
{
	(void)arg;
	uint64_t t0 = tsc();

	getppid();
	return tsc() - t0;
}

/* --- sched_yield between two threads or processes ----------------------------- */

/*
 * Both sides run under SCHED_FIFO at one priority on CPU 0, so that
 * sched_yield hands the CPU to the other every time (CFS may pick the
 * caller again). The state is in a shared page, so that a forked peer
 * counts its turns where the measuring side sees them: a row whose peer
 * ran fewer times than it has samples did not switch, and says so.
 */
struct yielder {
	volatile bool stop;
	volatile unsigned long peer_runs;
	volatile char *pages; /* at one address in both processes */
	unsigned touch;
};

static void touch(volatile char *pages, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		(void)pages[(size_t)i * PAGE];
}

static void yield_loop(struct yielder *y)
{
	while (!y->stop) {
		sched_yield();
		y->peer_runs++;
		touch(y->pages, y->touch);
	}
}

static void *yield_thread(void *arg)
{
	yield_loop(arg);
	return NULL;
}

/* One sample: a yield to the peer and back, the pages touched on each
 * side: two switches. */
static uint64_t op_yield(void *arg)
{
	struct yielder *y = arg;
	uint64_t t0 = tsc();

	sched_yield();
	touch(y->pages, y->touch);
	return tsc() - t0;
}

static struct yielder *yielder_new(volatile char *pages, unsigned touched)
{
	struct yielder *y = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (y == MAP_FAILED)
		die("lbench: mmap");
	y->pages = pages;
	y->touch = touched;
	return y;
}

static void fifo(bool on)
{
	struct sched_param param = {.sched_priority = on ? 1 : 0};

	if (sched_setscheduler(0, on ? SCHED_FIFO : SCHED_OTHER, &param) != 0)
		perror("lbench: sched_setscheduler");
}

/* Measures the yields; the row, or n/a if the peer did not take turns. */
static void yield_row(const char *name, const char *params, struct yielder *y)
{
	unsigned long before = y->peer_runs;
	unsigned n = measure(op_yield, y);

	if (y->peer_runs - before < n)
		na(name, params, "sched_yield did not switch");
	else
		row(name, params, n, 2);
}

static void thread_switch(void)
{
	struct yielder *y = yielder_new(NULL, 0);
	pthread_t peer;

	begin("thread_switch", "two threads on one CPU calling sched_yield "
			       "under SCHED_FIFO (per switch)");
	pin(0);
	fifo(true);
	/* The thread inherits CPU 0 and the policy. */
	pthread_create(&peer, NULL, yield_thread, y);
	yield_row("thread_switch", "threads=same_mm", y);
	y->stop = true;
	pthread_join(peer, NULL);
	fifo(false);
	munmap(y, PAGE);
	end("thread_switch");
}

/* Two processes yielding to each other, each touching its own pages. */
static void mm_switch(void)
{
	static const unsigned touched[] = {0, SPACE_PAGES};
	char params[64];

	begin("mm_switch", "two processes on one CPU calling sched_yield "
			   "under SCHED_FIFO, each reading 0 or 512 of its "
			   "pages after every switch (per switch)");
	pin(0);
	fifo(true);
	for (unsigned i = 0; i < sizeof(touched) / sizeof(touched[0]); i++) {
		char *pages =
			mmap(NULL, SPACE_PAGES * PAGE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct yielder *y;
		pid_t child;

		if (pages == MAP_FAILED)
			die("lbench: mmap");
		y = yielder_new(pages, touched[i]);
		child = fork();
		if (child == 0) {
			/* Its own copy of the pages, written so that they are. */
			memset(pages, 1, SPACE_PAGES * PAGE);
			yield_loop(y);
			_exit(0);
		}
		memset(pages, 2, SPACE_PAGES * PAGE);
		snprintf(params, sizeof(params), "pages=%u", touched[i]);
		yield_row("mm_switch", params, y);
		y->stop = true;
		waitpid(child, NULL, 0);
		munmap(y, PAGE);
		munmap(pages, SPACE_PAGES * PAGE);
	}
	fifo(false);
	end("mm_switch");
}

/* --- pipe ping-pong ------------------------------------------------------- */

struct pingpong {
	int to_peer[2], from_peer[2];
};

static void serve(struct pingpong *p)
{
	char c;

	while (read(p->to_peer[0], &c, 1) == 1)
		if (write(p->from_peer[1], &c, 1) != 1)
			break;
}

static void *serve_thread(void *arg)
{
	pin(0);
	serve(arg);
	return NULL;
}

/* One sample: a byte to the peer and its reply: a call and a reply. */
static uint64_t op_pingpong(void *arg)
{
	struct pingpong *p = arg;
	char c = 'x';
	uint64_t t0 = tsc();

	if (write(p->to_peer[1], &c, 1) != 1 ||
	    read(p->from_peer[0], &c, 1) != 1)
		die("lbench: pipe");
	return tsc() - t0;
}

static void ipc(void)
{
	begin("ipc", "a one-byte pipe ping-pong round trip between two "
		     "processes or two threads on one CPU");
	pin(0);
	for (unsigned spaces = 2; spaces >= 1; spaces--) {
		struct pingpong p;
		pthread_t peer;
		pid_t child = -1;

		if (pipe(p.to_peer) != 0 || pipe(p.from_peer) != 0)
			die("lbench: pipe");
		if (spaces == 2) {
			child = fork();
			if (child == 0) {
				/* EOF when the parent closes its end. */
				close(p.to_peer[1]);
				serve(&p);
				_exit(0);
			}
		} else {
			pthread_create(&peer, NULL, serve_thread, &p);
		}
		row("ipc", spaces == 2 ? "spaces=2,cpus=1" : "spaces=1,cpus=1",
		    measure(op_pingpong, &p), 1);
		close(p.to_peer[1]);
		if (spaces == 2)
			waitpid(child, NULL, 0);
		else
			pthread_join(peer, NULL);
		close(p.to_peer[0]);
		close(p.from_peer[0]);
		close(p.from_peer[1]);
	}
	end("ipc");
}

/* --- flush_local: mprotect of N of 512 pages -------------------------------- */

struct protect {
	char *pages;
	unsigned n;
};

/*
 * One sample: write-protect N pages of 512 written ones (Linux flushes them
 * one by one up to tlb_single_page_flush_ceiling, 33, else the whole
 * context), then read all 512 again, as the kernel's row does. Giving the
 * write permission back, untimed, makes the next sample the same.
 */
static uint64_t op_protect(void *arg)
{
	struct protect *p = arg;
	uint64_t t0 = tsc(), t;

	if (mprotect(p->pages, (size_t)p->n * PAGE, PROT_READ) != 0)
		die("lbench: mprotect");
	touch(p->pages, SPACE_PAGES);
	t = tsc() - t0;
	if (mprotect(p->pages, (size_t)p->n * PAGE, PROT_READ | PROT_WRITE) !=
	    0)
		die("lbench: mprotect");
	for (unsigned i = 0; i < p->n; i++)
		p->pages[(size_t)i * PAGE] = 1;
	return t;
}

static const unsigned flush_pages[] = {1, 16, 32, 33, 64, 512};

static void flush_local(void)
{
	struct protect p;
	char params[64];

	begin("flush_local", "mprotect(PROT_READ) of N of 512 written pages, "
			     "then reading all 512");
	pin(0);
	p.pages = mmap(NULL, SPACE_PAGES * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p.pages == MAP_FAILED)
		die("lbench: mmap");
	memset(p.pages, 1, SPACE_PAGES * PAGE);
	for (unsigned i = 0; i < sizeof(flush_pages) / sizeof(flush_pages[0]);
	     i++) {
		p.n = flush_pages[i];
		snprintf(params, sizeof(params), "pages=%u", p.n);
		row("flush_local", params, measure(op_protect, &p), 1);
	}
	munmap(p.pages, SPACE_PAGES * PAGE);
	/* One method only (Linux picks page by page or full itself, at
	 * tlb_single_page_flush_ceiling, 33): no crossover to measure. */
	printf("bench: flush_local crossover n/a ceiling=33\n");
	end("flush_local");
}

/* --- Cross-CPU: a sibling thread spinning on CPU 1 ----------------------------- */

static atomic_bool spin_stop;

static void *spinner(void *arg)
{
	(void)arg;
	pin(1);
	while (!atomic_load_explicit(&spin_stop, memory_order_relaxed))
		;
	return NULL;
}

static pthread_t spin_thread;

/* Another thread of this process running on CPU 1: every flush of our
 * address space must reach it. Returns false on one CPU. */
static bool spin_start(void)
{
	if (cpus < 2)
		return false;
	atomic_store(&spin_stop, false);
	pthread_create(&spin_thread, NULL, spinner, NULL);
	/* Let it reach CPU 1 before the first sample. */
	usleep(10000);
	return true;
}

static void spin_end(void)
{
	atomic_store(&spin_stop, true);
	pthread_join(spin_thread, NULL);
}

/* One sample: madvise(MADV_DONTNEED) of one written page (its flush goes to
 * CPU 1 by IPI), writing it again untimed. */
static uint64_t op_dontneed(void *arg)
{
	char *page = arg;
	uint64_t t0, t;

	page[0] = 1;
	t0 = tsc();
	if (madvise(page, PAGE, MADV_DONTNEED) != 0)
		die("lbench: madvise");
	t = tsc() - t0;
	return t;
}

static void shootdown(void)
{
	begin("shootdown", "madvise(MADV_DONTNEED) of one written page from "
			   "CPU 0 while another thread of the process spins "
			   "on CPU 1");
	pin(0);
	if (!spin_start()) {
		na("shootdown", "targets=1,state=active", "one CPU");
	} else {
		char *page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (page == MAP_FAILED)
			die("lbench: mmap");
		row("shootdown", "targets=1,state=active",
		    measure(op_dontneed, page), 1);
		munmap(page, PAGE);
		spin_end();
	}
	end("shootdown");
}

/* --- munmap of 64 written pages --------------------------------------------- */

/* One sample: munmap of 64 pages mapped and written untimed before it. */
static uint64_t op_munmap(void *arg)
{
	(void)arg;
	char *pages = mmap(NULL, UNMAP_PAGES * PAGE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t t0;

	if (pages == MAP_FAILED)
		die("lbench: mmap");
	for (unsigned i = 0; i < UNMAP_PAGES; i++)
		pages[(size_t)i * PAGE] = 1;
	t0 = tsc();
	munmap(pages, UNMAP_PAGES * PAGE);
	return tsc() - t0;
}

static void batch_unmap(void)
{
	begin("batch_unmap", "munmap of 64 written pages, alone or with "
			     "another thread of the process on CPU 1");
	pin(0);
	row("batch_unmap", "mode=batched,pages=64,remote=0",
	    measure(op_munmap, NULL), 1);
	if (spin_start()) {
		row("batch_unmap", "mode=batched,pages=64,remote=1",
		    measure(op_munmap, NULL), 1);
		spin_end();
	} else {
		na("batch_unmap", "mode=batched,pages=64,remote=1", "one CPU");
	}
	end("batch_unmap");
}

/* --- tlb_flush2: threads that write, drop and check their pages ----------------- */

/*
 * will-it-scale's tlb_flush2 with threads, in the shape of shootdown's
 * tlb_flush2 row (bench/tlb_flush2.c): thread i on CPU i writes each of 4
 * pages of its own, drops them with madvise(MADV_DONTNEED) (a shootdown to
 * the CPUs the other threads run on) and checks that they read zero, in a
 * loop. Thread 0 turns each window of budget / MIN_SAMPLES into a sample,
 * the loops per second of all threads. Linux is trusted to flush: a
 * thread checks only its own pages, as will-it-scale does.
 */
#define FLUSH2_PAGES	   4
#define FLUSH2_THREADS_MAX 16

static struct {
	_Atomic uint64_t loops;
	pthread_t thread;
	char *pages;
} __attribute__((aligned(64))) flush2[FLUSH2_THREADS_MAX];

static atomic_bool flush2_stop;
static atomic_bool flush2_stale;

/* One loop of thread t; false when a page read non-zero. */
static bool flush2_loop(unsigned t)
{
	char *pages = flush2[t].pages;

	for (unsigned i = 0; i < FLUSH2_PAGES; i++)
		pages[(size_t)i * PAGE] = 1;
	if (madvise(pages, FLUSH2_PAGES * PAGE, MADV_DONTNEED) != 0)
		die("lbench: madvise");
	for (unsigned i = 0; i < FLUSH2_PAGES; i++) {
		if (((volatile char *)pages)[(size_t)i * PAGE]) {
			printf("bench: tlb_flush2 FAILED: cpu %u read %d in a "
			       "page just dropped, which must read zero\n",
			       t, pages[(size_t)i * PAGE]);
			atomic_store(&flush2_stale, true);
			return false;
		}
	}
	atomic_fetch_add_explicit(&flush2[t].loops, 1, memory_order_relaxed);
	return true;
}

static void *flush2_thread(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;

	pin(t);
	while (!atomic_load_explicit(&flush2_stop, memory_order_relaxed) &&
	       flush2_loop(t))
		;
	return NULL;
}

static uint64_t flush2_total(unsigned threads)
{
	uint64_t sum = 0;

	for (unsigned t = 0; t < threads; t++)
		sum += atomic_load_explicit(&flush2[t].loops,
					    memory_order_relaxed);
	return sum;
}

/* One row with `threads` threads: samples of loops per second. */
static unsigned flush2_row(unsigned threads)
{
	uint64_t window = BUDGET_NS * scale / 100 / MIN_SAMPLES, last, total;
	unsigned n = 0;

	atomic_store(&flush2_stop, false);
	for (unsigned t = 0; t < threads; t++) {
		flush2[t].pages =
			mmap(NULL, FLUSH2_PAGES * PAGE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (flush2[t].pages == MAP_FAILED)
			die("lbench: mmap");
		atomic_store(&flush2[t].loops, 0);
	}
	for (unsigned t = 1; t < threads; t++)
		pthread_create(&flush2[t].thread, NULL, flush2_thread,
			       (void *)(uintptr_t)t);
	for (unsigned i = 0; i < WARMUP && flush2_loop(0); i++)
		;
	last = now_ns();
	total = flush2_total(threads);
	while (n < MIN_SAMPLES && flush2_loop(0)) {
		uint64_t now = now_ns(), sum;

		if (now - last < window)
			continue;
		sum = flush2_total(threads);
		samples[n++] = (sum - total) * 1000000000ull / (now - last);
		last = now;
		total = sum;
	}
	atomic_store(&flush2_stop, true);
	for (unsigned t = 1; t < threads; t++)
		pthread_join(flush2[t].thread, NULL);
	for (unsigned t = 0; t < threads; t++)
		munmap(flush2[t].pages, FLUSH2_PAGES * PAGE);
	return n;
}

/* Prints a row counted in loops per second (no clock, no ns). */
static void unit_row(const char *name, const char *params, const char *unit,
		     unsigned n)
{
	qsort(samples, n, sizeof(samples[0]), compare);
	printf("@ %-16s %-30s %-8s %9llu %9llu %9llu %9llu %6u %9s %7s -\n",
	       name, params, unit, (unsigned long long)rank(n, 50),
	       (unsigned long long)rank(n, 10), (unsigned long long)rank(n, 90),
	       (unsigned long long)samples[0], n, "-", "-");
	fflush(stdout);
	results_total++;
}

static void tlb_flush2(void)
{
	unsigned most = cpus < FLUSH2_THREADS_MAX ? cpus : FLUSH2_THREADS_MAX;
	char params[32];

	begin("tlb_flush2", "threads on CPUs 0..N-1 writing 4 pages each, "
			    "dropping them with madvise(MADV_DONTNEED) and "
			    "checking they read zero: loops per second");
	pin(0);
	for (unsigned threads = 1; threads <= most; threads++) {
		unsigned n = flush2_row(threads);

		snprintf(params, sizeof(params), "threads=%u", threads);
		if (atomic_load(&flush2_stale))
			na("tlb_flush2", params,
			   "FAILED: stale read, a TLB coherence bug");
		else if (!n)
			na("tlb_flush2", params, "no samples were taken");
		else
			unit_row("tlb_flush2", params, "loops/s", n);
		atomic_store(&flush2_stale, false);
	}
	end("tlb_flush2");
}

/* --- The run ------------------------------------------------------------------ */

static void options(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "icount") == 0)
			icount = true;
		else if (strncmp(argv[i], "scale=", 6) == 0)
			scale = (unsigned)atoi(argv[i] + 6);
	}
	if (scale < 1 || scale > 1000)
		scale = 100;
}

int main(int argc, char **argv)
{
	cpu_set_t online;
	uint64_t started = now_ns();

	options(argc, argv);
	if (sched_getaffinity(0, sizeof(online), &online) == 0)
		cpus = (unsigned)CPU_COUNT(&online);
	setvbuf(stdout, NULL, _IOLBF, 0);
	pin(0);
	calibrate();
	printf("bench: note emulator costs (QEMU TCG): not hardware\n");
	printf("bench: env platform=%s cpus=%u tsc_hz=%llu tsc_source=linux "
	       "clock_overhead=%llu scale=%u selected=syscall,thread_switch,"
	       "mm_switch,ipc,flush_local,shootdown,batch_unmap,tlb_flush2 "
	       "brand=Linux\n",
	       icount ? "tcg+icount" : "tcg", cpus, (unsigned long long)tsc_hz,
	       (unsigned long long)clock_overhead, scale);

	begin("syscall", "a null system call, getppid()");
	row("syscall", "call=getppid", measure(op_getppid, NULL), 1);
	end("syscall");
	thread_switch();
	mm_switch();
	ipc();
	flush_local();
	shootdown();
	batch_unmap();
	tlb_flush2();

	printf("bench: end benchmarks=%u results=%u seconds=%llu\n",
	       benchmarks_total, results_total,
	       (unsigned long long)(now_ns() - started) / 1000000000ull);
	fflush(stdout);
	sync();
	reboot(RB_POWER_OFF);
	/* No ACPI power-off: a reboot ends QEMU under -no-reboot. */
	reboot(RB_AUTOBOOT);
	return 0;
}
