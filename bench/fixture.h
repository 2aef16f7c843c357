/* SPDX-License-Identifier: MIT */
/*
 * What benchmarks set up around a measurement: quiet CPUs, address spaces
 * with pages to touch, and kernel threads pinned to a CPU, optionally
 * running on an address space of their own.
 */
#ifndef BENCH_FIXTURE_H
#define BENCH_FIXTURE_H

#include "lib/types.h"
#include "arch/layout.h"
#include "mm/tlb.h"
#include "sched/wait.h"
#include "sync/cpumask.h"

struct mm;

/*
 * Stops the scheduler tick on the CPUs in mask (this one too, if in it),
 * so that nothing preempts the threads measured there: they switch only
 * when they choose to. bench_ticks_restart starts it again; nothing may
 * sleep on those CPUs in between.
 */
void bench_ticks_stop(const struct cpumask *mask);
void bench_ticks_restart(const struct cpumask *mask);

/* The mask of one CPU. */
struct cpumask bench_cpu_mask(unsigned cpu);

/* --- Address spaces ------------------------------------------------------- */

/*
 * The pages most benchmark address spaces map: one page table's worth (the
 * PCID test's, 4.14).
 */
#define BENCH_SPACE_PAGES_MAX 512

/*
 * The most any maps: tlb_reach's largest working set, 16 MiB, twice the
 * second-level TLB of the CPUs docs/bench.md names and small enough for a
 * 128 MiB guest.
 */
#define BENCH_SPACE_PAGES_LIMIT 4096

/* An address space with pages mapped from base, readable and writable. */
struct bench_space {
	struct mm *mm;
	uint64_t base;
	unsigned pages;
};

/* Returns false when out of memory (nothing is left allocated then). */
bool bench_space_create(struct bench_space *s, unsigned pages);
void bench_space_destroy(struct bench_space *s);

/* The address of page i of s. */
static inline uint64_t bench_page(const struct bench_space *s, unsigned i)
{
	return s->base + ((uint64_t)i << PAGE_SHIFT);
}

/*
 * Reads one word of each of pages [first, first + n) of s, which must be
 * the address space loaded on this CPU: one TLB entry each.
 */
void bench_touch(const struct bench_space *s, unsigned first, unsigned n);

/* --- Kernel threads ---------------------------------------------------------- */

/*
 * Starts fn(arg) in a kernel thread pinned to cpu. With mm, the thread
 * runs on that address space (the scheduler loads it as for a user
 * thread); without, it is a kernel thread like the idle threads. Returns
 * false when out of memory.
 */
bool bench_thread_start(void (*fn)(void *), void *arg, unsigned cpu,
			struct mm *mm);

/* Waits until every thread bench_thread_start started has returned. */
void bench_threads_wait(void);

/*
 * Rows of several CPUs measure on CPU 0 (the boot CPU, whose timings the
 * single-CPU rows give) against bench_other_cpu(), on another core
 * (bench/cpus.h).
 */
#define MEASURING_CPU 0

/*
 * Runs rows(space) in a thread on MEASURING_CPU, in a new space of pages
 * pages, waits for it and destroys the space. Out of memory, the row
 * params (printf-style, as bench_na's) is printed n/a.
 */
void bench_on_space(void (*rows)(void *), unsigned pages, const char *params,
		    ...) __printf(3, 4);

/*
 * Waits until cpu has mm loaded (read from tlb_cpus[], which the TLB code
 * publishes for other CPUs): a thread started there may not have run yet,
 * and under QEMU's -icount the CPUs run in turns, so one may finish its
 * whole measurement before another starts.
 */
void bench_wait_loaded(unsigned cpu, const struct mm *mm);

/*
 * Ping-pong: two threads on cpu hand it to each other with yield() until
 * side 0 has its samples (one per round trip: two switches) for the row the
 * caller began. Side i runs on mm[i] (NULL: a kernel thread, as idle is)
 * and, when space[i] is set, reads `touch` of its pages after each switch.
 * The tick is stopped on cpu meanwhile. False when out of memory.
 */
struct bench_pingpong {
	struct mm *mm[2];
	const struct bench_space *space[2];
	unsigned touch;
};

bool bench_pingpong(unsigned cpu, const struct bench_pingpong *p);

/* --- TLB policies ------------------------------------------------------------ */

/*
 * Installs p as the TLB policy for the rows that follow (only benchmarks
 * run, so no flush or switch is in flight), settled against the CPU as at
 * boot (tlb_policy_settle: invpcid asked on stays on only where the CPU and
 * pcid allow it; pcid=on must be possible, bench_pcid_possible). First every CPU is brought to
 * a known state: the kernel mm loaded, not lazy, no lazy reference held;
 * so no CPU is left in a state the new policy does not expect (lazy
 * without the reference lazy_mm=refcount counts on). A change of pcid also
 * sets CR4.PCIDE to match and flushes every CPU's TLB, every PCID. Every
 * address space a benchmark made must be gone by then: an ASID slot still
 * naming one could otherwise keep entries from the other mode.
 * The harness puts the boot's policy back after each benchmark.
 */
void bench_policy_set(const struct tlb_policy *p);

/* Whether pcid=on can be set here (tlb_policy_settle keeps it on). */
bool bench_pcid_possible(void);

/* Whether a benchmark changed the policy since the last call. */
bool bench_policy_changed(void);

#endif
