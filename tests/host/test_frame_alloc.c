// SPDX-License-Identifier: MIT
/*
 * mm/frame_alloc.c: the bitmap frame allocator. Each allocator gets a heap
 * bitmap of exactly frame_alloc_bitmap_bytes() bytes, so ASan sees any
 * access past it; a random test then runs long sequences of operations
 * against a plain array of booleans.
 */
#include "mm/frame_alloc.h"
#include "lib/errno.h"
#include "tests/host/host_test.h"

static struct frame_alloc fa;
static uint64_t *bitmap;

static void setup(uint64_t base_frame, uint64_t frame_count)
{
	size_t bytes = (size_t)frame_alloc_bitmap_bytes(frame_count);

	free(bitmap);
	/* malloc(0) is fine: nothing may be read from an empty bitmap. */
	bitmap = malloc(bytes);
	memset(bitmap, 0x5a, bytes); /* init must set every word */
	frame_alloc_init(&fa, bitmap, base_frame, frame_count);
}

static int alloc1(uint64_t *frame)
{
	return frame_alloc_range(&fa, 1, 1, frame);
}

/* Frames [first, first+count) are all free or all used. */
static bool all_are(uint64_t first, uint64_t count, bool want_free)
{
	for (uint64_t f = first; f < first + count; f++) {
		if (frame_alloc_is_free(&fa, f) != want_free)
			return false;
	}
	return true;
}

HOST_TEST(bitmap_size)
{
	CHECK_EQ(frame_alloc_bitmap_bytes(0), 0);
	CHECK_EQ(frame_alloc_bitmap_bytes(1), 8);
	CHECK_EQ(frame_alloc_bitmap_bytes(64), 8);
	CHECK_EQ(frame_alloc_bitmap_bytes(65), 16);
	CHECK_EQ(frame_alloc_bitmap_bytes(128), 16);
	CHECK_EQ(frame_alloc_bitmap_bytes(129), 24);
	CHECK_EQ(frame_alloc_bitmap_bytes(1ULL << 40), 1ULL << 37);
}

HOST_TEST(init_all_used)
{
	uint64_t frame = 0xdead;

	setup(0, 100);
	CHECK_EQ(fa.free_count, 0);
	CHECK_EQ(fa.frame_count, 100);
	CHECK(all_are(0, 100, false), "a frame is free after init");
	CHECK(bitmap[0] == ~0ULL && bitmap[1] == ~0ULL, "bitmap %#llx %#llx",
	      (unsigned long long)bitmap[0], (unsigned long long)bitmap[1]);
	CHECK_EQ(alloc1(&frame), -ENOMEM);
	CHECK_EQ(frame, 0xdead);
	CHECK_EQ(frame_alloc_range(&fa, 4, 4, &frame), -ENOMEM);

	/* No frames at all. */
	setup(10, 0);
	CHECK_EQ(alloc1(&frame), -ENOMEM);
	CHECK(!frame_alloc_is_free(&fa, 10), "frame 10 free");
	CHECK_EQ(frame_alloc_add_free(&fa, 10, 0), 0);
	CHECK_EQ(frame_alloc_add_free(&fa, 10, 1), -ERANGE);
}

HOST_TEST(add_free)
{
	setup(0, 100);
	CHECK_EQ(frame_alloc_add_free(&fa, 10, 10), 0);
	CHECK_EQ(fa.free_count, 10);
	CHECK(all_are(10, 10, true), "[10, 20) not free");
	CHECK(!frame_alloc_is_free(&fa, 9) && !frame_alloc_is_free(&fa, 20),
	      "neighbours freed");
	/* Overlapping frames already free: refused whole. */
	CHECK_EQ(frame_alloc_add_free(&fa, 15, 10), -EINVAL);
	CHECK_EQ(frame_alloc_add_free(&fa, 5, 6), -EINVAL);
	CHECK_EQ(frame_alloc_add_free(&fa, 19, 1), -EINVAL);
	CHECK_EQ(fa.free_count, 10);
	CHECK(all_are(0, 10, false) && all_are(20, 80, false),
	      "a refused add changed something");
	/* Adjacent: fine. Up to the very end: fine. Zero frames: nothing. */
	CHECK_EQ(frame_alloc_add_free(&fa, 20, 5), 0);
	CHECK_EQ(frame_alloc_add_free(&fa, 90, 10), 0);
	CHECK_EQ(frame_alloc_add_free(&fa, 50, 0), 0);
	CHECK_EQ(frame_alloc_add_free(&fa, 100, 0), 0);
	CHECK_EQ(fa.free_count, 25);
	CHECK(all_are(90, 10, true) && all_are(25, 65, false), "wrong frames");
}

