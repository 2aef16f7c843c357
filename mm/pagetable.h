/* SPDX-License-Identifier: MIT */
/*
 * Four-level x86-64 page tables (Intel SDM Vol. 3A, 4.5): map, unmap,
 * protect and translate, on any root. These functions only edit tables;
 * they never flush a TLB and never free a table themselves.
 *
 * Who frees page tables (docs/tlb.md, "Page tables: who frees them"):
 * - user half: a table an unmap empties is unlinked and handed to the
 *   caller's struct tlb_batch, which frees it only after its flush returned
 *   (a flush with freed_tables, so lazy CPUs are reached too): until then a
 *   CPU may still walk it through its paging-structure caches;
 * - kernel half: never. INVLPG drops cached walks of the current PCID only,
 *   so a kernel flush cannot reach the walks other PCIDs cached; an emptied
 *   kernel table stays linked and is reused by the next mapping near it.
 */
#ifndef MM_PAGETABLE_H
#define MM_PAGETABLE_H

#include "lib/types.h"

/* Page-table entry bits (SDM Vol. 3A, tables 4-15 to 4-20). */
#define PTE_PRESENT  0x001ULL
#define PTE_WRITE    0x002ULL
#define PTE_USER     0x004ULL
#define PTE_PWT	     0x008ULL /* page write-through: PAT index bit 0 */
#define PTE_PCD	     0x010ULL /* page cache disable: PAT index bit 1 */
#define PTE_ACCESSED 0x020ULL
#define PTE_DIRTY    0x040ULL
#define PTE_HUGE     0x080ULL /* leaf at PD (2 MiB) or PDPT (1 GiB) level */
#define PTE_GLOBAL   0x100ULL /* survives CR3 writes (CR4.PGE) */
#define PTE_SOFT_SHARED \
	0x200ULL /* ours (an "available" bit): frame owned by a shared-memory object */
#define PTE_NX	      0x8000000000000000ULL /* no execute (EFER.NXE) */
#define PTE_ADDR_MASK 0x000ffffffffff000ULL

/* Ours, on shared pages only: the most SYS_PROTECT may grant (mm/mm.c). */
#define PTE_SOFT_MAX_WRITE 0x400ULL /* mapped writable: may be again */
#define PTE_SOFT_MAX_EXEC  0x800ULL /* mapped executable: may be again */

/* Memory types through the PAT (programmed by mm/kmap.c): index = PCD:PWT. */
#define PTE_CACHE_WB 0ULL		 /* PAT entry 0: write-back */
#define PTE_CACHE_WC PTE_PWT		 /* PAT entry 1: write-combining */
#define PTE_CACHE_UC (PTE_PCD | PTE_PWT) /* PAT entry 3: uncached */

enum page_size {
	PAGE_4K,
	PAGE_2M,
	PAGE_1G,
};

struct tlb_batch;

/* Tables one user-half unmap may hand to its batch: a PT, a PD and a PDPT. */
#define PT_UNMAP_TABLES_MAX 3

/*
 * Maps va to pa (both aligned to size) with flags. Missing tables are
 * allocated (at most PT_MAP_TABLES_MAX), and counted in *tables_made unless
 * it is NULL; they stay linked whatever the result. Returns 0, -EEXIST if
 * va is already mapped, -ENOMEM, or -EINVAL for a misaligned or
 * non-canonical address.
 */
#define PT_MAP_TABLES_MAX 3 /* a PDPT, a PD and a PT */
int pt_map(uint64_t root, uint64_t va, uint64_t pa, enum page_size size,
	   uint64_t flags, unsigned *tables_made);

/*
 * Unmaps the 4 KiB page at va; *old gets the entry it held, and the caller
 * frees (or batches) the frame it pointed to after the flush.
 *
 * User half: batch is the caller's batch for the address space whose root
 * this is, with room for PT_UNMAP_TABLES_MAX frames. va joins the batch's
 * range, and the tables left empty (up to the PDPT) are unlinked and handed
 * to it (tlb_batch_free_table): tlb_batch_flush frees them after the flush.
 * Kernel half: batch is NULL; no table is unlinked or freed.
 *
 * Returns -ENOENT if nothing is mapped there, -EINVAL if va lies inside a
 * large page or is not canonical.
 */
int pt_unmap(uint64_t root, uint64_t va, uint64_t *old,
	     struct tlb_batch *batch);

/*
 * The first address from va on, below end, that a present page table of
 * the last level (or a large page) could map; end when there is none.
 * Each absent PML4, PDPT or PD entry on the way is stepped over whole, at
 * the cost of one from *budget; with *budget at 0 the walk stops where it
 * got to (below end, not known to be mappable). For the user half, whose
 * callers hold the address space's lock: mm/mm.c, "Bounded work".
 */
uint64_t pt_next_mappable(uint64_t root, uint64_t va, uint64_t end,
			  unsigned *budget);

/* Replaces the flags of the 4 KiB mapping at va (address kept). */
int pt_protect(uint64_t root, uint64_t va, uint64_t flags);

/*
 * Walks to va. Returns 0 with the physical address in *pa and the leaf entry
 * in *pte (either may be NULL), or -ENOENT.
 */
int pt_translate(uint64_t root, uint64_t va, uint64_t *pa, uint64_t *pte);

/* True when va is canonical (bits 63..47 all equal). */
static inline bool va_is_canonical(uint64_t va)
{
	return (uint64_t)((int64_t)(va << 16) >> 16) == va;
}

#endif
