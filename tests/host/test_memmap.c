// SPDX-License-Identifier: MIT
/*
 * mm/memmap.c: from a firmware memory map and reserved ranges to usable
 * page ranges. Hand-made maps for each rule, then random maps compared page
 * by page with a brute-force model. The output array is always a heap block
 * of exactly max_out entries, so ASan sees any write past it; every result
 * is also checked for the promised shape (sorted, page-aligned, non-empty,
 * neither overlapping nor touching).
 */
#include "mm/memmap.h"
#include "arch/consts.h"
#include "tests/host/host_test.h"

#define AVAIL MB2_MMAP_AVAILABLE
#define RSVD  MB2_MMAP_RESERVED

#define MAX_RESULT 64

static struct phys_range result[MAX_RESULT];
static size_t result_count;
static bool result_truncated;

/* "[a, b) [c, d)" for messages. */
static const char *ranges_text(const struct phys_range *r, size_t n)
{
	static char buf[2][1024];
	static int next;
	char *s = buf[next++ % 2];
	size_t used = 0;

	s[0] = '\0';
	for (size_t i = 0; i < n && used < sizeof(buf[0]) - 48; i++)
		used += (size_t)snprintf(s + used, sizeof(buf[0]) - used,
					 "%s[%#llx, %#llx)", i ? " " : "",
					 (unsigned long long)r[i].start,
					 (unsigned long long)r[i].end);
	return n ? s : "(none)";
}

static bool check_shape(const char *file, int line, const struct phys_range *r,
			size_t n, size_t max_out)
{
	bool ok = n <= max_out;

	for (size_t i = 0; i < n; i++) {
		ok &= r[i].start < r[i].end;
		ok &= IS_ALIGNED(r[i].start, PAGE_SIZE) &&
		      IS_ALIGNED(r[i].end, PAGE_SIZE);
		if (i)
			ok &= r[i - 1].end < r[i].start;
	}
	return host_check(ok, "shape", file, line,
			  "%zu ranges (max %zu) not sorted, aligned, apart: "
			  "%s",
			  n, max_out, ranges_text(r, n));
}

/* Runs memmap_usable with an exactly-sized output array. */
static size_t run(const char *file, int line, const struct mb2_region *map,
		  size_t n, const struct phys_range *reserved,
		  size_t n_reserved, size_t max_out)
{
	struct phys_range *out = malloc(max_out * sizeof(*out) + !max_out);

	result_truncated = true; /* must be cleared when nothing is lost */
	result_count = memmap_usable(map, n, reserved, n_reserved, out, max_out,
				     &result_truncated);
	check_shape(file, line, out, result_count, max_out);
	memcpy(result, out, MIN(result_count, MAX_RESULT) * sizeof(*out));
	free(out);
	return result_count;
}

#define USABLE(map, reserved, max_out)                          \
	run(__FILE__, __LINE__, map, ARRAY_SIZE(map), reserved, \
	    ARRAY_SIZE(reserved), max_out)
#define USABLE_MAP(map, max_out) \
	run(__FILE__, __LINE__, map, ARRAY_SIZE(map), NULL, 0, max_out)

static void expect(const char *file, int line, const struct phys_range *want,
		   size_t n, bool truncated)
{
	host_check(result_count == n &&
			   (!n || !memcmp(result, want, n * sizeof(*want))),
		   "ranges", file, line, "got %s, want %s",
		   ranges_text(result, result_count), ranges_text(want, n));
	host_check(result_truncated == truncated, "truncated", file, line,
		   "truncated %d, want %d", result_truncated, truncated);
}

/* The last result is exactly these ranges, nothing dropped. */
#define EXPECT(...)                                                          \
	expect(__FILE__, __LINE__, (const struct phys_range[]){__VA_ARGS__}, \
	       ARRAY_SIZE(((const struct phys_range[]){__VA_ARGS__})), false)
#define EXPECT_NONE() expect(__FILE__, __LINE__, NULL, 0, false)

