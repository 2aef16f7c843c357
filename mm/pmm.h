/* SPDX-License-Identifier: MIT */
/*
 * The physical memory manager: 4 KiB frames for the whole kernel, built from
 * the multiboot2 memory map at boot. Thread-safe (one spinlock).
 */
#ifndef MM_PMM_H
#define MM_PMM_H

#include "lib/types.h"
#include "boot/multiboot2.h"
#include "mm/memmap.h"

/*
 * Everything that must never be handed out: the first 1 MiB (real-mode
 * structures, BIOS data, the AP trampoline page), the kernel image, the
 * boot information, modules, the framebuffer. Reported at boot.
 */
void pmm_init(const struct boot_info *boot, uint64_t mbi_phys);

/*
 * One zeroed frame, or 0 when memory is exhausted (0 is never handed out).
 * For the kernel's own use (stacks, heap, kernel tables, bookkeeping): it
 * may take the reserve (pmm.c, "The reserve").
 */
uint64_t pmm_alloc_frame(void);
/*
 * One zeroed frame for user memory (anonymous pages, shared objects, the
 * user half's page tables), or 0 when no more than the reserve is free.
 */
uint64_t pmm_alloc_user_frame(void);
/* count contiguous zeroed frames aligned to align frames, or 0. */
uint64_t pmm_alloc_frames(uint64_t count, uint64_t align);
/* Frees frames; panics on a double free or a frame it never managed. */
void pmm_free_frames(uint64_t phys, uint64_t count);
static inline void pmm_free_frame(uint64_t phys)
{
	pmm_free_frames(phys, 1);
}

uint64_t pmm_free_count(void);
uint64_t pmm_total_count(void);
/* Frames user memory may never take (pmm.c, "The reserve"); set at boot. */
uint64_t pmm_reserve_count(void);

/* The usable RAM ranges, for the direct map. */
const struct phys_range *pmm_usable_ranges(size_t *count);

#endif
