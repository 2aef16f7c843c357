/* SPDX-License-Identifier: MIT */
/*
 * The kernel half of every address space: the direct map of RAM, the kernel
 * image with per-section rights, and device mappings (ioremap).
 */
#ifndef MM_KMAP_H
#define MM_KMAP_H

#include "lib/types.h"
#include "boot/multiboot2.h"
#include "mm/pagetable.h"

/* Physical address of the kernel's PML4; user roots copy its upper half. */
extern uint64_t kernel_root;

/*
 * Builds the kernel page tables (needs pmm_init) and programs the PAT.
 * They take effect with kmap_activate, so devices can be remapped into them
 * (ioremap) while the boot tables are still live.
 */
void kmap_build(const struct boot_info *boot);
void kmap_activate(void);

/*
 * Maps size bytes of a framebuffer at phys, write-combining, into the boot
 * page tables, wherever it lies (mm/kmap_early.c): the screen's mapping
 * until kmap_activate, which ends it. Returns the virtual address of phys,
 * or NULL if it does not fit the window (2 GiB).
 */
void *kmap_early_window(uint64_t phys, uint64_t size);

/* Programs this CPU's PAT as the kernel's mappings expect (every CPU). */
void kmap_init_this_cpu(void);

/*
 * Maps size bytes of device memory at phys with a memory type
 * (PTE_CACHE_UC for registers, PTE_CACHE_WC for framebuffers); returns the
 * virtual address of phys. Panics when the device window is exhausted.
 */
void *ioremap(uint64_t phys, uint64_t size, uint64_t cache);

/*
 * Maps / unmaps one 4 KiB page of the kernel half after boot. Serialised by
 * one lock: two CPUs must not edit the same kernel page table at once (both
 * could find a table missing and link one each, losing the other's entry).
 *
 * kmap_map_page returns -EINVAL for a user-half va, and, when the CPU uses
 * global pages, for flags without PTE_GLOBAL: with PCID on, a non-global
 * kernel entry is tagged with the PCID it was cached under, and an INVLPG
 * issued under another PCID would not drop it (docs/tlb.md).
 *
 * kmap_unmap_page frees nothing: the caller flushes (flush_tlb_kernel_range)
 * before it frees the frame in *old. The page tables the unmap emptied stay
 * linked, never freed: INVLPG would not reach the walks that other PCIDs
 * cached through them (mm/pagetable.h). They are reused by later mappings.
 */
int kmap_map_page(uint64_t va, uint64_t pa, uint64_t flags);
int kmap_unmap_page(uint64_t va, uint64_t *old);

/* The address of the boot stack's guard page (never mapped). */
uint64_t kmap_boot_stack_guard(void);

/* True when va lies in a stack guard page (for fault reports). */
bool kmap_is_stack_guard(uint64_t va);

#endif
