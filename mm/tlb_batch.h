/* SPDX-License-Identifier: MIT */
/*
 * Batched unmapping: page-table entries are cleared in bulk, then one flush
 * covers them all (one IPI per CPU rather than one per page), and only then
 * are the pages and page tables freed. The shape of Linux's mmu_gather.
 *
 *	struct tlb_batch b;
 *
 *	tlb_batch_begin(&b, mm);
 *	lock; for each page: pt_unmap(mm->root, va, &old, &b) (which batches
 *	      va and the tables it empties), tlb_batch_free_page(&b, frame);
 *	      stop when tlb_batch_full(); unlock
 *	tlb_batch_flush(&b);	(flush, wait for every CPU, then free)
 *
 * This is the only way a user-half page table is freed while its address
 * space lives (mm_put frees the rest once no CPU has it loaded); kernel-half
 * tables are never freed (docs/tlb.md, "Page tables: who frees them").
 */
#ifndef MM_TLB_BATCH_H
#define MM_TLB_BATCH_H

#include "lib/types.h"
#include "mm/tlb.h"

struct mm;

/* Frames one batch holds for freeing: 4 KiB of stack at most. */
#define TLB_BATCH_FRAMES 256

struct tlb_batch {
	struct mm *mm;
	uint64_t start, end; /* covers every page cleared; start >= end: none */
	bool freed_tables;
	size_t count;
	uint64_t frames[TLB_BATCH_FRAMES]; /* to free after the flush */
};

void tlb_batch_begin(struct tlb_batch *b, struct mm *mm);
/* The entry of the 4 KiB page at va was cleared or changed. */
void tlb_batch_page(struct tlb_batch *b, uint64_t va);
/* Frees frame (a page the entry pointed to) once the flush is done. */
void tlb_batch_free_page(struct tlb_batch *b, uint64_t frame);
/*
 * Frees a page table once the flush is done (the flush covers its walks,
 * and reaches lazy CPUs too: TLB_TABLES_FREED). pt_unmap calls it.
 */
void tlb_batch_free_table(struct tlb_batch *b, uint64_t frame);
/* True when fewer than room frames still fit. */
bool tlb_batch_full(const struct tlb_batch *b, size_t room);
/* Flushes what was batched on every CPU, then frees; b is empty after. */
void tlb_batch_flush(struct tlb_batch *b);

/*
 * The same across address spaces, flushed by one round (flush_tlb_mms;
 * unmap_batch= says how), then freed. One struct tlb_batch holds the
 * frames of all the spaces and the range of the one being unmapped now;
 * each space's range is kept when the next one starts. About 2.5 KiB.
 *
 *	tlb_multi_batch_begin(&mb);
 *	for each address space mm:
 *		b = tlb_multi_batch_add(&mb, mm);	(NULL: full, flush first)
 *		lock mm; pt_unmap(mm->root, va, &old, b) ...; unlock
 *	tlb_multi_batch_flush(&mb);	(one round, wait for all, then free)
 */
struct tlb_multi_batch {
	struct tlb_batch now; /* the space being unmapped; every frame */
	unsigned count;	      /* spaces batched before it */
	struct tlb_mm_range done[TLB_MULTI_MMS_MAX];
};

void tlb_multi_batch_begin(struct tlb_multi_batch *mb);
/*
 * The batch to unmap mm's pages into, mm's range starting anew unless mm
 * is the space batched last; NULL when no more spaces fit.
 */
struct tlb_batch *tlb_multi_batch_add(struct tlb_multi_batch *mb,
				      struct mm *mm);
/* Flushes every space batched in one round, then frees; mb is empty after. */
void tlb_multi_batch_flush(struct tlb_multi_batch *mb);

#endif
