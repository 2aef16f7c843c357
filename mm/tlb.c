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
 * Only the boot CPU runs page-table-changing code so far, so a local flush
 * is a complete one.
 */
#include "mm/tlb.h"
#include "mm/layout.h"
#include "kernel/x86.h"

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

void flush_tlb_kernel_range(uint64_t start, uint64_t end)
{
	uint64_t pages;

	start = ALIGN_DOWN(start, PAGE_SIZE);
	end = ALIGN_UP(end, PAGE_SIZE);
	pages = (end - start) >> PAGE_SHIFT;
	if (pages > TLB_FLUSH_CEILING_DEFAULT) {
		flush_all_including_global();
		return;
	}
	for (uint64_t va = start; va < end; va += PAGE_SIZE)
		invlpg(va);
}

void tlb_load_kernel_root(uint64_t root)
{
	write_cr3(root);
}
