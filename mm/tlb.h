/* SPDX-License-Identifier: MIT */
/*
 * TLB maintenance: the only code that loads CR3 or invalidates translations.
 */
#ifndef MM_TLB_H
#define MM_TLB_H

#include "kernel/types.h"

/*
 * Flushes the kernel-half translations of [start, end) on every CPU that
 * runs. Call after changing kernel page-table entries and before freeing
 * what they pointed to (pages or page tables).
 */
void flush_tlb_kernel_range(uint64_t start, uint64_t end);

struct mm;

/*
 * Flushes the user translations of [start, end) in mm on every CPU that may
 * hold them. freed_tables: the change also freed page tables. Call after
 * changing mm's page tables and before freeing what they pointed to.
 */
void flush_tlb_mm_range(struct mm *mm, uint64_t start, uint64_t end,
			bool freed_tables);

/*
 * The address-space switch of a thread switch: loads next's page tables (or
 * the kernel's for a kernel thread, next == NULL). Interrupts off.
 */
void switch_mm(struct mm *next);

/* Loads the kernel page tables at boot (root: physical address of a PML4). */
void tlb_load_kernel_root(uint64_t root);

/* Largest page count flushed page by page; beyond it, flush everything. */
#define TLB_FLUSH_CEILING_DEFAULT 33

#endif
