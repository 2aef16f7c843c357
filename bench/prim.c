// SPDX-License-Identifier: MIT
/*
 * Primitives: the instructions and the cross-CPU call every TLB policy is
 * built from, each timed alone with interrupts off.
 *
 * These execute CR3 writes, INVLPG and INVPCID directly, outside mm/tlb.c,
 * on purpose: they measure the instructions. Each leaves the protocol's
 * state as it was: CR3 is written back with the root and PCID it already
 * holds, and the invalidations only drop entries, which is always safe.
 * The ones that need pages of their own run in a kernel thread on an
 * address space with BENCH_SPACE_PAGES_MAX pages (bench/fixture.h).
 */
#include "bench/bench.h"
#include "bench/fixture.h"
#include "cpu/cpu.h"
#include "arch/x86.h"
#include "mm/tlb_hw.h"
#include "smp/call.h"
#include "cpu/percpu.h"

static const unsigned refill_pages[] = {1, 8, 64, BENCH_SPACE_PAGES_MAX};

/* Runs fn on MEASURING_CPU in a thread on a fresh address space. */
static uint16_t current_pcid(void)
{
	return read_cr4() & CR4_PCIDE ? (uint16_t)(read_cr3() & CR3_PCID_MASK)
				      : 0;
}

/* --- CR3 ------------------------------------------------------------------ */

static void cr3_row(uint64_t extra_bits)
{
	bench_begin(1, "noflush=%d", extra_bits ? 1 : 0);
	while (bench_more()) {
		uint64_t flags = irq_save(), cr3 = read_cr3() | extra_bits;
		uint64_t start = bench_clock();

		write_cr3(cr3);
		bench_add(bench_clock() - start);
		irq_restore(flags);
	}
	bench_end();
}

BENCH(cr3, prim,
      "CR3 write of the loaded tables: flushing the PCID's entries, and "
      "with the no-flush bit (PCID, Linux 4.14)")
{
	cr3_row(0);
	if (read_cr4() & CR4_PCIDE)
		cr3_row(CR3_NOFLUSH);
	else
		bench_na("no PCID", "noflush=1");
}

/* --- INVLPG ---------------------------------------------------------------- */

static void invlpg_rows(void *arg)
{
	const struct bench_space *s = arg;
	uint64_t va = bench_page(s, 0);

	bench_begin(1, "entry=present");
	while (bench_more()) {
		uint64_t flags = irq_save(), start;

		bench_touch(s, 0, 1);
		start = bench_clock();
		invlpg(va);
		bench_add(bench_clock() - start);
		irq_restore(flags);
	}
	bench_end();
	bench_begin(1, "entry=absent");
	while (bench_more()) {
		uint64_t flags = irq_save(), start;

		invlpg(va);
		start = bench_clock();
		invlpg(va);
		bench_add(bench_clock() - start);
		irq_restore(flags);
	}
	bench_end();
}

BENCH(invlpg, prim,
      "INVLPG of one 4 KiB user page, its entry in the TLB or not")
{
	bench_on_space(invlpg_rows, BENCH_SPACE_PAGES_MAX, "entry=present");
}

/* --- INVPCID --------------------------------------------------------------- */

static const struct {
	unsigned type;
	const char *name;
} invpcid_types[] = {
	{INVPCID_ADDRESS, "address"},
	{INVPCID_CONTEXT, "context"},
	{INVPCID_ALL_GLOBAL, "all_global"},
	{INVPCID_ALL_NON_GLOBAL, "all_nonglobal"},
};

static void invpcid_rows(void *arg)
{
	const struct bench_space *s = arg;
	uint64_t va = bench_page(s, 0);

	for (size_t i = 0; i < ARRAY_SIZE(invpcid_types); i++) {
		bench_begin(1, "type=%s", invpcid_types[i].name);
		while (bench_more()) {
			uint64_t flags = irq_save(), start;
			uint16_t pcid = current_pcid();

			bench_touch(s, 0, 1);
			start = bench_clock();
			invpcid(invpcid_types[i].type, pcid, va);
			bench_add(bench_clock() - start);
			irq_restore(flags);
		}
		bench_end();
	}
}

BENCH(invpcid, prim,
      "INVPCID, each type: one address, one PCID, everything with and "
      "without global entries")
{
	if (!boot_cpu.invpcid) {
		for (size_t i = 0; i < ARRAY_SIZE(invpcid_types); i++)
			bench_na("no INVPCID", "type=%s",
				 invpcid_types[i].name);
		return;
	}
	bench_on_space(invpcid_rows, BENCH_SPACE_PAGES_MAX, "type=address");
}

