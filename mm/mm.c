// SPDX-License-Identifier: MIT
/*
 * Address spaces: creation, user mappings, teardown.
 *
 * Who frees what: an anonymous page's frame belongs to the address space
 * that mapped it and is freed when it is unmapped or the space is torn down.
 * A shared page's frame belongs to its shared-memory object (marked in the
 * PTE with PTE_SOFT_SHARED) and is freed with the object, when the last
 * address space that mapped it goes away.
 *
 * Unmapping follows the rule of mm/tlb.h: clear the entries, flush every
 * CPU that may hold them, and only then free the frames and the page tables
 * the unmap emptied; a struct tlb_batch (mm/tlb_batch.h) collects them so
 * one flush covers many pages. pt_unmap hands the tables it empties to the
 * batch itself: while the address space lives, a user-half table is freed
 * through a batch or not at all. The address-space lock covers the table
 * edits only, never the flush: a CPU waiting for that lock with interrupts
 * off would not answer the flush's IPI.
 */
#include "mm/mm.h"
#include "kernel/cpu.h"
#include "lib/errno.h"
#include "kernel/panic.h"
#include "lib/string.h"
#include "mm/heap.h"
#include "mm/kmap.h"
#include "mm/layout.h"
#include "mm/pagetable.h"
#include "mm/pmm.h"
#include "mm/tlb.h"
#include "mm/tlb_batch.h"

/* Frames one unmapped page may free: the page and the tables it empties. */
#define FRAMES_PER_UNMAP (1 + PT_UNMAP_TABLES_MAX)
#define SHM_MAX		 64   /* shared-memory objects in the system */
#define SHM_MAX_PAGES	 4096 /* 16 MiB per object */
#define TABLE_ENTRIES	 512

struct shm {
	uint64_t id;
	uint32_t refcount; /* atomic: creator's handle and each mapping mm */
	uint64_t pages;
	uint64_t frames[];
};

static uint64_t next_context_id = 1;
static struct spinlock shm_lock = SPINLOCK_INIT;
static struct shm *shm_table[SHM_MAX]; /* guarded by shm_lock */
static uint64_t next_shm_id = 1;       /* guarded by shm_lock */

bool user_range_ok(uint64_t va, uint64_t len)
{
	return va < USER_TOP && len <= USER_TOP - va;
}

static bool range_ok(uint64_t va, uint64_t len)
{
	return len && IS_ALIGNED(va, PAGE_SIZE) && IS_ALIGNED(len, PAGE_SIZE) &&
	       user_range_ok(va, len);
}

static uint64_t pte_flags(uint32_t prot)
{
	uint64_t flags = PTE_USER;

	if (prot & MM_PROT_WRITE)
		flags |= PTE_WRITE;
	if (!(prot & MM_PROT_EXEC) && boot_cpu.nx)
		flags |= PTE_NX;
	return flags;
}

static bool prot_ok(uint32_t prot)
{
	/* Readable always (x86 pages are); never writable and executable. */
	return !(prot & ~(MM_PROT_READ | MM_PROT_WRITE | MM_PROT_EXEC)) &&
	       !((prot & MM_PROT_WRITE) && (prot & MM_PROT_EXEC));
}

struct mm *mm_create(void)
{
	struct mm *mm = kzalloc(sizeof(*mm));
	uint64_t *root;

	if (!mm)
		return NULL;
	mm->root = pmm_alloc_frame();
	if (!mm->root) {
		kfree(mm);
		return NULL;
	}
	/* The kernel half: the same PDPTs as every address space. */
	root = phys_to_virt(mm->root);
	memcpy(root + PML4_KERNEL_FIRST,
	       (uint64_t *)phys_to_virt(kernel_root) + PML4_KERNEL_FIRST,
	       (PML4_ENTRIES - PML4_KERNEL_FIRST) * sizeof(uint64_t));
	mm->context_id =
		__atomic_fetch_add(&next_context_id, 1, __ATOMIC_RELAXED);
	mm->refcount = 1;
	mm->lock = (struct spinlock)SPINLOCK_INIT;
	return mm;
}

void mm_get(struct mm *mm)
{
	__atomic_add_fetch(&mm->refcount, 1, __ATOMIC_RELAXED);
}