HOST_TEST(out_of_range)
{
	setup(1000, 50);
	CHECK_EQ(frame_alloc_add_free(&fa, 999, 1), -ERANGE);
	CHECK_EQ(frame_alloc_add_free(&fa, 999, 2), -ERANGE);
	CHECK_EQ(frame_alloc_add_free(&fa, 1049, 2), -ERANGE);
	CHECK_EQ(frame_alloc_add_free(&fa, 1050, 1), -ERANGE);
	CHECK_EQ(frame_alloc_add_free(&fa, 1000, 51), -ERANGE);
	CHECK_EQ(frame_alloc_add_free(&fa, 0, 1), -ERANGE);
	/* first + count wrapping past 2^64 */
	CHECK_EQ(frame_alloc_add_free(&fa, UINT64_MAX, 2), -ERANGE);
	CHECK_EQ(frame_alloc_add_free(&fa, 1001, UINT64_MAX), -ERANGE);
	CHECK_EQ(frame_alloc_free(&fa, 2000, 1), -ERANGE);
	CHECK_EQ(frame_alloc_free(&fa, 1049, 2), -ERANGE);
	CHECK_EQ(fa.free_count, 0);
	/* The edges themselves are in range. */
	CHECK_EQ(frame_alloc_add_free(&fa, 1000, 1), 0);
	CHECK_EQ(frame_alloc_add_free(&fa, 1049, 1), 0);
	CHECK(frame_alloc_is_free(&fa, 1000) && frame_alloc_is_free(&fa, 1049),
	      "edges not free");
	CHECK(!frame_alloc_is_free(&fa, 999) &&
		      !frame_alloc_is_free(&fa, 1050) &&
		      !frame_alloc_is_free(&fa, 0) &&
		      !frame_alloc_is_free(&fa, UINT64_MAX),
	      "outside counts as free");
}

HOST_TEST(alloc_lowest_first_until_empty)
{
	uint64_t frame;
	bool seen[100] = {false};

	setup(0, 100);
	CHECK_EQ(frame_alloc_add_free(&fa, 60, 40), 0);
	CHECK_EQ(frame_alloc_add_free(&fa, 0, 30), 0);
	for (uint64_t want = 0; want < 100; want++) {
		if (want == 30)
			want = 60;
		if (!CHECK_EQ(alloc1(&frame), 0))
			return;
		CHECK_EQ(frame, want);
		CHECK(frame < 100 && !seen[frame], "frame %llu twice",
		      (unsigned long long)frame);
		seen[frame < 100 ? frame : 0] = true;
		CHECK(!frame_alloc_is_free(&fa, frame), "allocated yet free");
	}
	CHECK_EQ(fa.free_count, 0);
	CHECK_EQ(alloc1(&frame), -ENOMEM);
}

HOST_TEST(free_and_realloc)
{
	uint64_t frame;

	setup(0, 64);
	CHECK_EQ(frame_alloc_add_free(&fa, 0, 64), 0);
	for (int i = 0; i < 64; i++)
		alloc1(&frame);
	CHECK_EQ(fa.free_count, 0);
	CHECK_EQ(frame_alloc_free(&fa, 42, 1), 0);
	CHECK_EQ(fa.free_count, 1);
	CHECK_EQ(alloc1(&frame), 0);
	CHECK_EQ(frame, 42);
	/* Freed out of order, handed back lowest first. */
	CHECK_EQ(frame_alloc_free(&fa, 50, 1), 0);
	CHECK_EQ(frame_alloc_free(&fa, 7, 1), 0);
	CHECK_EQ(frame_alloc_free(&fa, 63, 1), 0);
	CHECK_EQ(frame_alloc_free(&fa, 20, 3), 0);
	CHECK_EQ(fa.free_count, 6);
	static const uint64_t order[] = {7, 20, 21, 22, 50, 63};
	for (size_t i = 0; i < ARRAY_SIZE(order); i++) {
		CHECK_EQ(alloc1(&frame), 0);
		CHECK_EQ(frame, order[i]);
	}
	CHECK_EQ(alloc1(&frame), -ENOMEM);
}

