/* SPDX-License-Identifier: MIT */
/*
 * The kernel heap: kmalloc/kfree for small objects (size classes carved
 * from pages) and whole contiguous pages for large ones. Thread-safe.
 *
 * heap_debug=on (mm/heap.c says how) poisons freed objects, keeps them in
 * a quarantine before they are reused, and puts red zones around each
 * object; a write after free or past an object's ends panics with a
 * heap_verdict in words.
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
	uint64_t quarantined;  /* freed objects not yet reusable (debug) */
};
void heap_stats(struct heap_stats *out);

/* The debug mode's patterns: a freed object, and a red zone. */
#define HEAP_POISON_FREE    0x6b
#define HEAP_POISON_REDZONE 0xcc

enum heap_damage {
	HEAP_INTACT,
	HEAP_BAD_HEADER,       /* not a heap object in the state expected */
	HEAP_LEFT_REDZONE,     /* written just before the object */
	HEAP_RIGHT_REDZONE,    /* written past its end */
	HEAP_WRITE_AFTER_FREE, /* written while in quarantine or free */
};

/* What a check found; offsets count from the pointer kmalloc returned. */
struct heap_verdict {
	enum heap_damage damage;
	const void *object;
	size_t slot_bytes; /* its size class, or its pages for a large one */
	size_t size;	   /* the bytes asked for */
	long first, last;  /* the damaged bytes (negative: before the object) */
	uint8_t found;	   /* the first damaged byte ... */
	uint8_t expected;  /* ... and what it should hold */
	uint32_t magic;	   /* the header's, for HEAP_BAD_HEADER */
	uint64_t alloc_site, free_site; /* return addresses, 0 if unknown */
};

/* Whether heap_debug=on: the checks below apply only then. */
bool heap_debug_enabled(void);

/* A live object p: are its header and red zones intact? */
bool heap_check_live(const void *p, struct heap_verdict *v);

/*
 * A freed object p, in quarantine or on a free list: is everything after
 * its header still poison? This is the check an object gets when it
 * leaves quarantine and again when it is handed out.
 */
bool heap_check_freed(const void *p, struct heap_verdict *v);

/* The verdict in one line: the object, its size class, what was hit. */
int heap_verdict_format(const struct heap_verdict *v, char *buf, size_t size);

#endif