/* Frees a user page table at level (3: PDPT .. 1: PT) and all below it. */
static void free_tables(uint64_t table, int level)
{
	uint64_t *entries = phys_to_virt(table);

	for (int i = 0; i < TABLE_ENTRIES; i++) {
		uint64_t e = entries[i];

		if (!(e & PTE_PRESENT))
			continue;
		if (level > 1)
			free_tables(e & PTE_ADDR_MASK, level - 1);
		else if (!(e & PTE_SOFT_SHARED))
			pmm_free_frame(e & PTE_ADDR_MASK);
	}
	pmm_free_frame(table);
}

void mm_put(struct mm *mm)
{
	uint64_t *root;

	if (__atomic_sub_fetch(&mm->refcount, 1, __ATOMIC_ACQ_REL))
		return;
	/* No thread runs on it; CPUs that still have it loaded let go. */
	tlb_mm_teardown(mm);
	root = phys_to_virt(mm->root);
	for (int slot = 0; slot < PML4_KERNEL_FIRST; slot++) {
		if (root[slot] & PTE_PRESENT)
			free_tables(root[slot] & PTE_ADDR_MASK, 3);
	}
	for (unsigned i = 0; i < mm->shared_count; i++)
		shm_put(mm->shared[i]);
	pmm_free_frame(mm->root);
	kfree(mm);
}

static bool mapped(struct mm *mm, uint64_t va)
{
	return pt_translate(mm->root, va, NULL, NULL) == 0;
}

/*
 * Unmaps [va, end); frames of anonymous pages are freed. One flush per
 * batch: a batch fills up only on very large unmaps.
 */
static void unmap_range(struct mm *mm, uint64_t va, uint64_t end)
{
	struct tlb_batch batch;

	tlb_batch_begin(&batch, mm);
	while (va < end) {
		uint64_t flags = spin_lock_irqsave(&mm->lock);

		for (; va < end && !tlb_batch_full(&batch, FRAMES_PER_UNMAP);
		     va += PAGE_SIZE) {
			uint64_t old;

			if (pt_unmap(mm->root, va, &old, &batch))
				continue;
			mm->pages--;
			if (!(old & PTE_SOFT_SHARED))
				tlb_batch_free_page(&batch,
						    old & PTE_ADDR_MASK);
		}
		spin_unlock_irqrestore(&mm->lock, flags);
		tlb_batch_flush(&batch);
	}
}

int mm_map_anon(struct mm *mm, uint64_t va, uint64_t len, uint32_t prot)
{
	uint64_t flags, pte = pte_flags(prot), done = va;
	int err = 0;

	if (!range_ok(va, len) || !prot_ok(prot))
		return -EINVAL;
	flags = spin_lock_irqsave(&mm->lock);
	for (uint64_t p = va; p < va + len; p += PAGE_SIZE) {
		if (mapped(mm, p)) {
			spin_unlock_irqrestore(&mm->lock, flags);
			return -EEXIST;
		}
	}
	for (; done < va + len; done += PAGE_SIZE) {
		uint64_t frame = pmm_alloc_frame();

		if (!frame) {
			err = -ENOMEM;
			break;
		}
		err = pt_map(mm->root, done, frame, PAGE_4K, pte);
		if (err) {
			pmm_free_frame(frame);
			break;
		}
		mm->pages++;
	}
	spin_unlock_irqrestore(&mm->lock, flags);
	if (err)
		unmap_range(mm, va, done); /* nothing half-done stays */
	return err;
}

int mm_unmap(struct mm *mm, uint64_t va, uint64_t len)
{
	if (!range_ok(va, len))
		return -EINVAL;
	unmap_range(mm, va, va + len);
	return 0;
}

