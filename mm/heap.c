// SPDX-License-Identifier: MIT
/*
 * Every allocation carries a 16-byte header just before the memory handed
 * out: a magic word that says live or free (so kfree catches double frees
 * and foreign pointers), the size class, and the size asked for (large
 * allocations, and every one in debug mode) or, on a free list, the next
 * free object.
 *
 * Small allocations (header included, up to 2 KiB) come from per-class free
 * lists; a class with an empty list takes a fresh page and cuts it into
 * objects. Their pages stay with the heap. Large allocations take
 * contiguous frames from the frame allocator and give them back on kfree.
 *
 * Debug mode (heap_debug=on) catches writes after free and past either end
 * of an object, in the style of Linux's SLUB debugging and KFENCE:
 *
 *	header | sites | left red zone | object | right red zone ... slot end
 *	  16      16         16           size        16 at least
 *
 * The sites are the return addresses of the kmalloc and kfree, for the
 * report. Red zones hold HEAP_POISON_REDZONE and are checked on kfree. A
 * freed object is filled with HEAP_POISON_FREE from its sites to its slot's
 * end and joins a FIFO quarantine: it is reused only after
 * QUARANTINE_OBJECTS later frees (or QUARANTINE_BYTES of them), so a
 * write through a stale pointer lands in poison. The poison is checked when
 * the object leaves quarantine and again when kmalloc hands it out; any
 * damage panics, naming the object, its size class, where it was allocated
 * and freed, and the bytes overwritten. Large allocations go through the
 * same quarantine, their frames held until they leave it.
 *
 * The mode is read once per call from its option, which the command line
 * sets before the frame allocator (and so the heap) starts; with it off
 * kmalloc and kfree pay one predictable branch.
 */
#include "mm/heap.h"
#include "arch/layout.h"
#include "mm/pmm.h"
#include "lib/option.h"
#include "trap/panic.h"
#include "trap/symbols.h"
#include "lib/format.h"
#include "lib/string.h"
#include "sync/spinlock.h"

#define HEAP_MAGIC_LIVE	      0x4c495645U /* "LIVE" */
#define HEAP_MAGIC_FREE	      0x46524545U /* "FREE" */
#define HEAP_MAGIC_QUARANTINE 0x51524e54U /* "QRNT" */
#define CLASS_LARGE	      0xffffffffU
#define SMALLEST_CLASS	      32
#define CLASS_COUNT	      7 /* 32, 64, ..., 2048 bytes */

/* Debug mode's layout (above) and quarantine bounds. */
#define REDZONE		   16
#define DEBUG_PAYLOAD	   (sizeof(struct alloc_header) + 16 + REDZONE)
#define DEBUG_OVERHEAD	   (DEBUG_PAYLOAD + REDZONE)
#define QUARANTINE_OBJECTS 512
#define QUARANTINE_BYTES   MiB(1)

struct alloc_header {
	uint32_t magic;
	uint32_t size_class; /* index, or CLASS_LARGE */
	union {
		uint64_t size;		   /* live or in quarantine */
		struct alloc_header *next; /* on a free list */
	};
};

_Static_assert(sizeof(struct alloc_header) == 16,
	       "the header keeps returned memory 16-byte aligned");

/* Debug mode: between the header and the left red zone. */
struct alloc_sites {
	uint64_t alloc_site, free_site;
};

_Static_assert(DEBUG_PAYLOAD % 16 == 0,
	       "debug mode keeps returned memory 16-byte aligned");

enum { HEAP_DEBUG_OFF, HEAP_DEBUG_ON };
static const char *const heap_debug_words[] = {"off", "on", NULL};
static const struct option_desc heap_debug_desc = {
	.name = "heap_debug",
	.type = OPTION_CHOICE,
	.choices = heap_debug_words,
	.help = "poison, red zones and a quarantine for the kernel heap"};
static struct option_value heap_debug_option;
OPTION(82, heap_debug, &heap_debug_desc, &heap_debug_option, NULL, NULL);