HOST_TEST(available_shrinks_inward)
{
	const struct mb2_region map[] = {
		{0x1234, 0x5000, AVAIL},  /* [0x2000, 0x6000) */
		{0x10800, 0x1000, AVAIL}, /* no whole page */
		{0x11001, 0xffe, AVAIL},  /* inside one page */
		{0x20000, 0x3000, AVAIL}, /* aligned: as is */
		{0x30000, 0xfff, AVAIL},  /* a byte short */
		{0x40001, 0x1fff, AVAIL}, /* ends on a page, starts after */
		{0x50000, 0x2001, AVAIL}, /* starts on a page, ends after */
	};

	USABLE_MAP(map, 16);
	EXPECT({0x2000, 0x6000}, {0x20000, 0x23000}, {0x41000, 0x42000},
	       {0x50000, 0x52000});
}

HOST_TEST(overlapping_available_merge)
{
	const struct mb2_region map[] = {
		{0, 0x10000, AVAIL},
		{0x8000, 0x18000, AVAIL}, /* overlaps */
		{0x100000, 0x1000, AVAIL},
		{0x101000, 0x1000, AVAIL}, /* touches */
		{0x200000, 0x4000, AVAIL},
		{0x200000, 0x4000, AVAIL}, /* twice */
		{0x300000, 0x10000, AVAIL},
		{0x302000, 0x1000, AVAIL}, /* inside */
		/* Shrunk before merging: the page across the seam is lost. */
		{0x400000, 0x1800, AVAIL},
		{0x401800, 0x1800, AVAIL},
	};

	USABLE_MAP(map, 16);
	EXPECT({0, 0x20000}, {0x100000, 0x102000}, {0x200000, 0x204000},
	       {0x300000, 0x310000}, {0x400000, 0x401000},
	       {0x402000, 0x403000});
}

HOST_TEST(unsorted_input)
{
	const struct mb2_region map[] = {
		{0x900000, 0x1000, AVAIL}, {0x300000, 0x2000, AVAIL},
		{0x500000, 0x1000, RSVD},  {0x100000, 0x1000, AVAIL},
		{0x700000, 0x3000, AVAIL}, {0x0, 0x1000, AVAIL},
		{0x101000, 0x1000, AVAIL},
	};

	USABLE_MAP(map, 16);
	EXPECT({0, 0x1000}, {0x100000, 0x102000}, {0x300000, 0x302000},
	       {0x700000, 0x703000}, {0x900000, 0x901000});
}

HOST_TEST(reserved_grows_outward)
{
	const struct mb2_region map[] = {{0, 0x100000, AVAIL}};
	const struct phys_range unaligned[] = {{0x5800, 0x6800}};
	const struct phys_range aligned[] = {{0x5000, 0x7000}};
	const struct phys_range tiny[] = {{0x9fff, 0xa001}};

	USABLE(map, unaligned, 16);
	EXPECT({0, 0x5000}, {0x7000, 0x100000});
	USABLE(map, aligned, 16);
	EXPECT({0, 0x5000}, {0x7000, 0x100000});
	/* Two bytes across a page boundary take both pages. */
	USABLE(map, tiny, 16);
	EXPECT({0, 0x9000}, {0xb000, 0x100000});
}

HOST_TEST(other_regions_grow_outward)
{
	static const uint32_t types[] = {RSVD,
					 MB2_MMAP_ACPI_RECLAIMABLE,
					 MB2_MMAP_ACPI_NVS,
					 MB2_MMAP_BAD,
					 0,
					 9,
					 UINT32_MAX};

	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		const struct mb2_region map[] = {
			{0, 0x100000, AVAIL},
			{0x5800, 0x1000, types[i]},
		};

		USABLE_MAP(map, 16);
		EXPECT({0, 0x5000}, {0x7000, 0x100000});
	}
}

