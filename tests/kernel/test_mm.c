// SPDX-License-Identifier: MIT
/* The frame allocator, page tables and heap, on the running kernel. */
#include "tests/ktest.h"
#include "kernel/errno.h"
#include "kernel/extable.h"
#include "kernel/string.h"
#include "mm/heap.h"
#include "mm/kmap.h"
#include "mm/layout.h"
#include "mm/pagetable.h"
#include "mm/pmm.h"
#include "mm/tlb.h"

#define FRAMES 64

KTEST(MM0001, mm, "frames are aligned, distinct, zeroed, and come back")
{
	static uint64_t frames[FRAMES];
	uint64_t free_before = pmm_free_count();

	for (int i = 0; i < FRAMES; i++) {
		const uint64_t *words;

		frames[i] = pmm_alloc_frame();
		if (!KEXPECT(frames[i], "out of memory at frame %d", i))
			return;
		KEXPECT(IS_ALIGNED(frames[i], PAGE_SIZE), "frame %#llx",
			(unsigned long long)frames[i]);
		KEXPECT(frames[i] >= MiB(1), "frame %#llx below 1 MiB",
			(unsigned long long)frames[i]);
		for (int j = 0; j < i; j++)
			KEXPECT(frames[i] != frames[j], "frame %#llx twice",
				(unsigned long long)frames[i]);
		words = phys_to_virt(frames[i]);
		for (size_t w = 0; w < PAGE_SIZE / 8; w++) {
			if (!KEXPECT(words[w] == 0, "frame %#llx not zeroed",
				     (unsigned long long)frames[i]))
				break;
		}
		memset(phys_to_virt(frames[i]), 0xa5, PAGE_SIZE);
	}
	KEXPECT(pmm_free_count() == free_before - FRAMES, "free count %llu",
		(unsigned long long)pmm_free_count());
	for (int i = 0; i < FRAMES; i++)
		pmm_free_frame(frames[i]);
	KEXPECT(pmm_free_count() == free_before, "free count %llu, was %llu",
		(unsigned long long)pmm_free_count(),
		(unsigned long long)free_before);
}

KTEST(MM0002, mm, "contiguous aligned runs of frames")
{
	uint64_t run = pmm_alloc_frames(16, 16);

	if (!KEXPECT(run, "no 16-frame run"))
		return;
	KEXPECT(IS_ALIGNED(run, 16 * PAGE_SIZE), "run at %#llx",
		(unsigned long long)run);
	pmm_free_frames(run, 16);
}

/* A kernel-half address nothing else uses: the end of the device window. */
#define SCRATCH_VA (IOREMAP_BASE + IOREMAP_SIZE - 64 * PAGE_SIZE)

KTEST(MM0003, mm, "map, translate, protect, unmap; empty tables are freed")
{
	uint64_t free_before = pmm_free_count();
	uint64_t frame = pmm_alloc_frame(), pa = 0, pte = 0, old = 0;
	struct pt_freed freed = {0};
	uint64_t value = 0;
	int err;

	if (!KEXPECT(frame, "no frame"))
		return;
	*(uint64_t *)phys_to_virt(frame) = 0x5ca1ab1e;
	err = pt_map(kernel_root, SCRATCH_VA, frame, PAGE_4K,
		     PTE_WRITE | PTE_NX);
	KEXPECT(err == 0, "pt_map returned %d", err);
	KEXPECT(pt_map(kernel_root, SCRATCH_VA, frame, PAGE_4K, 0) == -EEXIST,
		"mapping twice must fail");
	KEXPECT(pt_translate(kernel_root, SCRATCH_VA + 8, &pa, &pte) == 0 &&
			pa == frame + 8,
		"translated to %#llx", (unsigned long long)pa);
	KEXPECT(probe_read_u64((void *)SCRATCH_VA, &value) == 0 &&
			value == 0x5ca1ab1e,
		"read %#llx through the new mapping",
		(unsigned long long)value);

	/* Read-only: the write faults once the stale TLB entry is gone. */
	pt_protect(kernel_root, SCRATCH_VA, PTE_NX);
	flush_tlb_kernel_range(SCRATCH_VA, SCRATCH_VA + PAGE_SIZE);
	KEXPECT(probe_write_u64((void *)SCRATCH_VA, 1) == -EFAULT,
		"write to a read-only page succeeded");

	err = pt_unmap(kernel_root, SCRATCH_VA, &old, &freed);
	KEXPECT(err == 0 && (old & PTE_ADDR_MASK) == frame,
		"pt_unmap returned %d, old %#llx", err,
		(unsigned long long)old);
	KEXPECT(freed.count == 2, "freed %zu tables, want PT and PD",
		freed.count);
	flush_tlb_kernel_range(SCRATCH_VA, SCRATCH_VA + PAGE_SIZE);
	pt_freed_release(&freed);
	KEXPECT(probe_read_u64((void *)SCRATCH_VA, &value) == -EFAULT,
		"unmapped page still readable");
	KEXPECT(pt_unmap(kernel_root, SCRATCH_VA, &old, &freed) == -ENOENT,
		"unmapping twice must fail");
	pmm_free_frame(frame);
	KEXPECT(pmm_free_count() == free_before, "leaked %lld frames",
		(long long)(free_before - pmm_free_count()));
}

KTEST(MM0004, mm, "kmalloc: aligned, disjoint, reusable; large sizes too")
{
	static const size_t sizes[] = {1,    15,   16,	 17,   100,
				       1000, 2032, 2033, 5000, 70000};
	void *p[ARRAY_SIZE(sizes)];
	struct heap_stats before, during, after;

	heap_stats(&before);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		p[i] = kmalloc(sizes[i]);
		if (!KEXPECT(p[i], "kmalloc(%zu) failed", sizes[i]))
			return;
		KEXPECT(IS_ALIGNED((uint64_t)p[i], 16), "%p", p[i]);
		memset(p[i], (int)i, sizes[i]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		const uint8_t *b = p[i];

		KEXPECT(b[0] == i && b[sizes[i] - 1] == i,
			"allocation %zu was overwritten", i);
	}
	heap_stats(&during);
	KEXPECT(during.live_allocations ==
			before.live_allocations + ARRAY_SIZE(sizes),
		"live %llu", (unsigned long long)during.live_allocations);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++)
		kfree(p[i]);
	heap_stats(&after);
	KEXPECT(after.live_allocations == before.live_allocations,
		"live %llu, was %llu",
		(unsigned long long)after.live_allocations,
		(unsigned long long)before.live_allocations);
	KEXPECT(kmalloc(0) == NULL, "kmalloc(0) must fail");
}

KTEST(MM0005, mm, "RAM above 4 GiB is direct-mapped and usable")
{
	size_t n;
	const struct phys_range *r = pmm_usable_ranges(&n);
	uint64_t high = r[n - 1].end - PAGE_SIZE, value;

	if (high < GiB(4)) {
		ktest_skip(t, "no RAM above 4 GiB (boot with -m 5G)");
		return;
	}
	KEXPECT(probe_read_u64(phys_to_virt(high), &value) == 0 &&
			probe_write_u64(phys_to_virt(high), value) == 0,
		"frame %#llx not accessible", (unsigned long long)high);
}