/* lock guards free_lists, the quarantine and stats. */
static struct spinlock lock = SPINLOCK_INIT;
static struct alloc_header *free_lists[CLASS_COUNT];
static struct heap_stats stats;

/* The quarantine: a ring, oldest at quarantine_head. */
static struct alloc_header *quarantine[QUARANTINE_OBJECTS];
static unsigned quarantine_head, quarantine_count;
static uint64_t quarantine_bytes;

static inline bool debug_mode(void)
{
	return heap_debug_option.choice == HEAP_DEBUG_ON;
}

bool heap_debug_enabled(void)
{
	return debug_mode();
}

static size_t class_size(unsigned c)
{
	return (size_t)SMALLEST_CLASS << c;
}

static size_t header_bytes(void)
{
	return debug_mode() ? DEBUG_OVERHEAD : sizeof(struct alloc_header);
}

static uint64_t large_pages(size_t size)
{
	return ALIGN_UP(size + header_bytes(), PAGE_SIZE) / PAGE_SIZE;
}

static size_t slot_bytes(const struct alloc_header *h)
{
	if (h->size_class == CLASS_LARGE)
		return large_pages(h->size) * PAGE_SIZE;
	return class_size(h->size_class);
}

static bool refill_locked(unsigned c)
{
	uint64_t frame = pmm_alloc_frame();
	uint8_t *page;

	if (!frame)
		return false;
	page = phys_to_virt(frame);
	/* A new object must pass the check of a freed one. */
	if (debug_mode())
		memset(page, HEAP_POISON_FREE, PAGE_SIZE);
	for (size_t off = 0; off + class_size(c) <= PAGE_SIZE;
	     off += class_size(c)) {
		struct alloc_header *o = (void *)(page + off);

		o->magic = HEAP_MAGIC_FREE;
		o->size_class = c;
		o->next = free_lists[c];
		free_lists[c] = o;
	}
	stats.pages_in_use++;
	return true;
}

/* A free object of class c, counted live, or NULL. */
static struct alloc_header *take_free(unsigned c)
{
	struct alloc_header *o;
	uint64_t flags = spin_lock_irqsave(&lock);

	if (!free_lists[c] && !refill_locked(c)) {
		spin_unlock_irqrestore(&lock, flags);
		return NULL;
	}
	o = free_lists[c];
	free_lists[c] = o->next;
	stats.live_allocations++;
	spin_unlock_irqrestore(&lock, flags);
	return o;
}

static void put_free_locked(struct alloc_header *h)
{
	h->magic = HEAP_MAGIC_FREE;
	h->next = free_lists[h->size_class];
	free_lists[h->size_class] = h;
}

/* Frames for a large allocation of size bytes, counted live, or NULL. */
static struct alloc_header *alloc_large(size_t size)
{
	uint64_t pages = large_pages(size);
	uint64_t frame = pmm_alloc_frames(pages, 1);
	struct alloc_header *h;
	uint64_t flags;

	if (!frame)
		return NULL;
	h = phys_to_virt(frame);
	*h = (struct alloc_header){.magic = HEAP_MAGIC_LIVE,
				   .size_class = CLASS_LARGE,
				   .size = size};
	flags = spin_lock_irqsave(&lock);
	stats.pages_in_use += pages;
	stats.live_allocations++;
	spin_unlock_irqrestore(&lock, flags);
	return h;
}

/* was_live: still counted live (not coming out of quarantine). */
static void free_large(struct alloc_header *h, bool was_live)
{
	uint64_t pages = large_pages(h->size);
	uint64_t flags = spin_lock_irqsave(&lock);

	stats.pages_in_use -= pages;
	if (was_live)
		stats.live_allocations--;
	spin_unlock_irqrestore(&lock, flags);
	pmm_free_frames(virt_to_phys(h), pages);
}

/* --- Debug mode ------------------------------------------------------------ */

static struct alloc_header *debug_header(const void *p)
{
	return (struct alloc_header *)((uintptr_t)p - DEBUG_PAYLOAD);
}