HOST_TEST(other_regions_win)
{
	/* Listed before or after, overlapping the start, end or all. */
	const struct mb2_region map[] = {
		{0x8000, 0x18000, MB2_MMAP_ACPI_NVS},
		{0, 0x10000, AVAIL},
		{0x100000, 0x100000, AVAIL},
		{0xf0000, 0x20800, RSVD},
		{0x300000, 0x1000, AVAIL},
		{0x2ff000, 0x4000, MB2_MMAP_BAD},
		{0x400000, 0x10000, AVAIL},
		{0x404000, 0x1000, MB2_MMAP_BAD},
	};

	USABLE_MAP(map, 16);
	EXPECT({0, 0x8000}, {0x111000, 0x200000}, {0x400000, 0x404000},
	       {0x405000, 0x410000});
}

HOST_TEST(reserved_splits_and_trims)
{
	const struct mb2_region map[] = {
		{0, 0x10000, AVAIL},
		{0x20000, 0x20000, AVAIL},
		{0x100000, 0x100000, AVAIL},
	};
	const struct phys_range reserved[] = {
		{0, 0x1000},	   /* first page */
		{0xf000, 0x10000}, /* last page */
		{0x8000, 0x30000}, /* across two ranges */
		{0x110000, 0x111000}, {0x120000, 0x121000}, /* two holes */
		{0x1ff001, 0x1ff002}, /* a byte of the last page */
	};

	USABLE(map, reserved, 16);
	EXPECT({0x1000, 0x8000}, {0x30000, 0x40000}, {0x100000, 0x110000},
	       {0x111000, 0x120000}, {0x121000, 0x1ff000});
}

HOST_TEST(reserved_covers_everything)
{
	const struct mb2_region map[] = {
		{0, 0x9fc00, AVAIL},
		{0x100000, 0x7ee0000, AVAIL},
		{0x100000000, 0x40000000, AVAIL},
	};
	const struct phys_range all[] = {{0, UINT64_MAX}};
	const struct mb2_region map_and_hole[] = {
		{0, 0x9fc00, AVAIL},
		{0x100000, 0x7ee0000, AVAIL},
		{0, UINT64_MAX, RSVD},
	};

	USABLE(map, all, 16);
	EXPECT_NONE();
	USABLE_MAP(map_and_hole, 16);
	EXPECT_NONE();
}

HOST_TEST(top_of_address_space)
{
	const struct mb2_region ends_at_top[] = {
		/* base + length is 2^64: wraps to 0 */
		{0xfffffffffff00000, 0x100000, AVAIL},
	};
	const struct mb2_region wraps[] = {
		{0xfffffffff0000000, UINT64_MAX, AVAIL},
	};
	const struct mb2_region near_top[] = {
		{0xffffffffffff0000, 0xffff, AVAIL},
	};
	const struct mb2_region last_page_only[] = {
		{0xfffffffffffff001, 0xffe, AVAIL},
		{0xffffffffffffefff, 0x5000, AVAIL},
		{UINT64_MAX, 1, AVAIL},
	};
	const struct mb2_region hole_to_top[] = {
		{0xfffffffffff00000, 0x100000, AVAIL},
		{0xfffffffffff80000, 0x100000, RSVD}, /* wraps */
	};
	const struct phys_range reserved_to_top[] = {
		{0xfffffffffff00800, UINT64_MAX},
	};

	/* The last page [2^64 - 4096, 2^64) has no representable end. */
	USABLE_MAP(ends_at_top, 4);
	EXPECT({0xfffffffffff00000, 0xfffffffffffff000});
	USABLE_MAP(wraps, 4);
	EXPECT({0xfffffffff0000000, 0xfffffffffffff000});
	USABLE_MAP(near_top, 4);
	EXPECT({0xffffffffffff0000, 0xfffffffffffff000});
	USABLE_MAP(last_page_only, 4);
	EXPECT_NONE();
	USABLE_MAP(hole_to_top, 4);
	EXPECT({0xfffffffffff00000, 0xfffffffffff80000});
	USABLE(ends_at_top, reserved_to_top, 4);
	EXPECT_NONE();
}

