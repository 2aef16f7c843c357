/* SPDX-License-Identifier: MIT */
/*
 * From the firmware memory map to the list of physical ranges the frame
 * allocator may hand out. Pure logic: host unit tests run it on crafted maps.
 */
#ifndef MM_MEMMAP_H
#define MM_MEMMAP_H

#include "lib/types.h"
#include "boot/multiboot2.h"

struct phys_range {
	uint64_t start; /* inclusive */
	uint64_t end;	/* exclusive */
};

/*
 * Usable RAM: the available regions shrunk inward to whole pages, minus
 * every other region of the map (firmware maps sometimes overlap; a
 * non-available region always wins) and minus the reserved ranges (grown
 * outward to whole pages). The result is sorted and has no overlaps or
 * touching neighbours. Returns the number of ranges written to out (at most
 * max_out); *truncated says whether some had to be dropped for lack of room.
 */
size_t memmap_usable(const struct mb2_region *regions, size_t n,
		     const struct phys_range *reserved, size_t n_reserved,
		     struct phys_range *out, size_t max_out, bool *truncated);

/* Highest end address of any region of the given type (0 if none). */
uint64_t memmap_top(const struct mb2_region *regions, size_t n, uint32_t type);

#endif
