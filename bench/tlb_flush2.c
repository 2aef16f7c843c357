// SPDX-License-Identifier: MIT
/*
 * tlb_flush2: will-it-scale's test of that name, with threads. Threads of
 * one user task, one per CPU on CPUs 0 .. n-1, each map a few pages, write
 * them and unmap them, in a loop: every unmap in an address space that
 * other CPUs run is a shootdown to them. A row is the loops per second of
 * all threads together, n = 1 .. the CPUs there are, once per
 * invlpgb= setting (INVLPGB broadcasts the invalidation instead of sending
 * IPIs: docs/bench.md has what Linux measured with it).
 *
 * The loop checks itself: a page mapped afresh must read zero, on the CPU
 * that mapped it and on a neighbour's CPU that had read the old page
 * (user/bench.c says how).
 * A non-zero read is a stale translation, a TLB coherence bug: the row
 * says FAILED, the address, value and CPU are printed, and the run fails.
 */
#include "bench/bench.h"
#include "bench/fixture.h"
#include "bench/user_collect.h"
#include "boot/boot_modules.h"
#include "console/kprintf.h"
#include "cpu/cpu.h"
#include "mm/tlb.h"
#include "proc/handle.h"
#include "proc/task.h"
#include "uapi/bench.h"

#define USER_PROGRAM "bench"
/*
 * Under icount QEMU runs the CPUs in turn, and a thread spinning in user
 * mode (a witness waiting for its neighbour, a flusher waiting for an
 * acknowledgement) keeps the turn: the run never ends. One thread still
 * runs.
 */
#define ICOUNT_STALLS "icount with several CPUs (spinners stall)"

/* The results endpoint lives for good: made once, used by every row. */
static struct endpoint *results_endpoint;

/* Why a row under invlpgb=on cannot run here, or NULL when it can. */
static const char *invlpgb_missing(void)
{
	struct tlb_policy asked = tlb_policy;

	asked.invlpgb = true;
	if (tlb_policy_settle(&asked, &boot_cpu).invlpgb)
		return NULL;
	if (!boot_cpu.invlpgb)
		return "no INVLPGB";
	return "no PCID (INVLPGB needs it)";
}

static void report_stale(const struct ipc_message *done)
{
	kprintf("bench: tlb_flush2 FAILED: cpu %llu read %#llx at %#llx in a "
		"page mapped afresh, which must read zero: a stale TLB entry "
		"(a TLB coherence bug)\n",
		(unsigned long long)done->words[UBENCH_WORD_STALE_CPU],
		(unsigned long long)done->words[UBENCH_WORD_STALE_VALUE],
		(unsigned long long)done->words[UBENCH_WORD_STALE_VA]);
	bench_fail("stale read, a TLB coherence bug");
}

static void flush2_row(unsigned threads, const char *invlpgb)
{
	struct handle_grant grant = {ipc_endpoint_object(results_endpoint),
				     SYS_RIGHT_ENDPOINT_ALL};
	uint64_t arg = UBENCH_ROLE_TLB_FLUSH2 |
		       (uint64_t)MEASURING_CPU << UBENCH_ARG_CPU_SHIFT |
		       (uint64_t)threads << UBENCH_ARG_THREADS_SHIFT;
	struct ipc_message done = {0};
	struct cpumask cpus;
	long status = UBENCH_FAILED_SETUP;
	int task;

	cpumask_clear_all(&cpus);
	for (unsigned cpu = 0; cpu < threads; cpu++)
		cpumask_set(&cpus, cpu);
	bench_ticks_stop(&cpus);
	bench_row_cpus(&cpus);
	bench_begin_external_unit("loops/s", "threads=%u,invlpgb=%s", threads,
				  invlpgb);
	task = task_spawn(USER_PROGRAM, arg, &grant, 1);
	if (task > 0) {
		long reported = bench_user_collect(results_endpoint, &done);

		task_wait(task, &status);
		if (reported)
			status = reported;
	}
	bench_ticks_restart(&cpus);
	if (status == UBENCH_FAILED_STALE) {
		report_stale(&done);
		return;
	}
	if (status)
		kprintf("bench: the user program failed (status %ld, word "
			"%llu)\n",
			status, (unsigned long long)done.words[1]);
	bench_end();
}

static void flush2_rows(bool invlpgb)
{
	const char *setting = invlpgb ? "on" : "off";
	unsigned most = MIN(cpu_count, UBENCH_TLB_FLUSH2_THREADS_MAX);
	const char *missing = invlpgb ? invlpgb_missing() : NULL;
	struct tlb_policy p = tlb_policy;

	/* Only a change settles the CPUs: its threads' stacks, freed, are
	 * kernel flushes that the rows need not include. */
	if (!missing && p.invlpgb != invlpgb) {
		p.invlpgb = invlpgb;
		bench_policy_set(&p);
	}
	for (unsigned threads = 1; threads <= most; threads++) {
		if (missing)
			bench_na(missing, "threads=%u,invlpgb=%s", threads,
				 setting);
		else if (threads > 1 && bench_icount())
			bench_na(ICOUNT_STALLS, "threads=%u,invlpgb=%s",
				 threads, setting);
		else
			flush2_row(threads, setting);
	}
}

BENCH(tlb_flush2, scale,
      "will-it-scale tlb_flush2 with threads: map, write, unmap and check "
      "zero, loops per second on 1..N CPUs, invlpgb=off and on (AMD "
      "broadcast invalidation, Linux 6.15)")
{
	const void *image;
	size_t size;

	bench_show_wasted_ipis();
	if (!boot_module(USER_PROGRAM, &image, &size)) {
		bench_na("the user programs are not boot modules here",
			 "threads=1,invlpgb=off");
		return;
	}
	if (!results_endpoint)
		results_endpoint = ipc_endpoint_create();
	if (!results_endpoint) {
		bench_na("no IPC endpoint left", "threads=1,invlpgb=off");
		return;
	}
	flush2_rows(false);
	flush2_rows(true);
}