HOST_TEST(double_free)
{
	setup(0, 64);
	CHECK_EQ(frame_alloc_add_free(&fa, 0, 64), 0);
	uint64_t frame;

	CHECK_EQ(frame_alloc_range(&fa, 8, 1, &frame), 0);
	CHECK_EQ(frame_alloc_free(&fa, 5, 1), 0);
	CHECK_EQ(frame_alloc_free(&fa, 5, 1), -EINVAL);
	CHECK_EQ(fa.free_count, 57);
	/* Partly free already: refused whole, nothing changed. */
	CHECK_EQ(frame_alloc_free(&fa, 3, 4), -EINVAL);
	CHECK(!frame_alloc_is_free(&fa, 3) && !frame_alloc_is_free(&fa, 4) &&
		      !frame_alloc_is_free(&fa, 6),
	      "a refused free freed something");
	CHECK_EQ(fa.free_count, 57);
	/* Never allocated (free from the start). */
	CHECK_EQ(frame_alloc_free(&fa, 40, 1), -EINVAL);
	CHECK_EQ(fa.free_count, 57);
}

HOST_TEST(contiguous_aligned)
{
	uint64_t frame;

	setup(0, 256);
	CHECK_EQ(frame_alloc_add_free(&fa, 0, 256), 0);
	CHECK_EQ(alloc1(&frame), 0);
	CHECK_EQ(frame, 0);
	CHECK_EQ(frame_alloc_range(&fa, 4, 4, &frame), 0);
	CHECK_EQ(frame, 4);
	CHECK_EQ(alloc1(&frame), 0);
	CHECK_EQ(frame, 1); /* below the run: still first */
	CHECK_EQ(frame_alloc_range(&fa, 3, 16, &frame), 0);
	CHECK_EQ(frame, 16);
	CHECK_EQ(frame_alloc_range(&fa, 16, 16, &frame), 0);
	CHECK_EQ(frame, 32);
	CHECK_EQ(frame_alloc_range(&fa, 2, 2, &frame), 0);
	CHECK_EQ(frame, 2);
	CHECK_EQ(frame_alloc_range(&fa, 2, 2, &frame), 0);
	CHECK_EQ(frame, 8);
	CHECK_EQ(frame_alloc_range(&fa, 64, 64, &frame), 0);
	CHECK_EQ(frame, 64);
	CHECK_EQ(frame_alloc_range(&fa, 128, 128, &frame), 0);
	CHECK_EQ(frame, 128);
	CHECK_EQ(frame_alloc_range(&fa, 1, 256, &frame), -ENOMEM);
	CHECK_EQ(fa.free_count, 256 - 1 - 4 - 1 - 3 - 16 - 2 - 2 - 64 - 128);
	/* A run not aligned to a power of two, or not a run. */
	CHECK_EQ(frame_alloc_range(&fa, 1, 3, &frame), -ENOMEM);
	CHECK_EQ(frame_alloc_range(&fa, 1, 0, &frame), -ENOMEM);
	CHECK_EQ(frame_alloc_range(&fa, 1, 6, &frame), -ENOMEM);
	CHECK_EQ(frame_alloc_range(&fa, 0, 1, &frame), -ENOMEM);
	CHECK_EQ(frame_alloc_range(&fa, 1, (1ULL << 63) + 1, &frame), -ENOMEM);
}