HOST_TEST(zero_length)
{
	const struct mb2_region empty_avail[] = {
		{0x5000, 0, AVAIL},
		{0, 0, AVAIL},
	};
	const struct mb2_region empty_hole[] = {
		{0, 0x10000, AVAIL},
		{0x4000, 0, RSVD},
		{0, 0, RSVD},
		{0x10000, 0, RSVD},
	};
	const struct mb2_region map[] = {{0, 0x10000, AVAIL}};
	const struct phys_range empty_reserved[] = {
		{0x4000, 0x4000}, {0, 0}, {0x10000, 0x10000}};
	const struct phys_range unaligned_empty[] = {{0x4800, 0x4800}};
	const struct phys_range backwards[] = {{0x8000, 0x3000}};

	USABLE_MAP(empty_avail, 4);
	EXPECT_NONE();
	/* An empty range removes nothing: no split into touching halves. */
	USABLE_MAP(empty_hole, 4);
	EXPECT({0, 0x10000});
	USABLE(map, empty_reserved, 4);
	EXPECT({0, 0x10000});
	/* Grown outward like any other: the page that holds it. */
	USABLE(map, unaligned_empty, 4);
	EXPECT({0, 0x4000}, {0x5000, 0x10000});
	/* Backwards is empty too (and must not make overlapping halves). */
	USABLE(map, backwards, 4);
	EXPECT({0, 0x10000});
	/* Nothing at all. */
	run(__FILE__, __LINE__, NULL, 0, NULL, 0, 0);
	EXPECT_NONE();
}

HOST_TEST(output_capacity)
{
	const struct mb2_region one[] = {{0, 0x10000, AVAIL}};
	const struct mb2_region two[] = {
		{0x100000, 0x1000, AVAIL},
		{0, 0x1000, AVAIL},
	};
	const struct mb2_region overlapping[] = {
		{0, 0x10000, AVAIL},
		{0x8000, 0x10000, AVAIL},
	};
	const struct phys_range middle[] = {{0x3000, 0x4000}};
	const struct phys_range two_holes[] = {{0x3000, 0x4000},
					       {0x9000, 0xa000}};
	const struct mb2_region only_reserved[] = {{0, 0x10000, RSVD}};

	/* No room at all. */
	USABLE_MAP(one, 0);
	CHECK_EQ(result_count, 0);
	CHECK(result_truncated, "not truncated");
	USABLE_MAP(only_reserved, 0);
	EXPECT_NONE();
	/* Room for one of two: the first listed stays. */
	USABLE_MAP(two, 1);
	CHECK_EQ(result_count, 1);
	CHECK(result_truncated, "not truncated");
	CHECK(result[0].start == 0x100000 && result[0].end == 0x101000,
	      "kept %s", ranges_text(result, result_count));
	/*
	 * Available regions are collected before they are merged, so two
	 * that would merge into one still need two places: the second is
	 * dropped and the result flagged (pmm.c has room for MB2_MAX_MMAP).
	 */
	USABLE_MAP(overlapping, 1);
	CHECK_EQ(result_count, 1);
	CHECK(result_truncated, "not truncated");
	CHECK(result[0].start == 0 && result[0].end == 0x10000, "kept %s",
	      ranges_text(result, result_count));
	USABLE_MAP(overlapping, 2);
	EXPECT({0, 0x18000});
	/* A split with no room for both halves keeps the bigger one. */
	USABLE(one, middle, 1);
	CHECK_EQ(result_count, 1);
	CHECK(result_truncated, "not truncated");
	CHECK(result[0].start == 0x4000 && result[0].end == 0x10000, "kept %s",
	      ranges_text(result, result_count));
	/* The second hole splits [0x4000, 0x10000): 0x6000 bytes above. */
	USABLE(one, two_holes, 2);
	CHECK_EQ(result_count, 2);
	CHECK(result_truncated, "not truncated");
	CHECK(result[0].start == 0 && result[0].end == 0x3000 &&
		      result[1].start == 0xa000 && result[1].end == 0x10000,
	      "kept %s", ranges_text(result, result_count));
	/* Exactly enough room. */
	USABLE(one, two_holes, 3);
	EXPECT({0, 0x3000}, {0x4000, 0x9000}, {0xa000, 0x10000});
}

