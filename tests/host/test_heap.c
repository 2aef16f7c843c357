// SPDX-License-Identifier: MIT
/*
 * mm/heap.c on the host: size classes, large allocations and, with
 * heap_debug on, red zones, poison and the quarantine. The host's panic()
 * below records the message and longjmps back to the test, which checks
 * it: each test shows that one kind of damage is caught, and named.
 *
 * mm/heap.c is included, not linked, to reach its state: each test starts
 * from an empty heap. It is built with SHOOTDOWN_SIM and the simulator's
 * arch/x86.h (tests/host/sim_include), whose CLI and STI are the hooks
 * below, and frames come from the host's allocator.
 */
#include "mm/heap.c"
#include "tests/host/host_test.h"

#include <setjmp.h>

#define FRAMES_MAX 4096

/* --- What mm/heap.c needs from the rest of the kernel ------------------------ */

int sim_current(void)
{
	return -1;
}

void sim_point(void)
{
}

void sim_irq_off(void)
{
}

void sim_irq_on(void)
{
}

void *sim_phys_to_virt(uint64_t phys)
{
	return (void *)(uintptr_t)phys;
}

uint64_t sim_virt_to_phys(const void *virt)
{
	return (uint64_t)(uintptr_t)virt;
}

/* Every block of frames handed out and not given back, to free at reset. */
static struct {
	void *p;
	uint64_t count;
} frames[FRAMES_MAX];
static uint64_t frames_out;

uint64_t pmm_alloc_frames(uint64_t count, uint64_t align)
{
	void *p = aligned_alloc(PAGE_SIZE, count * PAGE_SIZE);

	(void)align;
	if (!p)
		return 0;
	memset(p, 0, count * PAGE_SIZE);
	for (size_t i = 0; i < FRAMES_MAX; i++) {
		if (!frames[i].p) {
			frames[i].p = p;
			frames[i].count = count;
			frames_out += count;
			return (uint64_t)(uintptr_t)p;
		}
	}
	free(p);
	return 0;
}

uint64_t pmm_alloc_frame(void)
{
	return pmm_alloc_frames(1, 1);
}

void pmm_free_frames(uint64_t phys, uint64_t count)
{
	for (size_t i = 0; i < FRAMES_MAX; i++) {
		if (frames[i].p == (void *)(uintptr_t)phys) {
			CHECK_EQ(frames[i].count, count);
			free(frames[i].p);
			frames[i].p = NULL;
			frames_out -= count;
			return;
		}
	}
	CHECK(false, "pmm_free_frames(%#llx): not handed out",
	      (unsigned long long)phys);
}

void symbol_format(uint64_t addr, char *buf, size_t size)
{
	snprintf(buf, size, "<site %#llx>", (unsigned long long)addr);
}

static jmp_buf panic_jump;
static bool panic_armed;
static char panic_text[512];

void panic(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kvsnprintf(panic_text, sizeof(panic_text), fmt, ap);
	va_end(ap);
	if (!panic_armed) {
		printf("# unexpected panic: %s\n", panic_text);
		abort();
	}
	panic_armed = false;
	longjmp(panic_jump, 1);
}

/* Runs stmt; true if it panicked, the message then in panic_text. */
#define PANICS(stmt)                            \
	({                                      \
		volatile bool panicked_ = true; \
		panic_text[0] = '\0';           \
		panic_armed = true;             \
		if (!setjmp(panic_jump)) {      \
			stmt;                   \
			panicked_ = false;      \
		}                               \
		panic_armed = false;            \
		panicked_;                      \
	})

/* A fresh, empty heap in the mode asked for; the old one's frames freed. */
static void reset(bool debug)
{
	for (size_t i = 0; i < FRAMES_MAX; i++) {
		free(frames[i].p);
		frames[i].p = NULL;
	}
	frames_out = 0;
	memset(free_lists, 0, sizeof(free_lists));
	memset(quarantine, 0, sizeof(quarantine));
	memset(&stats, 0, sizeof(stats));
	quarantine_head = quarantine_count = 0;
	quarantine_bytes = 0;
	heap_debug_option.choice = debug ? HEAP_DEBUG_ON : HEAP_DEBUG_OFF;
}

static bool holds(const char *text, const char *part)
{
	return CHECK(strstr(text, part), "%s lacks %s", host_quote(text),
		     host_quote(part));
}

/* Frees n fresh objects of size bytes: the quarantine moves n places. */
static void churn(size_t size, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		kfree(kmalloc(size));
}

static const size_t sizes[] = {1,    15,   16,	 17,   100,  1000,
			       1984, 1985, 2032, 2033, 5000, 70000};