int mm_protect(struct mm *mm, uint64_t va, uint64_t len, uint32_t prot)
{
	uint64_t flags;
	int err = 0;

	if (!range_ok(va, len) || !prot_ok(prot))
		return -EINVAL;
	flags = spin_lock_irqsave(&mm->lock);
	for (uint64_t p = va; p < va + len; p += PAGE_SIZE) {
		if (!mapped(mm, p)) {
			spin_unlock_irqrestore(&mm->lock, flags);
			return -ENOENT;
		}
	}
	for (uint64_t p = va; p < va + len && !err; p += PAGE_SIZE) {
		uint64_t old = 0;

		pt_translate(mm->root, p, NULL, &old);
		err = pt_protect(mm->root, p,
				 pte_flags(prot) | (old & PTE_SOFT_SHARED));
	}
	spin_unlock_irqrestore(&mm->lock, flags);
	/* Rights may have shrunk: nobody may keep using the old ones. */
	flush_tlb_mm_range(mm, va, va + len, PAGE_SHIFT, TLB_TABLES_KEPT);
	return err;
}

int mm_write(struct mm *mm, uint64_t va, const void *src, size_t n)
{
	const uint8_t *from = src;

	while (n) {
		uint64_t pa, chunk = MIN(n, PAGE_SIZE - (va % PAGE_SIZE));

		if (pt_translate(mm->root, va, &pa, NULL))
			return -EFAULT;
		memcpy(phys_to_virt(pa), from, chunk);
		va += chunk;
		from += chunk;
		n -= chunk;
	}
	return 0;
}

struct shm *shm_create(uint64_t len)
{
	uint64_t pages = ALIGN_UP(len, PAGE_SIZE) / PAGE_SIZE, flags;
	struct shm *shm;
	size_t slot;

	if (!len || pages > SHM_MAX_PAGES)
		return NULL;
	shm = kzalloc(sizeof(*shm) + pages * sizeof(uint64_t));
	if (!shm)
		return NULL;
	shm->pages = pages;
	shm->refcount = 1;
	for (uint64_t i = 0; i < pages; i++) {
		shm->frames[i] = pmm_alloc_frame();
		if (!shm->frames[i]) {
			shm->pages = i;
			shm_put(shm);
			return NULL;
		}
	}
	flags = spin_lock_irqsave(&shm_lock);
	for (slot = 0; slot < SHM_MAX && shm_table[slot]; slot++)
		;
	if (slot < SHM_MAX) {
		shm->id = next_shm_id++;
		shm_table[slot] = shm;
	}
	spin_unlock_irqrestore(&shm_lock, flags);
	if (slot == SHM_MAX) {
		shm_put(shm);
		return NULL;
	}
	return shm;
}

void shm_put(struct shm *shm)
{
	uint64_t flags;

	flags = spin_lock_irqsave(&shm_lock);
	if (__atomic_sub_fetch(&shm->refcount, 1, __ATOMIC_ACQ_REL)) {
		spin_unlock_irqrestore(&shm_lock, flags);
		return;
	}
	for (size_t i = 0; i < SHM_MAX; i++) {
		if (shm_table[i] == shm)
			shm_table[i] = NULL;
	}
	spin_unlock_irqrestore(&shm_lock, flags);
	for (uint64_t i = 0; i < shm->pages; i++)
		pmm_free_frame(shm->frames[i]);
	kfree(shm);
}

int mm_map_shared(struct mm *mm, struct shm *shm, uint64_t va, uint32_t prot)
{
	uint64_t len = shm->pages * PAGE_SIZE, flags;
	uint64_t pte = pte_flags(prot) | PTE_SOFT_SHARED;
	uint64_t done = va;
	int err = 0;

	if (!range_ok(va, len) || !prot_ok(prot))
		return -EINVAL;
	flags = spin_lock_irqsave(&mm->lock);
	if (mm->shared_count == MM_MAX_SHARED)
		err = -ENOMEM;
	for (uint64_t p = va; !err && p < va + len; p += PAGE_SIZE) {
		if (mapped(mm, p))
			err = -EEXIST;
	}
	for (uint64_t i = 0; !err && i < shm->pages; i++, done += PAGE_SIZE) {
		err = pt_map(mm->root, done, shm->frames[i], PAGE_4K, pte);
		if (!err)
			mm->pages++;
	}
	if (!err) {
		mm->shared[mm->shared_count++] = shm;
		__atomic_add_fetch(&shm->refcount, 1, __ATOMIC_RELAXED);
	}
	spin_unlock_irqrestore(&mm->lock, flags);
	if (err && done > va)
		unmap_range(mm, va, done);
	return err;
}