HOST_TEST(top_of_each_type)
{
	const struct mb2_region map[] = {
		{0, 0x9fc00, AVAIL},
		{0x9fc00, 0x400, RSVD},
		{0x100000000, 0x40000000, AVAIL},
		{0x100000, 0x7ee0000, AVAIL},
		{0xfffc0000, 0x40000, RSVD},
		{0x7fe0000, 0x20000, MB2_MMAP_ACPI_RECLAIMABLE},
	};

	CHECK_EQ(memmap_top(map, ARRAY_SIZE(map), AVAIL), 0x140000000);
	CHECK_EQ(memmap_top(map, ARRAY_SIZE(map), RSVD), 0x100000000);
	CHECK_EQ(memmap_top(map, ARRAY_SIZE(map), MB2_MMAP_ACPI_RECLAIMABLE),
		 0x8000000);
	CHECK_EQ(memmap_top(map, ARRAY_SIZE(map), MB2_MMAP_BAD), 0);
	CHECK_EQ(memmap_top(map, 0, AVAIL), 0);
	CHECK_EQ(memmap_top(map, 2, AVAIL), 0x9fc00);
}

/*
 * Random maps over a small address space, compared page by page with the
 * rules stated plainly: a page is usable if some available region holds
 * all of it, and no other region and no reserved range, each grown outward
 * to whole pages, touches it.
 */
#define MODEL_PAGES 2048 /* 8 MiB */
#define MODEL_LIMIT (6 * 1024 * 1024)

static uint64_t random_address(uint64_t limit)
{
	uint64_t a = host_rand_below(limit);

	switch (host_rand_below(3)) {
	case 0:
		return ALIGN_DOWN(a, PAGE_SIZE);
	case 1:
		return ALIGN_DOWN(a, 0x200);
	default:
		return a;
	}
}

static uint64_t random_length(void)
{
	switch (host_rand_below(8)) {
	case 0:
		return 0;
	case 1:
	case 2:
		return (1 + host_rand_below(64)) * PAGE_SIZE;
	case 3:
		return 1 + host_rand_below(3 * PAGE_SIZE);
	default:
		return 1 + host_rand_below(MiB(2));
	}
}

static void random_map(struct mb2_region *map, size_t n,
		       struct phys_range *reserved, size_t n_reserved)
{
	static const uint32_t others[] = {RSVD, MB2_MMAP_ACPI_RECLAIMABLE,
					  MB2_MMAP_ACPI_NVS, MB2_MMAP_BAD, 7};

	for (size_t i = 0; i < n; i++) {
		map[i].base = random_address(MODEL_LIMIT);
		map[i].length = random_length();
		map[i].type =
			host_rand_below(10) < 6
				? AVAIL
				: others[host_rand_below(ARRAY_SIZE(others))];
	}
	for (size_t i = 0; i < n_reserved; i++) {
		reserved[i].start = random_address(MODEL_LIMIT);
		reserved[i].end = reserved[i].start + random_length() / 4;
	}
}

static bool grown_covers(uint64_t start, uint64_t end, uint64_t page)
{
	return ALIGN_DOWN(start, PAGE_SIZE) <= page &&
	       page < ALIGN_UP(end, PAGE_SIZE);
}

static void model(const struct mb2_region *map, size_t n,
		  const struct phys_range *reserved, size_t n_reserved,
		  bool *usable)
{
	for (uint64_t p = 0; p < MODEL_PAGES; p++) {
		uint64_t page = p * PAGE_SIZE;
		bool avail = false, blocked = false;

		for (size_t i = 0; i < n; i++) {
			const struct mb2_region *r = &map[i];

			if (r->type == AVAIL)
				avail |=
					r->base <= page &&
					page + PAGE_SIZE <= r->base + r->length;
			else
				blocked |= grown_covers(
					r->base, r->base + r->length, page);
		}
		for (size_t i = 0; i < n_reserved; i++)
			blocked |= grown_covers(reserved[i].start,
						reserved[i].end, page);
		usable[p] = avail && !blocked;
	}
}