/* --- Without debug mode -------------------------------------------------------- */

HOST_TEST(plain_sizes_aligned_reused)
{
	void *p[ARRAY_SIZE(sizes)];

	reset(false);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		p[i] = kmalloc(sizes[i]);
		if (!CHECK(p[i], "kmalloc(%zu)", sizes[i]))
			return;
		CHECK(IS_ALIGNED((uintptr_t)p[i], 16), "%p", p[i]);
		memset(p[i], (int)i, sizes[i]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		const uint8_t *b = p[i];

		CHECK(b[0] == i && b[sizes[i] - 1] == i, "object %zu hit", i);
	}
	CHECK_EQ(stats.live_allocations, ARRAY_SIZE(sizes));
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++)
		kfree(p[i]);
	CHECK_EQ(stats.live_allocations, 0);
	/* The slab pages stay; the large allocations' frames went back. */
	CHECK_EQ(frames_out, stats.pages_in_use);
	/* Without a quarantine the last freed object comes back first. */
	CHECK(kmalloc(100) == p[4], "a freed object is not reused at once");
	CHECK(kmalloc(0) == NULL, "kmalloc(0)");
	CHECK(!heap_debug_enabled(), "debug mode is on");
}

HOST_TEST(plain_double_free_panics)
{
	void *p;

	reset(false);
	p = kmalloc(40);
	kfree(p);
	CHECK(PANICS(kfree(p)), "a double free went through");
	holds(panic_text, "double free");
}

/* --- Debug mode ---------------------------------------------------------------- */

HOST_TEST(debug_layout_red_zones)
{
	void *p[ARRAY_SIZE(sizes)];
	struct heap_verdict v;

	reset(true);
	CHECK(heap_debug_enabled(), "debug mode is off");
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		const uint8_t *b;

		p[i] = kzalloc(sizes[i]);
		if (!CHECK(p[i], "kzalloc(%zu)", sizes[i]))
			return;
		b = p[i];
		CHECK(IS_ALIGNED((uintptr_t)p[i], 16), "%p", p[i]);
		CHECK(b[0] == 0 && b[sizes[i] - 1] == 0, "not zeroed");
		CHECK(b[-1] == HEAP_POISON_REDZONE &&
			      b[-REDZONE] == HEAP_POISON_REDZONE,
		      "left red zone of %zu", sizes[i]);
		for (size_t k = 0; k < REDZONE; k++)
			CHECK(b[sizes[i] + k] == HEAP_POISON_REDZONE,
			      "right red zone of %zu, byte %zu", sizes[i], k);
		CHECK(heap_check_live(p[i], &v), "object of %zu: damage %d",
		      sizes[i], v.damage);
		memset(p[i], 0x41, sizes[i]);
		CHECK(heap_check_live(p[i], &v), "filled object of %zu",
		      sizes[i]);
	}
	/* 1984 bytes and a 64-byte overhead fill the largest class. */
	CHECK_EQ(debug_header(p[6])->size_class, CLASS_COUNT - 1);
	CHECK_EQ(debug_header(p[7])->size_class, CLASS_LARGE);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++)
		kfree(p[i]);
	CHECK_EQ(stats.live_allocations, 0);
	CHECK_EQ(stats.quarantined, ARRAY_SIZE(sizes));
}

HOST_TEST(debug_write_past_end_caught_on_kfree)
{
	uint8_t *p;

	reset(true);
	p = kmalloc(20);
	p[20] = 0x41;
	p[23] = 0x42;
	CHECK(PANICS(kfree(p)), "an overflow went unseen");
	holds(panic_text, "heap: kfree: object");
	holds(panic_text, "size class 128 bytes, 20 asked");
	holds(panic_text, "right red zone");
	holds(panic_text, "bytes 20..23 hold 0x41 first, not 0xcc");
	holds(panic_text, "allocated at <site");

	/* A large one: its red zone runs to the end of its last page. */
	reset(true);
	p = kmalloc(5000);
	p[5000 + 100] = 0;
	CHECK(PANICS(kfree(p)), "a large object's overflow went unseen");
	holds(panic_text, "size class 8192 bytes, 5000 asked");
	holds(panic_text, "bytes 5100..5100 hold 0 first");
}

HOST_TEST(debug_write_before_start_caught_on_kfree)
{
	uint8_t *p;

	reset(true);
	p = kmalloc(64);
	p[-3] = 7;
	CHECK(PANICS(kfree(p)), "an underflow went unseen");
	holds(panic_text, "left red zone");
	holds(panic_text, "bytes -3..-3 hold 0x7 first");
}

