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
 *
 * User mappings: every address space keeps the mask of CPUs that have it
 * loaded (switch_mm sets a CPU's bit before loading CR3 and clears it after
 * loading another). A flush goes to the CPUs in the mask; a CPU not in it
 * either never loaded the address space or reloaded CR3 since, which (no
 * PCID yet) dropped every non-global translation.
 *
 * The race in choosing targets: a CPU may set its bit and load CR3 just as
 * we read the mask. Our page-table store must be visible before we read the
 * mask, or that CPU could load the old entry and not be sent the flush: a
 * full fence orders the two (x86 lets a load pass an earlier store). It
 * pairs with the locked OR that sets the bit in switch_mm, which is a full
 * barrier before the CR3 load.
 */
#include "mm/tlb.h"
#include "mm/kmap.h"
#include "mm/layout.h"
#include "kernel/x86.h"
#include "smp/call.h"
#include "smp/percpu.h"
#include "mm/mm.h"

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

struct user_range {
	const struct mm *mm;
	uint64_t start, end;
};

static void flush_user_range_here(void *arg)
{
	const struct user_range *r = arg;

	/* Switched away meanwhile: the CR3 load already flushed it. */
	if (this_cpu()->loaded_mm != r->mm)
		return;
	if (((r->end - r->start) >> PAGE_SHIFT) > TLB_FLUSH_CEILING_DEFAULT) {
		write_cr3(read_cr3()); /* drops every non-global entry */
		return;
	}
	for (uint64_t va = r->start; va < r->end; va += PAGE_SIZE)
		invlpg(va);
}

void flush_tlb_mm_range(struct mm *mm, uint64_t start, uint64_t end,
			bool freed_tables)
{
	struct user_range r = {mm, ALIGN_DOWN(start, PAGE_SIZE),
			       ALIGN_UP(end, PAGE_SIZE)};
	struct cpumask targets;

	/*
	 * INVLPG also drops the paging-structure caches for the address, and
	 * a CR3 load drops them all, so freed tables need nothing more here.
	 */
	(void)freed_tables;
	if (r.start >= r.end)
		return;
	/* Page-table stores before the mask load: see the top of the file. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	cpumask_copy(&targets, &mm->cpu_mask);
	smp_call_function_many(&targets, flush_user_range_here, &r,
			       SMP_CALL_WAIT);
}

void switch_mm(struct mm *next)
{
	struct percpu *p = this_cpu();
	struct mm *prev = p->loaded_mm;

	if (prev == next)
		return;
	if (next) {
		cpumask_set_atomic(&next->cpu_mask, p->index);
		write_cr3(next->root);
	} else {
		write_cr3(kernel_root);
	}
	if (prev)
		cpumask_clear_atomic(&prev->cpu_mask, p->index);
	p->loaded_mm = next;
}

void tlb_load_kernel_root(uint64_t root)
{
	write_cr3(root);
}