HOST_TEST(contiguous_skips_holes)
{
	uint64_t frame;

	setup(0, 200);
	/* Free: [0, 3) [4, 10) [16, 17) [20, 40) [100, 200) */
	CHECK_EQ(frame_alloc_add_free(&fa, 0, 3), 0);
	CHECK_EQ(frame_alloc_add_free(&fa, 4, 6), 0);
	CHECK_EQ(frame_alloc_add_free(&fa, 16, 1), 0);
	CHECK_EQ(frame_alloc_add_free(&fa, 20, 20), 0);
	CHECK_EQ(frame_alloc_add_free(&fa, 100, 100), 0);
	CHECK_EQ(frame_alloc_range(&fa, 4, 1, &frame), 0);
	CHECK_EQ(frame, 4);
	CHECK_EQ(frame_alloc_range(&fa, 8, 8, &frame), 0);
	CHECK_EQ(frame, 24);
	CHECK_EQ(frame_alloc_range(&fa, 20, 1, &frame), 0);
	CHECK_EQ(frame, 100);
	CHECK_EQ(frame_alloc_range(&fa, 80, 1, &frame), 0);
	CHECK_EQ(frame, 120);
	CHECK_EQ(frame_alloc_range(&fa, 2, 1, &frame), 0);
	CHECK_EQ(frame, 0);
	/* Left: 2, 8-9, 16, 20-23, 32-39: no run of 9, the first of 4. */
	CHECK_EQ(fa.free_count, 16);
	CHECK_EQ(frame_alloc_range(&fa, 9, 1, &frame), -ENOMEM);
	CHECK_EQ(frame_alloc_range(&fa, 4, 1, &frame), 0);
	CHECK_EQ(frame, 20);
	CHECK_EQ(frame_alloc_range(&fa, 2, 1, &frame), 0);
	CHECK_EQ(frame, 8);
	CHECK_EQ(frame_alloc_range(&fa, 8, 1, &frame), 0);
	CHECK_EQ(frame, 32);
}

/* The alignment is of the frame number, not of the index in the bitmap. */
HOST_TEST(nonzero_base_frame)
{
	uint64_t frame;

	setup(0x101, 512);
	CHECK_EQ(frame_alloc_add_free(&fa, 0x101, 512), 0);
	CHECK_EQ(alloc1(&frame), 0);
	CHECK_EQ(frame, 0x101);
	CHECK_EQ(frame_alloc_range(&fa, 2, 16, &frame), 0);
	CHECK_EQ(frame, 0x110);
	CHECK_EQ(frame_alloc_range(&fa, 256, 256, &frame), 0);
	CHECK_EQ(frame, 0x200);
	CHECK_EQ(frame_alloc_range(&fa, 1, 512, &frame), -ENOMEM);
	CHECK_EQ(alloc1(&frame), 0);
	CHECK_EQ(frame, 0x102);
	CHECK_EQ(frame_alloc_free(&fa, 0x101, 1), 0);
	CHECK(frame_alloc_is_free(&fa, 0x101), "0x101 not free");
	CHECK(!frame_alloc_is_free(&fa, 0x100), "0x100 free");
	CHECK_EQ(frame_alloc_free(&fa, 0x100, 1), -ERANGE);
	CHECK_EQ(frame_alloc_free(&fa, 0x101 + 512, 1), -ERANGE);
}

/* Counts that leave part of the last bitmap word unused. */
HOST_TEST(partial_last_word)
{
	static const uint64_t counts[] = {1, 63, 64, 65, 70, 127, 129, 200};

	for (size_t c = 0; c < ARRAY_SIZE(counts); c++) {
		uint64_t n = counts[c], frame;

		setup(7, n);
		CHECK_EQ(frame_alloc_add_free(&fa, 7, n), 0);
		CHECK_EQ(fa.free_count, n);
		CHECK_EQ(frame_alloc_add_free(&fa, 7 + n, 1), -ERANGE);
		/* The whole run, nothing past it. */
		CHECK_EQ(frame_alloc_range(&fa, n + 1, 1, &frame), -ENOMEM);
		CHECK_EQ(frame_alloc_range(&fa, n, 1, &frame), 0);
		CHECK_EQ(frame, 7);
		CHECK_EQ(fa.free_count, 0);
		CHECK_EQ(frame_alloc_free(&fa, 7, n), 0);
		/* One at a time up to the last frame, then none. */
		for (uint64_t i = 0; i < n; i++) {
			CHECK_EQ(alloc1(&frame), 0);
			CHECK_EQ(frame, 7 + i);
		}
		CHECK(alloc1(&frame) == -ENOMEM, "count %llu: got frame %llu",
		      (unsigned long long)n, (unsigned long long)frame);
		/* Unused bits stay set: never handed out. */
		if (n % 64)
			CHECK(bitmap[n / 64] >> (n % 64) == ~0ULL >> (n % 64),
			      "count %llu: tail bits %#llx",
			      (unsigned long long)n,
			      (unsigned long long)bitmap[n / 64]);
	}
}

