/* SPDX-License-Identifier: MIT */
/*
 * Frame allocator bookkeeping: one bit per 4 KiB physical frame between the
 * lowest and highest usable address, set = in use. Pure logic (no locking,
 * no hardware): mm/pmm.c wraps it for the kernel and host unit tests drive it
 * directly.
 *
 * A bitmap rather than a free list: a free list threads through the free
 * frames themselves, so it needs them mapped before the allocator can run,
 * and a double free corrupts it silently; a bitmap lives in one place and
 * catches a double free on the spot.
 */
#ifndef MM_FRAME_ALLOC_H
#define MM_FRAME_ALLOC_H

#include "lib/types.h"

struct frame_alloc {
	uint64_t *bitmap;    /* frame_count bits, 1 = used */
	uint64_t base_frame; /* frame number of bit 0 */
	uint64_t frame_count;
	uint64_t free_count;
	uint64_t hint; /* no free frame below this bit index */
};

/* Bytes of bitmap needed for frame_count frames (whole 64-bit words). */
static inline uint64_t frame_alloc_bitmap_bytes(uint64_t frame_count)
{
	return (frame_count + 63) / 64 * 8;
}

/* Starts with every frame in use; bitmap holds bitmap_bytes(frame_count). */
void frame_alloc_init(struct frame_alloc *fa, uint64_t *bitmap,
		      uint64_t base_frame, uint64_t frame_count);

/*
 * Marks [first, first+count) free. Returns -ERANGE if outside the bitmap,
 * -EINVAL if some of these frames are already free.
 */
int frame_alloc_add_free(struct frame_alloc *fa, uint64_t first,
			 uint64_t count);

/*
 * Allocates count contiguous frames whose first frame number is a multiple
 * of align (a power of two), the lowest such run first. Returns 0 and the
 * first frame in *frame, or -ENOMEM.
 */
int frame_alloc_range(struct frame_alloc *fa, uint64_t count, uint64_t align,
		      uint64_t *frame);

/* Frees count frames from first: -ERANGE outside, -EINVAL on double free. */
int frame_alloc_free(struct frame_alloc *fa, uint64_t first, uint64_t count);

bool frame_alloc_is_free(const struct frame_alloc *fa, uint64_t frame);

#endif
