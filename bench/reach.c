// SPDX-License-Identifier: MIT
/*
 * TLB reach: what reading a page costs as the working set outgrows the TLB.
 *
 * One row per working set of N pages, N doubling from 1 to
 * BENCH_SPACE_PAGES_LIMIT (16 MiB): the per-page cost of reading one word
 * of each page, with the TLB as warm as it can be (every sample reads the N
 * pages once untimed, then times a second pass). While the N translations
 * fit in the TLB the cost is that of a load that hits; past the L1 dTLB (64
 * entries on recent Intel and AMD cores) each read also looks up the
 * second-level TLB, past that (1536 to 2048 entries) it walks the page
 * tables. Under TCG the knee is QEMU's software TLB instead, which has
 * nothing to do with the CPU's (docs/bench.md).
 *
 * refill (bench/prim.c) reads word 0 of each page; here page i is read at
 * cache line i % 64, so that the N lines fall into different cache sets:
 * with word 0 every line competes for one L1 set, and the data cache would
 * miss from 9 pages on, long before the TLB does.
 */
#include "bench/bench.h"
#include "bench/fixture.h"
#include "cpu/cpu.h"
#include "arch/x86.h"

#define CACHE_LINE     64
#define LINES_PER_PAGE (PAGE_SIZE / CACHE_LINE)

/*
 * Reads one word of each of pages [0, n) of s, the address space loaded on
 * this CPU: one TLB entry each, one cache line each in a different set.
 */
static void reach_pass(const struct bench_space *s, unsigned n)
{
	/* The injection kernel notes the pass for the grade (bench/probe.h). */
	if (INJECT_BUILT)
		bench_probe_work(n);
	/* The pages are user pages: with SMAP the kernel must say it means
	 * to touch them. */
	if (boot_cpu.smap)
		stac();
	for (unsigned i = 0; i < n; i++)
		(void)*(volatile const uint64_t *)(bench_page(s, i) +
						   (i % LINES_PER_PAGE) *
							   CACHE_LINE);
	if (boot_cpu.smap)
		clac();
}

static void reach_rows(void *arg)
{
	/* LAB(L1) begin: a row "pages=N,tlb=warm" for N = 1, 2, 4, ... up to
	 * the space's pages: the cost per page of reach_pass over N pages, the
	 * TLB warmed by an untimed pass first; keeps: reach_pass */
	const struct bench_space *s = arg;

	for (unsigned n = 1; n <= s->pages; n *= 2) {
		bench_begin(n, "pages=%u,tlb=warm", n);
		while (bench_more()) {
			uint64_t flags = irq_save(), start;

			reach_pass(s, n);
			start = bench_clock();
			reach_pass(s, n);
			bench_add(bench_clock() - start);
			irq_restore(flags);
		}
		bench_end();
	}
	/* LAB(L1) end */
}

BENCH(tlb_reach, prim,
      "TLB reach: reading one word of each of N pages (N = 1 doubling to "
      "4096), per page, TLB warm: the knees where the working set outgrows "
      "the L1 dTLB and the STLB (under TCG, QEMU's software TLB instead)")
{
	bench_on_space(reach_rows, BENCH_SPACE_PAGES_LIMIT, "pages=1,tlb=warm");
}
