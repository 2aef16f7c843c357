// SPDX-License-Identifier: MIT
/*
 * Batched unmapping (mm/tlb_batch.h). The rule it enforces: a page or page
 * table is freed only after the flush of every entry that pointed to it has
 * returned, that is after every CPU that could use the entry dropped it.
 * Freed earlier, the frame could be reused while a remote TLB still maps it
 * (tlb_bug=free_before_ack shows that).
 *
 * A multi-batch holds one batch per address space and flushes them in one
 * round (flush_tlb_mms: one request per CPU for all the spaces, mm/tlb.c
 * "Batches of address spaces"); the same rule holds for each space, and the
 * caller frees what the spaces shared (a revoked object's frames) only
 * after tlb_multi_batch_flush has returned, when every CPU that could hold
 * any of the spaces' old translations has dropped them.
 */
#include "mm/tlb_batch.h"
#include "trap/panic.h"
#include "arch/layout.h"
#include "mm/pmm.h"
#include "mm/tlb.h"
#include "mm/tlb_hw.h"

void tlb_batch_begin(struct tlb_batch *b, struct mm *mm)
{
	b->mm = mm;
	b->start = UINT64_MAX;
	b->end = 0;
	b->freed_tables = false;
	b->count = 0;
}

void tlb_batch_page(struct tlb_batch *b, uint64_t va)
{
	b->start = MIN(b->start, va);
	b->end = MAX(b->end, va + PAGE_SIZE);
}

void tlb_batch_free_page(struct tlb_batch *b, uint64_t frame)
{
	KASSERT(b->count < TLB_BATCH_FRAMES, "tlb batch overflow (%zu frames)",
		b->count);
	b->frames[b->count++] = frame;
}

void tlb_batch_free_table(struct tlb_batch *b, uint64_t frame)
{
	/* The flush covers a table's walks only through the range batched:
	 * a table is emptied by unmapping a page in it. */
	KASSERT(b->start < b->end,
		"page table %#llx freed with no page batched",
		(unsigned long long)frame);
	tlb_batch_free_page(b, frame);
	b->freed_tables = true;
}

bool tlb_batch_full(const struct tlb_batch *b, size_t room)
{
	return TLB_BATCH_FRAMES - b->count < room;
}

static void free_frames(struct tlb_batch *b)
{
	for (size_t i = 0; i < b->count; i++)
		pmm_free_frame(b->frames[i]);
	b->count = 0;
}

void tlb_batch_flush(struct tlb_batch *b)
{
	/* LAB(L3) begin: flush the batch, then free its frames
	 * keeps: free_frames */
	if (INJECTED(tlb, TLB_BUG_FREE_BEFORE_ACK))
		free_frames(b);
	flush_tlb_mm_range(b->mm, b->start, b->end, PAGE_SHIFT,
			   b->freed_tables ? TLB_TABLES_FREED
					   : TLB_TABLES_KEPT);
	free_frames(b);
	tlb_batch_begin(b, b->mm);
	/* LAB(L3) end */
}

void tlb_multi_batch_begin(struct tlb_multi_batch *mb)
{
	tlb_batch_begin(&mb->now, NULL);
	mb->count = 0;
}

/* The range of the space batched last joins the finished ones. */
static void close_range(struct tlb_multi_batch *mb)
{
	struct tlb_batch *b = &mb->now;

	if (!b->mm)
		return;
	mb->done[mb->count++] = (struct tlb_mm_range){
		.mm = b->mm,
		.start = b->start,
		.end = b->end,
		.freed = b->freed_tables ? TLB_TABLES_FREED : TLB_TABLES_KEPT,
	};
}

struct tlb_batch *tlb_multi_batch_add(struct tlb_multi_batch *mb, struct mm *mm)
{
	struct tlb_batch *b = &mb->now;

	if (b->mm == mm)
		return b;
	if (b->mm && mb->count + 1 == TLB_MULTI_MMS_MAX)
		return NULL;
	close_range(mb);
	/* A new range; the frames batched so far stay. */
	b->mm = mm;
	b->start = UINT64_MAX;
	b->end = 0;
	b->freed_tables = false;
	return b;
}

void tlb_multi_batch_flush(struct tlb_multi_batch *mb)
{
	close_range(mb);
	flush_tlb_mms(mb->done, mb->count);
	free_frames(&mb->now);
	tlb_multi_batch_begin(mb);
}