static struct alloc_sites *debug_sites(struct alloc_header *h)
{
	return (struct alloc_sites *)(h + 1);
}

/* Eight bytes read as one; the scans below cover kilobytes per check. */
typedef uint64_t __attribute__((may_alias)) heap_word;

/*
 * The first and last bytes of [p, p + n) that differ from pattern; false
 * when every byte matches.
 */
static bool find_damage(const uint8_t *p, size_t n, uint8_t pattern,
			size_t *first, size_t *last)
{
	const uint64_t word = 0x0101010101010101ULL * pattern;
	size_t i = 0, j = n;

	while (i < n && !IS_ALIGNED((uintptr_t)(p + i), 8) && p[i] == pattern)
		i++;
	while (i + 8 <= n && IS_ALIGNED((uintptr_t)(p + i), 8) &&
	       *(const heap_word *)(p + i) == word)
		i += 8;
	while (i < n && p[i] == pattern)
		i++;
	if (i == n)
		return false;
	while (p[j - 1] == pattern)
		j--;
	*first = i;
	*last = j - 1;
	return true;
}

static bool header_sane(const struct alloc_header *h)
{
	if (h->size_class == CLASS_LARGE)
		return h->size > 0 && h->size <= SIZE_MAX / 2;
	return h->size_class < CLASS_COUNT &&
	       class_size(h->size_class) >= DEBUG_OVERHEAD;
}

/* Fills what every verdict on the object at p says; false: bad header. */
static bool verdict_start(const void *p, struct heap_verdict *v,
			  uint32_t magic_a, uint32_t magic_b)
{
	struct alloc_header *h = debug_header(p);

	*v = (struct heap_verdict){.object = p, .magic = h->magic};
	if ((h->magic != magic_a && h->magic != magic_b) || !header_sane(h) ||
	    (h->magic != HEAP_MAGIC_FREE &&
	     h->size + DEBUG_OVERHEAD > slot_bytes(h))) {
		v->damage = HEAP_BAD_HEADER;
		return false;
	}
	v->slot_bytes = slot_bytes(h);
	/* On a free list the size's place holds the link. */
	v->size = h->magic == HEAP_MAGIC_FREE ? 0 : h->size;
	v->alloc_site = debug_sites(h)->alloc_site;
	v->free_site = debug_sites(h)->free_site;
	return true;
}

static bool damaged(struct heap_verdict *v, enum heap_damage what,
		    const uint8_t *from, size_t n, uint8_t pattern)
{
	size_t first, last;

	if (!find_damage(from, n, pattern, &first, &last))
		return false;
	v->damage = what;
	v->first = (long)((uintptr_t)from - (uintptr_t)v->object + first);
	v->last = (long)((uintptr_t)from - (uintptr_t)v->object + last);
	v->found = from[first];
	v->expected = pattern;
	return true;
}

bool heap_check_live(const void *p, struct heap_verdict *v)
{
	const uint8_t *b = p;

	if (!verdict_start(p, v, HEAP_MAGIC_LIVE, HEAP_MAGIC_LIVE))
		return false;
	return !damaged(v, HEAP_LEFT_REDZONE, b - REDZONE, REDZONE,
			HEAP_POISON_REDZONE) &&
	       !damaged(v, HEAP_RIGHT_REDZONE, b + v->size,
			v->slot_bytes - DEBUG_PAYLOAD - v->size,
			HEAP_POISON_REDZONE);
}

bool heap_check_freed(const void *p, struct heap_verdict *v)
{
	const uint8_t *b = p;

	if (!verdict_start(p, v, HEAP_MAGIC_QUARANTINE, HEAP_MAGIC_FREE))
		return false;
	return !damaged(v, HEAP_WRITE_AFTER_FREE, b - REDZONE,
			v->slot_bytes - DEBUG_PAYLOAD + REDZONE,
			HEAP_POISON_FREE);
}