HOST_TEST(debug_quarantine_delays_reuse)
{
	void *p, *q;

	reset(true);
	p = kmalloc(100);
	kfree(p);
	for (unsigned i = 0; i + 1 < QUARANTINE_OBJECTS; i++) {
		q = kmalloc(100);
		CHECK(q != p, "reused after %u frees", i);
		kfree(q);
	}
	CHECK_EQ(stats.quarantined, QUARANTINE_OBJECTS);
	/* One more free pushes p out: it is the next one handed out. */
	churn(1000, 1);
	CHECK(kmalloc(100) == p, "not reusable after leaving quarantine");
}

HOST_TEST(debug_write_after_free_caught_leaving_quarantine)
{
	uint8_t *p;
	struct heap_verdict v;
	char text[320];

	reset(true);
	p = kmalloc(100);
	kfree(p);
	CHECK(heap_check_freed(p, &v), "fresh poison seen as damaged");
	p[3] = 0x41;
	CHECK(!heap_check_freed(p, &v), "a write after free unseen");
	CHECK_EQ(v.damage, HEAP_WRITE_AFTER_FREE);
	CHECK_EQ(v.first, 3);
	CHECK_EQ(v.last, 3);
	CHECK_EQ(v.found, 0x41);
	CHECK_EQ(v.expected, HEAP_POISON_FREE);
	CHECK_EQ(v.size, 100);
	heap_verdict_format(&v, text, sizeof(text));
	holds(text, "written after it was freed");
	holds(text, "freed at <site");
	CHECK(PANICS(churn(100, QUARANTINE_OBJECTS)),
	      "left quarantine with a write after free");
	holds(panic_text, "heap: leaving quarantine: object");
	holds(panic_text, "bytes 3..3 hold 0x41 first, not 0x6b");
}

HOST_TEST(debug_write_after_free_caught_on_kmalloc)
{
	uint8_t *p;

	reset(true);
	p = kmalloc(100);
	kfree(p);
	/* Out of quarantine, and the newest object on its free list. */
	churn(1000, QUARANTINE_OBJECTS);
	p[99] = 0;
	CHECK(PANICS(kmalloc(100)), "a write to a free object went unseen");
	holds(panic_text, "heap: kmalloc: object");
	holds(panic_text, "on a free list");
	holds(panic_text, "bytes 99..99 hold 0 first");
}

HOST_TEST(debug_double_free_caught)
{
	void *p;

	reset(true);
	p = kmalloc(8);
	kfree(p);
	CHECK(PANICS(kfree(p)), "a double free went through");
	holds(panic_text, "double free (first freed at <site");
	CHECK(PANICS(kfree((uint8_t *)kmalloc(8) + 16)),
	      "a pointer kmalloc did not return went through");
	holds(panic_text, "header overwritten, or not a heap object");
}

HOST_TEST(debug_quarantine_bounded_by_bytes)
{
	enum { OBJECTS = 40, SIZE = 60000 };
	void *p[OBJECTS];

	reset(true);
	for (unsigned i = 0; i < OBJECTS; i++)
		p[i] = kmalloc(SIZE);
	for (unsigned i = 0; i < OBJECTS; i++) {
		kfree(p[i]);
		CHECK(quarantine_bytes <= QUARANTINE_BYTES, "%llu bytes held",
		      (unsigned long long)quarantine_bytes);
	}
	/* The oldest went back to the frame allocator. */
	CHECK_EQ(frames_out, stats.pages_in_use);
	CHECK(stats.quarantined > 0 && stats.quarantined < OBJECTS,
	      "%llu quarantined", (unsigned long long)stats.quarantined);
	CHECK_EQ(stats.live_allocations, 0);
}

HOST_TEST(debug_random_use_stays_quiet)
{
	enum { SLOTS = 64, ROUNDS = 20000 };
	uint8_t *live[SLOTS] = {0};
	size_t size[SLOTS] = {0};
	struct heap_verdict v;

	host_rand_seed(1);
	reset(true);
	for (unsigned r = 0; r < ROUNDS; r++) {
		unsigned i = (unsigned)host_rand_below(SLOTS);

		if (live[i]) {
			CHECK(heap_check_live(live[i], &v), "round %u", r);
			kfree(live[i]);
			live[i] = NULL;
		} else {
			size[i] = 1 + host_rand_below(
					      host_rand_below(4) ? 300 : 9000);
			live[i] = kmalloc(size[i]);
			memset(live[i], (int)r, size[i]);
		}
	}
	for (unsigned i = 0; i < SLOTS; i++)
		kfree(live[i]);
	CHECK_EQ(stats.live_allocations, 0);
	reset(false);
}
