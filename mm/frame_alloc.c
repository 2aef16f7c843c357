// SPDX-License-Identifier: MIT
#include "mm/frame_alloc.h"
#include "lib/errno.h"

#define BITS_PER_WORD 64

static bool bit_is_set(const uint64_t *bitmap, uint64_t i)
{
	return bitmap[i / BITS_PER_WORD] & (1ULL << (i % BITS_PER_WORD));
}

static void set_bit(uint64_t *bitmap, uint64_t i)
{
	bitmap[i / BITS_PER_WORD] |= 1ULL << (i % BITS_PER_WORD);
}

static void clear_bit(uint64_t *bitmap, uint64_t i)
{
	bitmap[i / BITS_PER_WORD] &= ~(1ULL << (i % BITS_PER_WORD));
}

void frame_alloc_init(struct frame_alloc *fa, uint64_t *bitmap,
		      uint64_t base_frame, uint64_t frame_count)
{
	uint64_t words = frame_alloc_bitmap_bytes(frame_count) / 8;

	fa->bitmap = bitmap;
	fa->base_frame = base_frame;
	fa->frame_count = frame_count;
	fa->free_count = 0;
	fa->hint = frame_count;
	for (uint64_t w = 0; w < words; w++)
		bitmap[w] = ~0ULL;
}

static bool in_range(const struct frame_alloc *fa, uint64_t first,
		     uint64_t count)
{
	return first >= fa->base_frame && count <= fa->frame_count &&
	       first - fa->base_frame <= fa->frame_count - count;
}

int frame_alloc_add_free(struct frame_alloc *fa, uint64_t first, uint64_t count)
{
	uint64_t start;

	if (!in_range(fa, first, count))
		return -ERANGE;
	start = first - fa->base_frame;
	for (uint64_t i = start; i < start + count; i++) {
		if (!bit_is_set(fa->bitmap, i))
			return -EINVAL;
	}
	for (uint64_t i = start; i < start + count; i++)
		clear_bit(fa->bitmap, i);
	fa->free_count += count;
	if (count && start < fa->hint)
		fa->hint = start;
	return 0;
}

bool frame_alloc_is_free(const struct frame_alloc *fa, uint64_t frame)
{
	return in_range(fa, frame, 1) &&
	       !bit_is_set(fa->bitmap, frame - fa->base_frame);
}

/* First index >= from whose bit is clear, skipping full words; or count. */
static uint64_t next_free(const struct frame_alloc *fa, uint64_t from)
{
	uint64_t i = from;

	while (i < fa->frame_count) {
		if (i % BITS_PER_WORD == 0 &&
		    fa->bitmap[i / BITS_PER_WORD] == ~0ULL) {
			i += BITS_PER_WORD;
			continue;
		}
		if (!bit_is_set(fa->bitmap, i))
			return i;
		i++;
	}
	return fa->frame_count;
}

int frame_alloc_range(struct frame_alloc *fa, uint64_t count, uint64_t align,
		      uint64_t *frame)
{
	uint64_t i;

	if (count == 0 || align == 0 || (align & (align - 1)) ||
	    count > fa->free_count)
		return -ENOMEM;
	for (i = next_free(fa, fa->hint); i < fa->frame_count;) {
		uint64_t aligned =
			ALIGN_UP(fa->base_frame + i, align) - fa->base_frame;
		uint64_t run = 0;

		if (aligned >= fa->frame_count ||
		    count > fa->frame_count - aligned)
			break;
		while (run < count && !bit_is_set(fa->bitmap, aligned + run))
			run++;
		if (run == count) {
			for (uint64_t j = aligned; j < aligned + count; j++)
				set_bit(fa->bitmap, j);
			fa->free_count -= count;
			if (aligned == fa->hint)
				fa->hint = next_free(fa, aligned + count);
			*frame = fa->base_frame + aligned;
			return 0;
		}
		i = next_free(fa, aligned + run + 1);
	}
	return -ENOMEM;
}

int frame_alloc_free(struct frame_alloc *fa, uint64_t first, uint64_t count)
{
	return frame_alloc_add_free(fa, first, count);
}