int heap_verdict_format(const struct heap_verdict *v, char *buf, size_t size)
{
	static const char *const what[] = {
		[HEAP_INTACT] = "intact",
		[HEAP_BAD_HEADER] = "header overwritten, or not a heap object "
				    "in that state",
		[HEAP_LEFT_REDZONE] = "written before its start (left red "
				      "zone)",
		[HEAP_RIGHT_REDZONE] = "written past its end (right red zone)",
		[HEAP_WRITE_AFTER_FREE] = "written after it was freed",
	};
	char alloc_site[64], free_site[64];
	int used;

	if (v->damage == HEAP_BAD_HEADER)
		return ksnprintf(buf, size, "object %p: %s (magic %#x)",
				 v->object, what[v->damage], v->magic);
	symbol_format(v->alloc_site, alloc_site, sizeof(alloc_site));
	symbol_format(v->free_site, free_site, sizeof(free_site));
	used = v->size ? ksnprintf(buf, size,
				   "object %p, size class %zu bytes, %zu "
				   "asked: %s",
				   v->object, v->slot_bytes, v->size,
				   what[v->damage])
		       : ksnprintf(buf, size,
				   "object %p, size class %zu bytes, on a free "
				   "list: %s",
				   v->object, v->slot_bytes, what[v->damage]);
	if (v->damage != HEAP_INTACT && used >= 0 && (size_t)used < size)
		used += ksnprintf(buf + used, size - used,
				  ": bytes %ld..%ld hold %#x first, not %#x",
				  v->first, v->last, v->found, v->expected);
	if (used >= 0 && (size_t)used < size)
		used += ksnprintf(buf + used, size - used,
				  "; allocated at %s, freed at %s", alloc_site,
				  v->free_site ? free_site : "-");
	return used;
}

static __noreturn void damage_panic(const char *when,
				    const struct heap_verdict *v)
{
	char text[320];

	heap_verdict_format(v, text, sizeof(text));
	panic("heap: %s: %s", when, text);
}

/* An object leaving quarantine: its poison checked, then reusable. */
static void quarantine_retire(struct alloc_header *h)
{
	struct heap_verdict v;
	const void *p = (uint8_t *)h + DEBUG_PAYLOAD;
	uint64_t flags;

	if (!heap_check_freed(p, &v))
		damage_panic("leaving quarantine", &v);
	if (h->size_class == CLASS_LARGE) {
		free_large(h, false);
		return;
	}
	flags = spin_lock_irqsave(&lock);
	put_free_locked(h);
	spin_unlock_irqrestore(&lock, flags);
}

static struct alloc_header *quarantine_pop_locked(void)
{
	struct alloc_header *h = quarantine[quarantine_head];

	quarantine_head = (quarantine_head + 1) % QUARANTINE_OBJECTS;
	quarantine_count--;
	quarantine_bytes -= slot_bytes(h);
	stats.quarantined--;
	return h;
}

static __noinline void *kmalloc_debug(size_t size, uint64_t site)
{
	struct alloc_header *h;
	struct heap_verdict v;
	unsigned c = 0;
	uint8_t *p;

	if (size == 0 || size > SIZE_MAX / 2)
		return NULL;
	while (c < CLASS_COUNT && class_size(c) < size + DEBUG_OVERHEAD)
		c++;
	if (c == CLASS_COUNT) {
		h = alloc_large(size);
		if (!h)
			return NULL;
	} else {
		h = take_free(c);
		if (!h)
			return NULL;
		/* Written while it sat on the free list? */
		if (!heap_check_freed((uint8_t *)h + DEBUG_PAYLOAD, &v))
			damage_panic("kmalloc", &v);
		h->magic = HEAP_MAGIC_LIVE;
		h->size = size;
	}
	*debug_sites(h) = (struct alloc_sites){site, 0};
	p = (uint8_t *)h + DEBUG_PAYLOAD;
	memset(p - REDZONE, HEAP_POISON_REDZONE, REDZONE);
	/* A field read before it is written reads poison, as after free. */
	memset(p, HEAP_POISON_FREE, size);
	memset(p + size, HEAP_POISON_REDZONE,
	       slot_bytes(h) - DEBUG_PAYLOAD - size);
	return p;
}