/* --- Full flushes ---------------------------------------------------------- */

static void flush_full_rows(void *arg)
{
	const struct bench_space *s = arg;

	/* The working set is in the TLB before each flush. */
	bench_begin(1, "what=nonglobal,how=cr3");
	while (bench_more()) {
		uint64_t flags = irq_save(), cr3 = read_cr3(), start;

		bench_touch(s, 0, s->pages);
		start = bench_clock();
		write_cr3(cr3);
		bench_add(bench_clock() - start);
		irq_restore(flags);
	}
	bench_end();
	if (!boot_cpu.pge) {
		bench_na("no global pages", "what=all,how=cr4_pge");
		return;
	}
	bench_begin(1, "what=all,how=cr4_pge");
	while (bench_more()) {
		uint64_t flags = irq_save(), cr4 = read_cr4(), start;

		bench_touch(s, 0, s->pages);
		start = bench_clock();
		write_cr4(cr4 & ~CR4_PGE);
		write_cr4(cr4);
		bench_add(bench_clock() - start);
		irq_restore(flags);
	}
	bench_end();
}

BENCH(flush_full, prim,
      "full flush with 512 user pages in the TLB: the non-global entries "
      "(CR3 reload), or everything (CR4.PGE toggled)")
{
	bench_on_space(flush_full_rows, BENCH_SPACE_PAGES_MAX,
		       "what=nonglobal,how=cr3");
}

/* --- Refill ---------------------------------------------------------------- */

static void refill_rows(void *arg)
{
	const struct bench_space *s = arg;

	for (size_t i = 0; i < ARRAY_SIZE(refill_pages); i++) {
		unsigned n = refill_pages[i];

		bench_begin(n, "pages=%u,tlb=cold", n);
		while (bench_more()) {
			uint64_t flags = irq_save(), start;

			write_cr3(read_cr3());
			start = bench_clock();
			bench_touch(s, 0, n);
			bench_add(bench_clock() - start);
			irq_restore(flags);
		}
		bench_end();
	}
	bench_begin(s->pages, "pages=%u,tlb=warm", s->pages);
	while (bench_more()) {
		uint64_t flags = irq_save(), start;

		bench_touch(s, 0, s->pages);
		start = bench_clock();
		bench_touch(s, 0, s->pages);
		bench_add(bench_clock() - start);
		irq_restore(flags);
	}
	bench_end();
}

BENCH(refill, prim,
      "TLB refill after a flush: reading one word of each of N pages, per "
      "page, against the same reads with the TLB warm")
{
	bench_on_space(refill_rows, BENCH_SPACE_PAGES_MAX, "pages=1,tlb=cold");
}

/* --- IPI round trip ---------------------------------------------------------- */

static void nothing(void *arg)
{
	(void)arg;
}

static bool spin_stop;

/* Keeps its CPU out of HLT, interrupts on, so IPIs find it awake. */
static void spin(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&spin_stop, __ATOMIC_RELAXED))
		cpu_relax();
}

static void ipi_row(unsigned cpu, bool busy)
{
	struct cpumask target = bench_cpu_mask(cpu);

	bench_row_cpus(&target);
	if (busy) {
		spin_stop = false;
		if (!bench_thread_start(spin, NULL, cpu, NULL)) {
			bench_na("out of memory", "cpu=%u,target=busy", cpu);
			return;
		}
	}
	bench_begin(1, "cpu=%u,target=%s", cpu, busy ? "busy" : "idle");
	while (bench_more()) {
		uint64_t flags = irq_save(), start = bench_clock();

		smp_call_function_single(cpu, nothing, NULL, SMP_CALL_WAIT);
		bench_add(bench_clock() - start);
		irq_restore(flags);
	}
	bench_end();
	if (busy) {
		__atomic_store_n(&spin_stop, true, __ATOMIC_RELAXED);
		bench_threads_wait();
	}
}

BENCH(ipi, prim,
      "cross-CPU call round trip (IPI, an empty function, the answer) to "
      "each CPU, halted or busy: the floor under every shootdown")
{
	if (cpu_count < 2) {
		bench_na("one CPU", "cpu=1,target=idle");
		return;
	}
	for (unsigned cpu = 1; cpu < cpu_count; cpu++) {
		ipi_row(cpu, false);
		ipi_row(cpu, true);
	}
}
