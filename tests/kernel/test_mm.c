// SPDX-License-Identifier: MIT
/* The frame allocator, page tables and heap, on the running kernel. */
#include "tests/ktest.h"
#include "tests/kernel/threads.h"
#include "apic/tsc.h"
#include "cpu/cpu.h"
#include "lib/errno.h"
#include "arch/extable.h"
#include "arch/x86.h"
#include "lib/string.h"
#include "mm/heap.h"
#include "mm/kmap.h"
#include "arch/layout.h"
#include "mm/mm.h"
#include "mm/pagetable.h"
#include "mm/pmm.h"
#include "mm/tlb.h"
#include "sched/thread.h"
#include "smp/call.h"
#include "cpu/percpu.h"

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

/* Kernel mappings are global whenever the CPU has global pages (kmap.h). */
static uint64_t kernel_global(void)
{
	return boot_cpu.pge ? PTE_GLOBAL : 0;
}

KTEST(MM0003, mm, "map, translate, protect, unmap; kernel tables are kept")
{
	uint64_t flags = PTE_WRITE | PTE_NX | kernel_global();
	uint64_t frame = pmm_alloc_frame(), pa = 0, pte = 0, old = 0;
	uint64_t free_before = pmm_free_count(), tables;
	uint64_t value = 0;
	int err;

	if (!KEXPECT(frame, "no frame"))
		return;
	*(uint64_t *)phys_to_virt(frame) = 0x5ca1ab1e;
	err = kmap_map_page(SCRATCH_VA, frame, flags);
	KEXPECT(err == 0, "kmap_map_page returned %d", err);
	/* A PT and a PD the first time (the PDPT is there from boot). */
	tables = free_before - pmm_free_count();
	KEXPECT(tables <= 2, "mapping one page took %llu tables",
		(unsigned long long)tables);
	KEXPECT(kmap_map_page(SCRATCH_VA, frame, flags) == -EEXIST,
		"mapping twice must fail");
	KEXPECT(pt_translate(kernel_root, SCRATCH_VA + 8, &pa, &pte) == 0 &&
			pa == frame + 8,
		"translated to %#llx", (unsigned long long)pa);
	KEXPECT((pte & PTE_GLOBAL) == kernel_global(), "entry %#llx",
		(unsigned long long)pte);
	KEXPECT(probe_read_u64((void *)SCRATCH_VA, &value) == 0 &&
			value == 0x5ca1ab1e,
		"read %#llx through the new mapping",
		(unsigned long long)value);

	/* Read-only: the write faults once the stale TLB entry is gone. */
	pt_protect(kernel_root, SCRATCH_VA, PTE_NX | kernel_global());
	flush_tlb_kernel_range(SCRATCH_VA, SCRATCH_VA + PAGE_SIZE);
	KEXPECT(probe_write_u64((void *)SCRATCH_VA, 1) == -EFAULT,
		"write to a read-only page succeeded");

	err = kmap_unmap_page(SCRATCH_VA, &old);
	KEXPECT(err == 0 && (old & PTE_ADDR_MASK) == frame,
		"kmap_unmap_page returned %d, old %#llx", err,
		(unsigned long long)old);
	flush_tlb_kernel_range(SCRATCH_VA, SCRATCH_VA + PAGE_SIZE);
	KEXPECT(probe_read_u64((void *)SCRATCH_VA, &value) == -EFAULT,
		"unmapped page still readable");
	KEXPECT(kmap_unmap_page(SCRATCH_VA, &old) == -ENOENT,
		"unmapping twice must fail");
	/* The emptied PT and PD stay: mapping again allocates nothing. */
	KEXPECT(pmm_free_count() == free_before - tables,
		"the unmap freed %lld frames: kernel tables are never freed",
		(long long)(pmm_free_count() - (free_before - tables)));
	err = kmap_map_page(SCRATCH_VA, frame, flags);
	KEXPECT(err == 0 && pmm_free_count() == free_before - tables,
		"mapping again returned %d and took %lld tables", err,
		(long long)(free_before - tables - pmm_free_count()));
	if (!kmap_unmap_page(SCRATCH_VA, &old))
		flush_tlb_kernel_range(SCRATCH_VA, SCRATCH_VA + PAGE_SIZE);
	KEXPECT(pmm_free_count() == free_before - tables, "leaked %lld frames",
		(long long)(free_before - tables - pmm_free_count()));
	pmm_free_frame(frame);
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

KTEST(MM0006, mm, "kmap refuses kernel entries it could not flush everywhere")
{
	uint64_t frame = pmm_alloc_frame(), free_before;
	int err;

	if (!KEXPECT(frame, "no frame"))
		return;
	free_before = pmm_free_count();
	/* A user-half address is not kmap's. */
	err = kmap_map_page(PAGE_SIZE, frame,
			    PTE_WRITE | PTE_NX | kernel_global());
	KEXPECT(err == -EINVAL, "mapping user address %#llx returned %d",
		(unsigned long long)PAGE_SIZE, err);
	if (boot_cpu.pge) {
		/* Not global: with PCID, INVLPG under another PCID would
		 * leave it cached under the one it was used in. */
		err = kmap_map_page(SCRATCH_VA, frame, PTE_WRITE | PTE_NX);
		KEXPECT(err == -EINVAL,
			"a non-global kernel mapping returned %d", err);
		KEXPECT(pt_translate(kernel_root, SCRATCH_VA, NULL, NULL) ==
				-ENOENT,
			"the refused mapping is in the tables");
	}
	KEXPECT(pmm_free_count() == free_before, "refusing took %lld frames",
		(long long)(free_before - pmm_free_count()));
	if (!boot_cpu.pge)
		ktest_note("no global pages: kernel mappings are not global, "
			   "and PCID is off, so none is refused for that");
	pmm_free_frame(frame);
}

/* A user address whose PML4 slot nothing else uses (programs load low). */
#define USER_SCRATCH_VA 0x0000300000000000ULL
#define PML4_SHIFT	39

KTEST(MM0007, mm, "a user unmap frees the tables it empties, up to the PDPT")
{
	struct mm *mm = mm_create();
	const uint64_t *root;
	uint64_t free_before;
	int err;

	if (!KEXPECT(mm, "no address space"))
		return;
	root = phys_to_virt(mm->root);
	free_before = pmm_free_count();
	err = mm_map_anon(mm, USER_SCRATCH_VA, PAGE_SIZE,
			  MM_PROT_READ | MM_PROT_WRITE);
	KEXPECT(err == 0, "mm_map_anon returned %d", err);
	KEXPECT(free_before - pmm_free_count() == 4,
		"mapping took %lld frames, want the page, a PT, a PD, a PDPT",
		(long long)(free_before - pmm_free_count()));
	/* Through the batch: the flush (tables freed), then the frees. */
	err = mm_unmap(mm, USER_SCRATCH_VA, PAGE_SIZE);
	KEXPECT(err == 0, "mm_unmap returned %d", err);
	KEXPECT(root[USER_SCRATCH_VA >> PML4_SHIFT] == 0,
		"PML4 entry %#llx left after the unmap emptied its PDPT",
		(unsigned long long)root[USER_SCRATCH_VA >> PML4_SHIFT]);
	KEXPECT(pmm_free_count() == free_before,
		"%lld frames not freed by the unmap",
		(long long)(free_before - pmm_free_count()));
	mm_put(mm);
}

/*
 * heap_debug=on (mm/heap.c): the checks the debug paths turn into panics,
 * made here directly so that the damage they find can be looked at, and
 * repaired before the heap itself would see it.
 */
static bool heap_debug_wanted(struct ktest_context *t)
{
	if (heap_debug_enabled())
		return true;
	ktest_skip(t, "heap_debug=off (the fuzz configurations boot with on)");
	return false;
}

static bool verdict_says(struct ktest_context *t, const struct heap_verdict *v,
			 const char *part)
{
	char text[320];

	heap_verdict_format(v, text, sizeof(text));
	ktest_note("%s", text);
	return KEXPECT(strstr(text, part), "the verdict does not say '%s'",
		       part);
}

KTEST(MM0008, mm, "heap_debug: a write after free is caught and named")
{
	struct heap_verdict v;
	uint8_t *p;
	uint64_t flags;
	bool intact;

	if (!heap_debug_wanted(t))
		return;
	p = kmalloc(100);
	if (!KEXPECT(p, "no memory"))
		return;
	kfree(p);
	KEXPECT(heap_check_freed(p, &v), "a freed object's poison is damaged");
	/*
	 * The object stays in quarantine until QUARANTINE_OBJECTS other
	 * frees push it out, and only then is its poison checked by the
	 * heap: with interrupts off between the write and its repair, no
	 * other CPU frees that many in time.
	 */
	flags = irq_save();
	p[5] = 0x41;
	intact = heap_check_freed(p, &v);
	p[5] = HEAP_POISON_FREE;
	irq_restore(flags);
	KEXPECT(!intact && v.damage == HEAP_WRITE_AFTER_FREE && v.first == 5 &&
			v.last == 5 && v.found == 0x41 &&
			v.expected == HEAP_POISON_FREE && v.size == 100,
		"verdict %d, bytes %ld..%ld hold %#x", v.damage, v.first,
		v.last, v.found);
	verdict_says(t, &v, "written after it was freed: bytes 5..5");
	KEXPECT(heap_check_freed(p, &v), "the repaired object is damaged");
}

KTEST(MM0009, mm, "heap_debug: writes past either end of an object are caught")
{
	struct heap_verdict v;
	uint8_t *p;

	if (!heap_debug_wanted(t))
		return;
	p = kzalloc(24);
	if (!KEXPECT(p, "no memory"))
		return;
	KEXPECT(heap_check_live(p, &v), "a new object is damaged (%d)",
		v.damage);
	p[24] = 1;
	KEXPECT(!heap_check_live(p, &v) && v.damage == HEAP_RIGHT_REDZONE &&
			v.first == 24,
		"an overflow: verdict %d at %ld", v.damage, v.first);
	verdict_says(t, &v, "right red zone");
	p[24] = HEAP_POISON_REDZONE;
	p[-16] = 2;
	KEXPECT(!heap_check_live(p, &v) && v.damage == HEAP_LEFT_REDZONE &&
			v.first == -16,
		"an underflow: verdict %d at %ld", v.damage, v.first);
	verdict_says(t, &v, "left red zone");
	p[-16] = HEAP_POISON_REDZONE;
	KEXPECT(heap_check_live(p, &v), "the repaired object is damaged");
	kfree(p);
}

/*
 * Bounded work with interrupts off (mm/mm.c): a few pages spread over the
 * user half, so that whole-half calls step over absent PML4, PDPT and PD
 * entries, and a block that crosses a PD and a PDPT boundary.
 */
#define BLOCK_VA    0x00000000ffe00000ULL /* 2 MiB below 4 GiB */
#define BLOCK_PAGES 1024
static const uint64_t sparse_vas[] = {
	0x1000,		      /* the first PT */
	0x1ff000,	      /* its last entry */
	0x40000000,	      /* 1 GiB: another PD */
	USER_SCRATCH_VA,      /* another PML4 entry */
	USER_TOP - PAGE_SIZE, /* the last user page */
};

static int map_sparse(struct mm *mm)
{
	int err = mm_map_anon(mm, BLOCK_VA, BLOCK_PAGES * PAGE_SIZE,
			      MM_PROT_READ | MM_PROT_WRITE);

	for (size_t i = 0; !err && i < ARRAY_SIZE(sparse_vas); i++)
		err = mm_map_anon(mm, sparse_vas[i], PAGE_SIZE, MM_PROT_READ);
	return err;
}

/* The longest hold so far, as a diagnostic: tests never assert a time. */
static void report_longest_hold(void)
{
	uint64_t cycles = mm_hold_max_cycles();

	ktest_note("longest hold of an address-space lock: %llu TSC cycles "
		   "(%llu us), at most %u steps each",
		   (unsigned long long)cycles,
		   (unsigned long long)(tsc_to_ns(cycles) / 1000),
		   MM_CHUNK_STEPS);
}

KTEST(MM0010, mm, "map, unmap, protect of the whole user half stay bounded")
{
	struct mm *mm = mm_create();
	uint64_t free_before, pte = 0, free_mapped;
	int err;

	if (!KEXPECT(mm, "no address space"))
		return;
	free_before = pmm_free_count();
	err = map_sparse(mm);
	if (!KEXPECT(err == 0, "mapping the sparse pages: %d", err))
		goto out;
	free_mapped = pmm_free_count();
	err = mm_protect(mm, 0, USER_TOP, MM_PROT_READ);
	KEXPECT(err == -ENOENT, "protect of the whole half returned %d", err);
	err = mm_protect(mm, BLOCK_VA, BLOCK_PAGES * PAGE_SIZE, MM_PROT_READ);
	KEXPECT(err == 0, "protect of the block returned %d", err);
	/* A protect that fails part-way keeps what it changed (mm/mm.h). */
	err = mm_protect(mm, BLOCK_VA, USER_TOP - BLOCK_VA,
			 MM_PROT_READ | MM_PROT_WRITE);
	KEXPECT(err == -ENOENT, "protect past the block returned %d", err);
	pt_translate(mm->root, BLOCK_VA, NULL, &pte);
	KEXPECT(pte & PTE_WRITE, "the block's first page is not writable "
				 "after a protect that failed further on");
	err = mm_map_anon(mm, 0, USER_TOP, MM_PROT_READ);
	KEXPECT(err == -EINVAL, "a map of the whole half returned %d", err);
	/* Stepping from 64 MiB below the top to the last user page. */
	err = mm_map_anon(mm, USER_TOP - MM_MAP_MAX_BYTES, MM_MAP_MAX_BYTES,
			  MM_PROT_READ);
	KEXPECT(err == -EEXIST, "a map over the last page returned %d", err);
	KEXPECT(pmm_free_count() == free_mapped,
		"a map that found a page mapped took %lld frames",
		(long long)(free_mapped - pmm_free_count()));
	err = mm_unmap(mm, 0, USER_TOP);
	KEXPECT(err == 0, "unmap of the whole half returned %d", err);
	KEXPECT(mm->pages == 0, "%llu pages left mapped",
		(unsigned long long)mm->pages);
	KEXPECT(pmm_free_count() == free_before,
		"%lld frames not freed by the unmap",
		(long long)(free_before - pmm_free_count()));
	/* Nothing left: every step is an absent PML4 entry. */
	err = mm_unmap(mm, 0, USER_TOP);
	KEXPECT(err == 0, "unmap of the empty half returned %d", err);
	report_longest_hold();
out:
	mm_put(mm);
}

/*
 * A thread on another CPU unmaps and protects the whole user half of a
 * sparse space, and maps a whole-half range, while this CPU sends it
 * cross-CPU calls (which carry the TLB shootdowns) and waits for each
 * answer. A CPU that did such a call in one hold of mm->lock, interrupts
 * off, would answer none until it finished, and the call watchdog would
 * panic the kernel.
 */
#define ANSWER_ROUNDS 4

struct answer_run {
	struct mm *mm;
	bool stop;	 /* test_threads_join's flag; the worker ignores it */
	bool done;	 /* atomic: the worker finished its rounds */
	unsigned exited; /* atomic */
	const char *failed;
	int err;
};

static void answer_worker(void *arg)
{
	struct answer_run *r = arg;
	int err = 0;

	for (unsigned round = 0; !r->failed && round < ANSWER_ROUNDS; round++) {
		if ((err = map_sparse(r->mm)))
			r->failed = "mapping the sparse pages";
		else if ((err = mm_protect(r->mm, BLOCK_VA, USER_TOP - BLOCK_VA,
					   MM_PROT_READ)) != -ENOENT)
			r->failed = "protect past the block";
		else if ((err = mm_map_anon(r->mm, 0, USER_TOP,
					    MM_PROT_READ)) != -EINVAL)
			r->failed = "a map of the whole half";
		else if ((err = mm_unmap(r->mm, 0, USER_TOP)))
			r->failed = "unmap of the whole half";
		else if ((err = mm_unmap(r->mm, 0, USER_TOP)))
			r->failed = "unmap of the empty half";
	}
	r->err = err;
	__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
	__atomic_add_fetch(&r->exited, 1, __ATOMIC_RELEASE);
}

static void count_answer(void *arg)
{
	__atomic_add_fetch((uint64_t *)arg, 1, __ATOMIC_RELAXED);
}

KTEST(MM0011, mm, "a CPU in a whole-half unmap answers cross-CPU calls")
{
	unsigned threads_before = thread_count(), worker;
	struct answer_run r = {0};
	uint64_t answers = 0;

	if (cpu_count < 2) {
		ktest_skip(t, "needs 2 or more CPUs (boot with SMP=2 or more)");
		return;
	}
	r.mm = mm_create();
	if (!KEXPECT(r.mm, "no address space"))
		return;
	worker = (this_cpu_index() + 1) % cpu_count;
	if (test_thread_start(t, answer_worker, &r, worker, "mm-answer",
			      NULL)) {
		while (!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE))
			smp_call_function_single(worker, count_answer, &answers,
						 SMP_CALL_WAIT);
		test_threads_join(t, &r.stop, &r.exited, 1, threads_before,
				  60000000000ULL);
	}
	KEXPECT(!r.failed, "%s returned %d", r.failed ? r.failed : "", r.err);
	ktest_note("%llu calls answered by CPU %u meanwhile",
		   (unsigned long long)answers, worker);
	report_longest_hold();
	mm_put(r.mm);
}