static __noinline void kfree_debug(void *p, uint64_t site)
{
	struct alloc_header *h = debug_header(p), *victim = NULL;
	struct heap_verdict v;
	uint64_t flags;
	size_t bytes;

	if (h->magic == HEAP_MAGIC_QUARANTINE || h->magic == HEAP_MAGIC_FREE) {
		char first[64];

		symbol_format(debug_sites(h)->free_site, first, sizeof(first));
		panic("kfree(%p): double free (first freed at %s)", p, first);
	}
	if (!heap_check_live(p, &v))
		damage_panic("kfree", &v);
	bytes = slot_bytes(h);
	debug_sites(h)->free_site = site;
	memset(debug_sites(h) + 1, HEAP_POISON_FREE,
	       bytes - sizeof(*h) - sizeof(struct alloc_sites));
	h->magic = HEAP_MAGIC_QUARANTINE;

	flags = spin_lock_irqsave(&lock);
	stats.live_allocations--;
	if (quarantine_count == QUARANTINE_OBJECTS)
		victim = quarantine_pop_locked();
	quarantine[(quarantine_head + quarantine_count) % QUARANTINE_OBJECTS] =
		h;
	quarantine_count++;
	quarantine_bytes += bytes;
	stats.quarantined++;
	if (!victim && quarantine_bytes > QUARANTINE_BYTES)
		victim = quarantine_pop_locked();
	spin_unlock_irqrestore(&lock, flags);
	/* Checked outside the lock: nobody else can reach a victim. */
	while (victim) {
		quarantine_retire(victim);
		flags = spin_lock_irqsave(&lock);
		victim = quarantine_bytes > QUARANTINE_BYTES
				 ? quarantine_pop_locked()
				 : NULL;
		spin_unlock_irqrestore(&lock, flags);
	}
}

/* --- The allocator ----------------------------------------------------------- */

static void *kmalloc_plain(size_t size)
{
	struct alloc_header *o;
	unsigned c = 0;

	if (size == 0 || size > SIZE_MAX / 2)
		return NULL;
	while (c < CLASS_COUNT &&
	       class_size(c) < size + sizeof(struct alloc_header))
		c++;
	o = c == CLASS_COUNT ? alloc_large(size) : take_free(c);
	if (!o)
		return NULL;
	o->magic = HEAP_MAGIC_LIVE;
	return o + 1;
}

void *kmalloc(size_t size)
{
	if (unlikely(debug_mode()))
		return kmalloc_debug(size,
				     (uint64_t)__builtin_return_address(0));
	return kmalloc_plain(size);
}

void *kzalloc(size_t size)
{
	void *p;

	if (unlikely(debug_mode()))
		p = kmalloc_debug(size, (uint64_t)__builtin_return_address(0));
	else
		p = kmalloc_plain(size);
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
	if (unlikely(debug_mode())) {
		kfree_debug(p, (uint64_t)__builtin_return_address(0));
		return;
	}
	h = (struct alloc_header *)p - 1;
	if (h->magic != HEAP_MAGIC_LIVE)
		panic("kfree(%p): %s", p,
		      h->magic == HEAP_MAGIC_FREE ? "double free"
						  : "not from kmalloc");
	if (h->size_class == CLASS_LARGE) {
		h->magic = HEAP_MAGIC_FREE;
		free_large(h, true);
		return;
	}
	KASSERT(h->size_class < CLASS_COUNT, "kfree(%p): size class %u", p,
		h->size_class);
	flags = spin_lock_irqsave(&lock);
	put_free_locked(h);
	stats.live_allocations--;
	spin_unlock_irqrestore(&lock, flags);
}

void heap_stats(struct heap_stats *out)
{
	uint64_t flags = spin_lock_irqsave(&lock);

	*out = stats;
	spin_unlock_irqrestore(&lock, flags);
}