/*
 * Random operations against a model: one bool per frame. Every result is
 * predicted from the model first (error, or exactly which frame the
 * lowest-first rule picks), then the model and free_count are compared.
 */
#define MODEL_MAX 300

static bool model_free[MODEL_MAX];
static uint64_t model_base, model_count, model_free_count;

static int model_add_free(uint64_t first, uint64_t count)
{
	if (first < model_base || first - model_base > model_count ||
	    count > model_count - (first - model_base))
		return -ERANGE;
	for (uint64_t i = 0; i < count; i++) {
		if (model_free[first - model_base + i])
			return -EINVAL;
	}
	for (uint64_t i = 0; i < count; i++)
		model_free[first - model_base + i] = true;
	model_free_count += count;
	return 0;
}

static int model_range(uint64_t count, uint64_t align, uint64_t *frame)
{
	if (!count || !align || (align & (align - 1)))
		return -ENOMEM;
	for (uint64_t a = 0; a + count <= model_count; a++) {
		bool ok = (model_base + a) % align == 0;

		for (uint64_t i = 0; ok && i < count; i++)
			ok = model_free[a + i];
		if (!ok)
			continue;
		for (uint64_t i = 0; i < count; i++)
			model_free[a + i] = false;
		model_free_count -= count;
		*frame = model_base + a;
		return 0;
	}
	return -ENOMEM;
}

/* A range around the allocator: mostly inside, sometimes off the edges. */
static void random_span(uint64_t *first, uint64_t *count)
{
	uint64_t lo = model_base > 3 ? model_base - 3 : 0;

	*first = lo + host_rand_below(model_count + 6);
	*count = host_rand_below(8) ? host_rand_below(6) : host_rand_below(40);
}

HOST_TEST(random_against_model)
{
	static const uint64_t aligns[] = {1, 1, 1, 2, 4, 8, 16, 64, 3, 0};
	unsigned long ops = 0, allocs = 0, refused = 0;

	host_rand_seed(4096);
	for (int round = 0; round < 300; round++) {
		model_count = 1 + host_rand_below(MODEL_MAX);
		model_base = host_rand_below(3) ? host_rand_below(1000000) : 0;
		model_free_count = 0;
		memset(model_free, 0, sizeof(model_free));
		setup(model_base, model_count);

		for (int step = 0; step < 400; step++) {
			uint64_t first, count, align, want_frame = 0;
			uint64_t frame = ~0ULL;
			int want, got;

			switch (host_rand_below(4)) {
			case 0: /* add_free (the same as free) */
			case 1:
				random_span(&first, &count);
				want = model_add_free(first, count);
				got = host_rand_below(2)
					      ? frame_alloc_add_free(&fa, first,
								     count)
					      : frame_alloc_free(&fa, first,
								 count);
				CHECK(got == want,
				      "free %llu+%llu: got %d, want %d",
				      (unsigned long long)first,
				      (unsigned long long)count, got, want);
				break;
			default: /* allocate */
				count = host_rand_below(4)
						? 1
						: 1 + host_rand_below(12);
				align = aligns[host_rand_below(
					ARRAY_SIZE(aligns))];
				want = model_range(count, align, &want_frame);
				got = frame_alloc_range(&fa, count, align,
							&frame);
				CHECK(got == want &&
					      (got || frame == want_frame),
				      "alloc %llu align %llu: got %d frame "
				      "%#llx, want %d frame %#llx",
				      (unsigned long long)count,
				      (unsigned long long)align, got,
				      (unsigned long long)frame, want,
				      (unsigned long long)want_frame);
				allocs += !got;
				break;
			}
			refused += want != 0;
			ops++;
			if (!CHECK_EQ(fa.free_count, model_free_count))
				return;
		}
		for (uint64_t i = 0; i < model_count; i++) {
			if (!CHECK(frame_alloc_is_free(&fa, model_base + i) ==
					   model_free[i],
				   "round %d: frame %#llx", round,
				   (unsigned long long)(model_base + i)))
				return;
		}
	}
	printf("# %lu operations, %lu allocations, %lu refused\n", ops, allocs,
	       refused);
	free(bitmap);
	bitmap = NULL;
}
