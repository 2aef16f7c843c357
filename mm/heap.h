/* SPDX-License-Identifier: MIT */
/*
 * The kernel heap: kmalloc/kfree for small objects (size classes carved
 * from pages) and whole contiguous pages for large ones. Thread-safe.
 */
#ifndef MM_HEAP_H
#define MM_HEAP_H

#include "lib/types.h"

/* Memory aligned to 16 bytes, or NULL when out of memory or size is 0. */
void *kmalloc(size_t size);
/* Like kmalloc, zero-filled. */
void *kzalloc(size_t size);
/* NULL is ignored; a pointer kmalloc did not return, or a double free, panics. */
void kfree(void *p);

struct heap_stats {
	uint64_t live_allocations;
	uint64_t pages_in_use; /* slab pages and large allocations */
};
void heap_stats(struct heap_stats *out);

#endif
