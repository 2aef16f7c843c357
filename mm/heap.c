// SPDX-License-Identifier: MIT
/*
 * Every allocation carries a 16-byte header just before the memory handed
 * out: a magic word that says live or free (so kfree catches double frees
 * and foreign pointers), the size class, and for large allocations the page
 * count.
 *
 * Small allocations (header included, up to 2 KiB) come from per-class free
 * lists; a class with an empty list takes a fresh page and cuts it into
 * objects. Their pages stay with the heap. Large allocations take
 * contiguous frames from the frame allocator and give them back on kfree.
 */
#include "mm/heap.h"
#include "mm/layout.h"
#include "mm/pmm.h"
#include "kernel/panic.h"
#include "lib/string.h"
#include "smp/spinlock.h"

#define HEAP_MAGIC_LIVE 0x4c495645U /* "LIVE" */
#define HEAP_MAGIC_FREE 0x46524545U /* "FREE" */
#define CLASS_LARGE	0xffffffffU
#define SMALLEST_CLASS	32
#define CLASS_COUNT	7 /* 32, 64, ..., 2048 bytes */

struct alloc_header {
	uint32_t magic;
	uint32_t size_class; /* index, or CLASS_LARGE */
	uint64_t pages;	     /* large allocations only */
};

_Static_assert(sizeof(struct alloc_header) == 16,
	       "the header keeps returned memory 16-byte aligned");

struct free_object {
	struct alloc_header header;
	struct free_object *next;
};

/* lock guards free_lists and stats. */
static struct spinlock lock = SPINLOCK_INIT;
static struct free_object *free_lists[CLASS_COUNT];
static struct heap_stats stats;

static size_t class_size(unsigned c)
{
	return (size_t)SMALLEST_CLASS << c;
}

static bool refill_locked(unsigned c)
{
	uint64_t frame = pmm_alloc_frame();
	uint8_t *page;

	if (!frame)
		return false;
	page = phys_to_virt(frame);
	for (size_t off = 0; off + class_size(c) <= PAGE_SIZE;
	     off += class_size(c)) {
		struct free_object *o = (void *)(page + off);

		o->header.magic = HEAP_MAGIC_FREE;
		o->header.size_class = c;
		o->next = free_lists[c];
		free_lists[c] = o;
	}
	stats.pages_in_use++;
	return true;
}

static void *alloc_large(size_t size)
{
	uint64_t pages =
		ALIGN_UP(size + sizeof(struct alloc_header), PAGE_SIZE) /
		PAGE_SIZE;
	uint64_t frame = pmm_alloc_frames(pages, 1);
	struct alloc_header *h;
	uint64_t flags;

	if (!frame)
		return NULL;
	h = phys_to_virt(frame);
	*h = (struct alloc_header){HEAP_MAGIC_LIVE, CLASS_LARGE, pages};
	flags = spin_lock_irqsave(&lock);
	stats.pages_in_use += pages;
	stats.live_allocations++;
	spin_unlock_irqrestore(&lock, flags);
	return h + 1;
}

void *kmalloc(size_t size)
{
	struct free_object *o;
	unsigned c = 0;
	uint64_t flags;

	if (size == 0 || size > SIZE_MAX / 2)
		return NULL;
	while (c < CLASS_COUNT &&
	       class_size(c) < size + sizeof(struct alloc_header))
		c++;
	if (c == CLASS_COUNT)
		return alloc_large(size);

	flags = spin_lock_irqsave(&lock);
	if (!free_lists[c] && !refill_locked(c)) {
		spin_unlock_irqrestore(&lock, flags);
		return NULL;
	}
	o = free_lists[c];
	free_lists[c] = o->next;
	o->header.magic = HEAP_MAGIC_LIVE;
	stats.live_allocations++;
	spin_unlock_irqrestore(&lock, flags);
	return &o->header + 1;
}

void *kzalloc(size_t size)
{
	void *p = kmalloc(size);

	if (p)
		memset(p, 0, size);
	return p;
}

void kfree(void *p)
{
	struct alloc_header *h;
	uint64_t flags;

	if (!p)
		return;
	h = (struct alloc_header *)p - 1;
	if (h->magic != HEAP_MAGIC_LIVE)
		panic("kfree(%p): %s", p,
		      h->magic == HEAP_MAGIC_FREE ? "double free"
						  : "not from kmalloc");
	if (h->size_class == CLASS_LARGE) {
		uint64_t pages = h->pages;

		h->magic = HEAP_MAGIC_FREE;
		flags = spin_lock_irqsave(&lock);
		stats.pages_in_use -= pages;
		stats.live_allocations--;
		spin_unlock_irqrestore(&lock, flags);
		pmm_free_frames(virt_to_phys(h), pages);
		return;
	}
	KASSERT(h->size_class < CLASS_COUNT, "kfree(%p): size class %u", p,
		h->size_class);
	flags = spin_lock_irqsave(&lock);
	h->magic = HEAP_MAGIC_FREE;
	((struct free_object *)h)->next = free_lists[h->size_class];
	free_lists[h->size_class] = (struct free_object *)h;
	stats.live_allocations--;
	spin_unlock_irqrestore(&lock, flags);
}

void heap_stats(struct heap_stats *out)
{
	uint64_t flags = spin_lock_irqsave(&lock);

	*out = stats;
	spin_unlock_irqrestore(&lock, flags);
}