/* Compares the last result with the model; subset: may have fewer pages. */
static bool matches_model(const bool *usable, bool subset)
{
	static bool got[MODEL_PAGES];
	uint64_t first_bad = UINT64_MAX;

	memset(got, 0, sizeof(got));
	for (size_t i = 0; i < result_count; i++) {
		if (!CHECK(result[i].end <= MODEL_PAGES * PAGE_SIZE,
			   "range %s beyond the map",
			   ranges_text(&result[i], 1)))
			return false;
		for (uint64_t a = result[i].start; a < result[i].end;
		     a += PAGE_SIZE)
			got[a / PAGE_SIZE] = true;
	}
	for (uint64_t p = 0; p < MODEL_PAGES && first_bad == UINT64_MAX; p++) {
		if (got[p] ? !usable[p] : (usable[p] && !subset))
			first_bad = p;
	}
	if (first_bad == UINT64_MAX)
		return true;
	return CHECK(false,
		     "page %#llx: memmap says %s, the model %s (result %s)",
		     (unsigned long long)(first_bad * PAGE_SIZE),
		     got[first_bad] ? "usable" : "not usable",
		     usable[first_bad] ? "usable" : "not usable",
		     ranges_text(result, result_count));
}

static void print_case(const struct mb2_region *map, size_t n,
		       const struct phys_range *reserved, size_t n_reserved)
{
	for (size_t i = 0; i < n; i++)
		printf("#   region %#llx + %#llx type %u\n",
		       (unsigned long long)map[i].base,
		       (unsigned long long)map[i].length, map[i].type);
	for (size_t i = 0; i < n_reserved; i++)
		printf("#   reserved [%#llx, %#llx)\n",
		       (unsigned long long)reserved[i].start,
		       (unsigned long long)reserved[i].end);
}

HOST_TEST(random_maps_against_model)
{
	struct mb2_region map[14];
	struct phys_range reserved[5];
	static bool usable[MODEL_PAGES];
	unsigned shown = 0;

	host_rand_seed(20240601);
	for (int iter = 0; iter < 20000; iter++) {
		size_t n = host_rand_below(ARRAY_SIZE(map) + 1);
		size_t n_reserved = host_rand_below(ARRAY_SIZE(reserved) + 1);

		random_map(map, n, reserved, n_reserved);
		model(map, n, reserved, n_reserved, usable);
		run(__FILE__, __LINE__, map, n, reserved, n_reserved,
		    MAX_RESULT);
		CHECK(!result_truncated, "truncated with room for %d",
		      MAX_RESULT);
		if (!matches_model(usable, false) && shown++ < 2)
			print_case(map, n, reserved, n_reserved);
	}
}

/* With too little room: fewer pages, never wrong ones, and flagged. */
HOST_TEST(random_maps_small_output)
{
	struct mb2_region map[10];
	struct phys_range reserved[4];
	static bool usable[MODEL_PAGES];
	unsigned shown = 0, truncations = 0;

	host_rand_seed(77);
	for (int iter = 0; iter < 20000; iter++) {
		size_t n = host_rand_below(ARRAY_SIZE(map) + 1);
		size_t n_reserved = host_rand_below(ARRAY_SIZE(reserved) + 1);
		size_t max_out = host_rand_below(5);

		random_map(map, n, reserved, n_reserved);
		model(map, n, reserved, n_reserved, usable);
		run(__FILE__, __LINE__, map, n, reserved, n_reserved, max_out);
		truncations += result_truncated;
		if (!matches_model(usable, result_truncated) && shown++ < 2)
			print_case(map, n, reserved, n_reserved);
	}
	printf("# %u of 20000 results truncated\n", truncations);
	CHECK(truncations > 1000, "only %u truncated: test too weak",
	      truncations);
}
