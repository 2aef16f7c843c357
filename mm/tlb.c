// SPDX-License-Identifier: MIT
/*
 * Kernel-mapping flushes.
 *
 * Kernel mappings are global (PTE_GLOBAL with CR4.PGE), so a CR3 write does
 * not remove them: they go either one page at a time with INVLPG, which
 * removes global entries too (SDM Vol. 3A, 4.10.4.1), or all at once by
 * toggling CR4.PGE, which flushes every entry, global or not.
 *
 * Up to TLB_FLUSH_CEILING_DEFAULT pages are flushed one by one: each INVLPG
 * costs on the order of 100 ns on current CPUs, so 33 of them stay within
 * a few microseconds, below the cost of refilling the whole TLB afterwards
 * (the 2015 measurements behind Linux's tlb_single_page_flush_ceiling).
 *
 * The kernel half is shared by every address space and every CPU may cache
 * it, so a kernel-range flush runs on every online CPU: the other CPUs
 * through smp_call_function_many, which waits until each has flushed. The
 * caller frees the pages or page tables only after this returns.
 */
#include "mm/tlb.h"
#include "mm/layout.h"
#include "kernel/x86.h"
#include "smp/call.h"
#include "smp/percpu.h"

struct kernel_range {
	uint64_t start, end; /* page-aligned */
};

static void flush_all_including_global(void)
{
	uint64_t cr4 = read_cr4();

	if (cr4 & CR4_PGE) {
		write_cr4(cr4 & ~CR4_PGE);
		write_cr4(cr4);
	} else {
		write_cr3(read_cr3());
	}
}

static void flush_kernel_range_here(void *arg)
{
	const struct kernel_range *r = arg;

	if (((r->end - r->start) >> PAGE_SHIFT) > TLB_FLUSH_CEILING_DEFAULT) {
		flush_all_including_global();
		return;
	}
	for (uint64_t va = r->start; va < r->end; va += PAGE_SIZE)
		invlpg(va);
}

void flush_tlb_kernel_range(uint64_t start, uint64_t end)
{
	struct kernel_range r = {ALIGN_DOWN(start, PAGE_SIZE),
				 ALIGN_UP(end, PAGE_SIZE)};

	/* Every online CPU, this one included (it runs it directly). */
	smp_call_function_many(&cpu_online_mask, flush_kernel_range_here, &r,
			       SMP_CALL_WAIT);
}

void tlb_load_kernel_root(uint64_t root)
{
	write_cr3(root);
}
