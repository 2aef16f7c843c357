// SPDX-License-Identifier: MIT
/*
 * The walk: level 4 (PML4) down to level 1 (PT); the index at each level is
 * nine bits of the virtual address, starting at bit 39, 30, 21, 12. A leaf
 * sits at level 1 (4 KiB), level 2 (2 MiB, PS bit) or level 3 (1 GiB).
 * Tables are reached through the direct map.
 */
#include "mm/pagetable.h"
#include "arch/layout.h"
#include "mm/mm.h"
#include "mm/pmm.h"
#include "mm/tlb_batch.h"
#include "lib/errno.h"
#include "trap/panic.h"

#define LEVELS		   4
#define ENTRIES		   512
#define INDEX_BITS	   9
#define LEVEL_SHIFT(level) (PAGE_SHIFT + INDEX_BITS * ((level)-1))

static uint64_t *table_at(uint64_t phys)
{
	return phys_to_virt(phys & PTE_ADDR_MASK);
}

static unsigned index_at(uint64_t va, int level)
{
	return (va >> LEVEL_SHIFT(level)) & (ENTRIES - 1);
}

static int leaf_level(enum page_size size)
{
	return size == PAGE_1G ? 3 : size == PAGE_2M ? 2 : 1;
}

static bool is_user(uint64_t va)
{
	return va < USER_TOP;
}

/*
 * The entry for va at target_level, allocating missing tables on the way
 * when allocate is set. NULL when a table is missing (and not allocated), a
 * large page is in the way, or memory ran out (*err says which).
 */
static uint64_t *walk(uint64_t root, uint64_t va, int target_level,
		      bool allocate, unsigned *made, int *err)
{
	uint64_t *table = table_at(root);

	for (int level = LEVELS; level > target_level; level--) {
		uint64_t *entry = &table[index_at(va, level)];

		if (!(*entry & PTE_PRESENT)) {
			uint64_t frame;

			if (!allocate) {
				*err = -ENOENT;
				return NULL;
			}
			KASSERT(is_user(va) || level != LEVELS,
				"kernel-half PML4 slot %u of va %#llx is "
				"empty: kmap preallocates them all",
				index_at(va, level), (unsigned long long)va);
			frame = is_user(va) ? pmm_alloc_user_frame()
					    : pmm_alloc_frame();
			if (!frame) {
				*err = -ENOMEM;
				return NULL;
			}
			*entry = frame | PTE_PRESENT | PTE_WRITE |
				 (is_user(va) ? PTE_USER : 0);
			if (made)
				++*made;
		} else if (*entry & PTE_HUGE) {
			*err = -EINVAL;
			return NULL;
		}
		table = table_at(*entry);
	}
	return &table[index_at(va, target_level)];
}

int pt_map(uint64_t root, uint64_t va, uint64_t pa, enum page_size size,
	   uint64_t flags, unsigned *tables_made)
{
	int level = leaf_level(size);
	uint64_t align = 1ULL << LEVEL_SHIFT(level);
	uint64_t *entry;
	int err = 0;

	if (!va_is_canonical(va) || !IS_ALIGNED(va, align) ||
	    !IS_ALIGNED(pa, align) || (pa & ~PTE_ADDR_MASK))
		return -EINVAL;
	entry = walk(root, va, level, true, tables_made, &err);
	if (!entry)
		return err;
	if (*entry & PTE_PRESENT)
		return -EEXIST;
	*entry = pa | flags | PTE_PRESENT | (level > 1 ? PTE_HUGE : 0);
	return 0;
}

static bool table_is_empty(const uint64_t *table)
{
	for (int i = 0; i < ENTRIES; i++) {
		if (table[i])
			return false;
	}
	return true;
}

int pt_unmap(uint64_t root, uint64_t va, uint64_t *old, struct tlb_batch *batch)
{
	uint64_t *path[LEVELS + 1]; /* path[level]: the entry at that level */
	uint64_t *table = table_at(root);

	if (!va_is_canonical(va))
		return -EINVAL;
	KASSERT(is_user(va) ? batch && batch->mm->root == root : !batch,
		"unmapping %#llx: a user-half unmap takes the batch of its "
		"address space (root %#llx, batch %p), a kernel one none",
		(unsigned long long)va, (unsigned long long)root,
		(void *)batch);
	for (int level = LEVELS; level >= 1; level--) {
		path[level] = &table[index_at(va, level)];
		if (!(*path[level] & PTE_PRESENT))
			return -ENOENT;
		if (level > 1 && (*path[level] & PTE_HUGE))
			return -EINVAL;
		table = table_at(*path[level]);
	}
	*old = *path[1];
	*path[1] = 0;
	if (!is_user(va))
		return 0; /* kernel tables stay linked: pagetable.h */

	/* Unlink each table this emptied, lowest first, up to the PDPT:
	 * the batch frees them once its flush has returned. */
	tlb_batch_page(batch, va);
	for (int level = 1; level <= PT_UNMAP_TABLES_MAX; level++) {
		uint64_t *this_table = (uint64_t *)ALIGN_DOWN(
			(uint64_t)path[level], PAGE_SIZE);
		uint64_t *parent = path[level + 1];
		uint64_t frame = *parent & PTE_ADDR_MASK;

		if (!table_is_empty(this_table))
			break;
		*parent = 0;
		tlb_batch_free_table(batch, frame);
	}
	return 0;
}

int pt_protect(uint64_t root, uint64_t va, uint64_t flags)
{
	int err = 0;
	uint64_t *entry = walk(root, va, 1, false, NULL, &err);

	if (!entry)
		return err;
	if (!(*entry & PTE_PRESENT))
		return -ENOENT;
	*entry = (*entry & PTE_ADDR_MASK) | flags | PTE_PRESENT;
	return 0;
}

uint64_t pt_next_mappable(uint64_t root, uint64_t va, uint64_t end,
			  unsigned *budget)
{
	KASSERT(end <= USER_TOP, "skipping to %#llx: user half only",
		(unsigned long long)end);
	while (va < end && *budget) {
		uint64_t *table = table_at(root);
		uint64_t entry, span;
		int level = LEVELS;

		for (;; level--) {
			entry = table[index_at(va, level)];
			if (level == 1 || !(entry & PTE_PRESENT) ||
			    (entry & PTE_HUGE))
				break;
			table = table_at(entry);
		}
		if (level == 1 || (entry & PTE_PRESENT))
			return va; /* a present PT, or a large page */
		/* Nothing mapped below this entry: its whole span goes. */
		span = 1ULL << LEVEL_SHIFT(level);
		va = ALIGN_DOWN(va, span) + span;
		--*budget;
	}
	return MIN(va, end);
}

int pt_translate(uint64_t root, uint64_t va, uint64_t *pa, uint64_t *pte)
{
	uint64_t *table = table_at(root);

	if (!va_is_canonical(va))
		return -ENOENT;
	for (int level = LEVELS; level >= 1; level--) {
		uint64_t entry = table[index_at(va, level)];
		uint64_t span = 1ULL << LEVEL_SHIFT(level);

		if (!(entry & PTE_PRESENT))
			return -ENOENT;
		if (level == 1 || (entry & PTE_HUGE)) {
			if (pa)
				*pa = (entry & PTE_ADDR_MASK & ~(span - 1)) |
				      (va & (span - 1));
			if (pte)
				*pte = entry;
			return 0;
		}
		table = table_at(entry);
	}
	return -ENOENT;
}
