// SPDX-License-Identifier: MIT
#include "mm/memmap.h"
#include "arch/consts.h"

static void sort_ranges(struct phys_range *r, size_t n)
{
	/* Insertion sort: maps have tens of entries. */
	for (size_t i = 1; i < n; i++) {
		struct phys_range key = r[i];
		size_t j = i;

		while (j && r[j - 1].start > key.start) {
			r[j] = r[j - 1];
			j--;
		}
		r[j] = key;
	}
}

/* Merges overlapping and touching ranges of a sorted list; returns the count. */
static size_t merge_ranges(struct phys_range *r, size_t n)
{
	size_t out = 0;

	for (size_t i = 0; i < n; i++) {
		if (out && r[i].start <= r[out - 1].end) {
			if (r[i].end > r[out - 1].end)
				r[out - 1].end = r[i].end;
		} else {
			r[out++] = r[i];
		}
	}
	return out;
}

/*
 * Removes [hole_start, hole_end) from the list. A range with the hole in its
 * middle splits in two; when there is no room for the second piece the
 * smaller piece is dropped and *truncated set.
 */
static size_t cut_hole(struct phys_range *r, size_t n, size_t max,
		       uint64_t hole_start, uint64_t hole_end, bool *truncated)
{
	/* Empty or backwards: removes nothing (must not split a range). */
	if (hole_start >= hole_end)
		return n;
	for (size_t i = 0; i < n; i++) {
		struct phys_range cur = r[i];

		if (hole_end <= cur.start || hole_start >= cur.end)
			continue;
		if (hole_start > cur.start && hole_end < cur.end) {
			struct phys_range low = {cur.start, hole_start};
			struct phys_range high = {hole_end, cur.end};

			if (n < max) {
				r[i] = low;
				for (size_t j = n; j > i + 1; j--)
					r[j] = r[j - 1];
				r[i + 1] = high;
				n++;
				i++;
			} else {
				*truncated = true;
				r[i] = (low.end - low.start >=
					high.end - high.start)
					       ? low
					       : high;
			}
		} else if (hole_start <= cur.start && hole_end >= cur.end) {
			for (size_t j = i; j + 1 < n; j++)
				r[j] = r[j + 1];
			n--;
			i--;
		} else if (hole_start <= cur.start) {
			r[i].start = hole_end;
		} else {
			r[i].end = hole_start;
		}
	}
	return n;
}

static uint64_t page_up(uint64_t x)
{
	/* Saturates instead of wrapping near the top of the address space. */
	return x > UINT64_MAX - (PAGE_SIZE - 1)
		       ? ALIGN_DOWN(UINT64_MAX, PAGE_SIZE)
		       : ALIGN_UP(x, PAGE_SIZE);
}

size_t memmap_usable(const struct mb2_region *regions, size_t n,
		     const struct phys_range *reserved, size_t n_reserved,
		     struct phys_range *out, size_t max_out, bool *truncated)
{
	size_t count = 0;

	*truncated = false;
	for (size_t i = 0; i < n; i++) {
		uint64_t start, end;

		if (regions[i].type != MB2_MMAP_AVAILABLE)
			continue;
		start = page_up(regions[i].base);
		end = ALIGN_DOWN(regions[i].base + regions[i].length,
				 PAGE_SIZE);
		if (regions[i].base + regions[i].length < regions[i].base)
			end = ALIGN_DOWN(UINT64_MAX, PAGE_SIZE);
		if (start >= end)
			continue;
		if (count == max_out) {
			*truncated = true;
			continue;
		}
		out[count++] = (struct phys_range){start, end};
	}
	sort_ranges(out, count);
	count = merge_ranges(out, count);

	for (size_t i = 0; i < n; i++) {
		uint64_t end = regions[i].base + regions[i].length;

		if (regions[i].type == MB2_MMAP_AVAILABLE)
			continue;
		if (end < regions[i].base)
			end = UINT64_MAX;
		count = cut_hole(out, count, max_out,
				 ALIGN_DOWN(regions[i].base, PAGE_SIZE),
				 page_up(end), truncated);
	}
	for (size_t i = 0; i < n_reserved; i++)
		count = cut_hole(out, count, max_out,
				 ALIGN_DOWN(reserved[i].start, PAGE_SIZE),
				 page_up(reserved[i].end), truncated);
	return count;
}

uint64_t memmap_top(const struct mb2_region *regions, size_t n, uint32_t type)
{
	uint64_t top = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t end = regions[i].base + regions[i].length;

		if (regions[i].type == type && end > top)
			top = end;
	}
	return top;
}
