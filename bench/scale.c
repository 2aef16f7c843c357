// SPDX-License-Identifier: MIT
/*
 * Scaling: context switches per second on every CPU at once, in the shape
 * of will-it-scale's context_switch1 with threads of one process. On each
 * CPU a thread of one shared address space and a kernel thread (standing
 * in for idle) hand the CPU to each other, so every other switch enters
 * lazy TLB mode on the shared address space and the next leaves it.
 *
 * Under lazy_mm=refcount each lazy entry takes a reference on the shared
 * address space and each exit drops it: two atomic operations on one
 * counter that every CPU writes. lazy_mm=shootdown takes none and instead
 * interrupts the lazy CPUs once, when the address space dies (the 2023
 * change, CONFIG_MMU_LAZY_TLB_SHOOTDOWN). The rows run under lazy=skip, whatever the boot chose, so that
 * the CPUs do go lazy.
 */
#include "bench/bench.h"
#include "bench/fixture.h"
#include "mm/tlb.h"
#include "sched/sched.h"
#include "cpu/percpu.h"

/* Long enough for hundreds of switches per CPU even under Bochs. */
#define WINDOW_NS (5 * NSEC_PER_MSEC)

/* Switches done on each CPU: one counter per cache line, or counting
 * would itself be the shared write that stops the scaling. */
static struct {
	uint64_t n;
} __aligned(64) switches[MAX_CPUS];

static bool stop;

/* Only the threads of cpu count there, one at a time: no atomic needed,
 * but the store must be one the measuring CPU can read whole. */
static void count_switch(unsigned cpu)
{
	__atomic_store_n(&switches[cpu].n, switches[cpu].n + 1,
			 __ATOMIC_RELAXED);
}

static uint64_t total_switches(void)
{
	uint64_t sum = 0;
	unsigned cpu;

	for_each_cpu (cpu, &cpu_online_mask)
		sum += __atomic_load_n(&switches[cpu].n, __ATOMIC_RELAXED);
	return sum;
}

/* Both threads of a CPU, except the one that measures. */
static void bounce(void *arg)
{
	unsigned cpu = this_cpu_index();

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		yield();
		count_switch(cpu);
	}
}

/*
 * The kernel thread of CPU 0: bounces like the others, and at the end of
 * every window turns the switches of all CPUs into one sample.
 */
static void measure(void *arg)
{
	uint64_t window = ns_to_tsc(WINDOW_NS);
	uint64_t last = bench_clock(), last_count = total_switches();

	(void)arg;
	while (bench_more()) {
		uint64_t now, count;

		do {
			yield();
			count_switch(MEASURING_CPU);
			now = bench_clock();
		} while (now - last < window);
		count = total_switches();
		bench_add((count - last_count) * tsc_hz() / (now - last));
		last = now;
		last_count = count;
	}
	__atomic_store_n(&stop, true, __ATOMIC_RELAXED);
}

static void scale_row(enum tlb_lazy_mm lazy_mm)
{
	const char *name =
		lazy_mm == TLB_LAZY_MM_REFCOUNT ? "refcount" : "shootdown";
	struct tlb_policy p = tlb_policy;
	struct bench_space space;
	bool started = true;
	unsigned cpu;

	p.lazy = TLB_LAZY_SKIP;
	p.lazy_mm = lazy_mm;
	bench_policy_set(&p);
	if (!bench_space_create(&space, 0)) {
		bench_na("out of memory", "lazy_mm=%s", name);
		return;
	}
	stop = false;
	for_each_cpu (cpu, &cpu_online_mask)
		switches[cpu].n = 0;
	bench_ticks_stop(&cpu_online_mask);
	bench_row_cpus(&cpu_online_mask);
	bench_begin_unit("switch/s", "lazy_mm=%s,cpus=%u", name, cpu_count);
	for_each_cpu (cpu, &cpu_online_mask) {
		started = started &&
			  bench_thread_start(bounce, NULL, cpu, space.mm) &&
			  bench_thread_start(cpu == MEASURING_CPU ? measure
								  : bounce,
					     NULL, cpu, NULL);
	}
	if (!started)
		stop = true;
	bench_threads_wait();
	bench_end();
	bench_ticks_restart(&cpu_online_mask);
	bench_space_destroy(&space);
}

BENCH(ctxsw_scale, scale,
      "switches per second on all CPUs, each between a thread of one "
      "shared address space and a kernel thread, under lazy_mm=refcount "
      "and lazy_mm=shootdown (context_switch1, 2023)")
{
	bench_show_wasted_ipis();
	scale_row(TLB_LAZY_MM_REFCOUNT);
	scale_row(TLB_LAZY_MM_SHOOTDOWN);
}
