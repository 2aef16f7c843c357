// SPDX-License-Identifier: MIT
/*
 * boot/multiboot2.c on crafted boot information. A builder lays out tags
 * byte by byte as the spec (section 3.6) and GRUB do, then copies the
 * result to a heap block of exactly its size, so ASan reports any read past
 * the end; malformed buffers check that each problem is reported once and
 * nothing is read outside the tag that holds it.
 */
#include "boot/multiboot2.h"
#include "lib/errno.h"
#include "tests/host/host_test.h"

/* --- Builder ------------------------------------------------------------ */

#define STAGE_MAX (64 * 1024)

struct mbi {
	uint8_t bytes[STAGE_MAX] __attribute__((aligned(8)));
	size_t len;
	size_t tag; /* offset of the tag being written */
};

static struct mbi stage;

static void put(struct mbi *m, const void *src, size_t n)
{
	if (m->len + n > STAGE_MAX) {
		fprintf(stderr, "test_multiboot2: builder overflow\n");
		abort();
	}
	memcpy(m->bytes + m->len, src, n);
	m->len += n;
}

static void put8(struct mbi *m, uint8_t v)
{
	put(m, &v, 1);
}

static void put16(struct mbi *m, uint16_t v)
{
	put(m, &v, 2);
}

static void put32(struct mbi *m, uint32_t v)
{
	put(m, &v, 4);
}

static void put64(struct mbi *m, uint64_t v)
{
	put(m, &v, 8);
}

static void put_fill(struct mbi *m, uint8_t byte, size_t n)
{
	while (n--)
		put8(m, byte);
}

/* The string and its NUL. */
static void put_str(struct mbi *m, const char *s)
{
	put(m, s, strlen(s) + 1);
}

static void pad8(struct mbi *m)
{
	while (m->len % 8)
		put8(m, 0);
}

/* An empty buffer: total size and reserved word, filled in by finish. */
static struct mbi *mbi_start(void)
{
	memset(&stage, 0, sizeof(stage));
	put32(&stage, 0);
	put32(&stage, 0);
	return &stage;
}

static void tag_begin(struct mbi *m, uint32_t type)
{
	m->tag = m->len;
	put32(m, type);
	put32(m, 0);
}

/* Ends the tag: its size field, then padding to 8 bytes. */
static size_t tag_end(struct mbi *m)
{
	uint32_t size = (uint32_t)(m->len - m->tag);

	memcpy(m->bytes + m->tag + 4, &size, 4);
	pad8(m);
	return m->tag;
}

/* The same with a size field that does not match the contents. */
static size_t tag_end_size(struct mbi *m, uint32_t size)
{
	size_t tag = tag_end(m);

	memcpy(m->bytes + tag + 4, &size, 4);
	return tag;
}

static size_t add_string_tag(struct mbi *m, uint32_t type, const char *s)
{
	tag_begin(m, type);
	put_str(m, s);
	return tag_end(m);
}

struct entry {
	uint64_t base, length;
	uint32_t type;
};

/* One entry of entry_size bytes (cut short if that is below 24). */
static void put_entry(struct mbi *m, const struct entry *e, uint32_t entry_size)
{
	size_t start = m->len;

	put64(m, e->base);
	put64(m, e->length);
	put32(m, e->type);
	put32(m, 0);
	/* Whatever a larger entry holds: noise the parser skips. */
	if (entry_size > 24)
		put_fill(m, 0xee, entry_size - 24);
	m->len = start + entry_size;
}

static size_t add_mmap(struct mbi *m, uint32_t entry_size,
		       const struct entry *e, size_t n)
{
	tag_begin(m, MB2_TAG_MMAP);
	put32(m, entry_size);
	put32(m, 0); /* entry version */
	for (size_t i = 0; i < n; i++)
		put_entry(m, &e[i], entry_size);
	return tag_end(m);
}

static size_t add_module(struct mbi *m, uint32_t start, uint32_t end,
			 const char *s)
{
	tag_begin(m, MB2_TAG_MODULE);
	put32(m, start);
	put32(m, end);
	if (s)
		put_str(m, s);
	return tag_end(m);
}

struct fb {
	uint64_t addr;
	uint32_t pitch, width, height;
	uint8_t bpp, type;
};

/* The 32-byte common part; the colour information follows. */
static void fb_common(struct mbi *m, const struct fb *f)
{
	tag_begin(m, MB2_TAG_FRAMEBUFFER);
	put64(m, f->addr);
	put32(m, f->pitch);
	put32(m, f->width);
	put32(m, f->height);
	put8(m, f->bpp);
	put8(m, f->type);
	put16(m, 0);
}

/* As GRUB writes it: 32 + 6 colour bytes = 38, not padded to 40. */
static size_t add_fb_rgb(struct mbi *m, const struct fb *f)
{
	fb_common(m, f);
	put8(m, 16); /* red position, size */
	put8(m, 8);
	put8(m, 8); /* green */
	put8(m, 8);
	put8(m, 0); /* blue */
	put8(m, 8);
	return tag_end(m);
}

static size_t add_acpi(struct mbi *m, uint32_t type, size_t length,
		       uint8_t fill)
{
	tag_begin(m, type);
	put(m, "RSD PTR ", length < 8 ? length : 8);
	if (length > 8)
		put_fill(m, fill, length - 8);
	return tag_end(m);
}

static size_t add_load_base(struct mbi *m, uint32_t base)
{
	tag_begin(m, MB2_TAG_LOAD_BASE);
	put32(m, base);
	return tag_end(m);
}

static void add_end(struct mbi *m)
{
	tag_begin(m, MB2_TAG_END);
	tag_end(m);
}

/*
 * The finished buffer in a heap block of exactly its length, its total
 * size field set to total (mbi_finish: the real length). Free it after the
 * checks: the parsed information points into it.
 */
static uint8_t *mbi_finish_total(struct mbi *m, uint32_t total, size_t *len)
{
	uint8_t *buf;

	memcpy(m->bytes, &total, 4);
	buf = malloc(m->len);
	memcpy(buf, m->bytes, m->len);
	*len = m->len;
	return buf;
}

static uint8_t *mbi_finish(struct mbi *m, size_t *len)
{
	return mbi_finish_total(m, (uint32_t)m->len, len);
}

/* --- Parsing and reports --------------------------------------------------- */

static struct boot_info info;

static int parse(const void *buf, size_t avail)
{
	memset(&messages, 0, sizeof(messages));
	memset(&info, 0x5a, sizeof(info));
	return mb2_parse(buf, avail, &info, capture, &messages);
}

/* Exactly want messages, the first (if any) containing word. */
static void expect_messages(const char *file, int line, int want,
			    const char *word)
{
	host_check(messages.count == want, "messages", file, line,
		   "%d messages, want %d; first: %s", messages.count, want,
		   messages.count ? host_quote(messages.text[0]) : "none");
	if (word && messages.count)
		host_check(strstr(messages.text[0], word) != NULL, "message",
			   file, line, "%s lacks %s",
			   host_quote(messages.text[0]), host_quote(word));
}

#define MESSAGES(want, word) expect_messages(__FILE__, __LINE__, (want), (word))

/* Nothing parsed, the state a failed early check leaves. */
static void expect_empty(const char *file, int line)
{
	host_check(info.cmdline && !*info.cmdline, "empty", file, line,
		   "cmdline %s", host_quote(info.cmdline));
	host_check(!info.loader_name && !info.mmap_count &&
			   !info.module_count && !info.rsdp &&
			   info.fb.kind == FB_KIND_NONE && !info.has_load_base,
		   "empty", file, line, "something parsed");
}

#define EXPECT_EMPTY() expect_empty(__FILE__, __LINE__)

static bool inside(const void *p, const uint8_t *buf, size_t len)
{
	return (const uint8_t *)p >= buf && (const uint8_t *)p < buf + len;
}

/* --- Well-formed information ---------------------------------------------- */

static const struct entry pc_map[] = {
	{0, 0x9fc00, MB2_MMAP_AVAILABLE},
	{0x9fc00, 0x400, MB2_MMAP_RESERVED},
	{0xf0000, 0x10000, MB2_MMAP_RESERVED},
	{0x100000, 0x7ee0000, MB2_MMAP_AVAILABLE},
	{0x7fe0000, 0, MB2_MMAP_AVAILABLE}, /* zero length: skipped */
	{0x7fe0000, 0x10000, MB2_MMAP_ACPI_RECLAIMABLE},
	{0x7ff0000, 0x10000, MB2_MMAP_ACPI_NVS},
	{0x8000000, 0x1000, MB2_MMAP_BAD},
	{0xfffc0000, 0x40000, MB2_MMAP_RESERVED},
	{0x100000000, 0x40000000, MB2_MMAP_AVAILABLE},
	{0x140000000, 0x1000, 9}, /* a type from a future spec */
};

static void check_pc_map(const char *file, int line)
{
	size_t j = 0;

	host_check(info.mmap_count == ARRAY_SIZE(pc_map) - 1 &&
			   !info.mmap_truncated,
		   "mmap", file, line, "%zu entries, truncated %d",
		   info.mmap_count, info.mmap_truncated);
	for (size_t i = 0; i < ARRAY_SIZE(pc_map) && j < info.mmap_count; i++) {
		const struct mb2_region *r = &info.mmap[j];

		if (!pc_map[i].length)
			continue;
		host_check(r->base == pc_map[i].base &&
				   r->length == pc_map[i].length &&
				   r->type == pc_map[i].type,
			   "mmap entry", file, line,
			   "entry %zu: %#llx+%#llx type %u, want %#llx+%#llx "
			   "type %u",
			   j, (unsigned long long)r->base,
			   (unsigned long long)r->length, r->type,
			   (unsigned long long)pc_map[i].base,
			   (unsigned long long)pc_map[i].length,
			   pc_map[i].type);
		j++;
	}
}

HOST_TEST(complete_information)
{
	struct mbi *m = mbi_start();
	const struct fb screen = {0xfd000000, 4096, 1024, 768, 32, MB2_FB_RGB};
	size_t new_acpi, len;
	uint8_t *buf;

	add_string_tag(m, MB2_TAG_CMDLINE, "console=serial quiet");
	add_string_tag(m, MB2_TAG_LOADER_NAME, "GRUB 2.12");
	tag_begin(m, 4); /* basic memory information: not used */
	put32(m, 639);
	put32(m, 130048);
	tag_end(m);
	add_mmap(m, 24, pc_map, ARRAY_SIZE(pc_map));
	add_module(m, 0x200000, 0x22a000, "initrd");
	add_module(m, 0x22a000, 0x300000, "/boot/test.bin arg1 arg2");
	add_module(m, 0x300000, 0x300000, ""); /* empty is allowed */
	add_fb_rgb(m, &screen);
	add_acpi(m, MB2_TAG_ACPI_OLD, 20, 0x11);
	new_acpi = add_acpi(m, MB2_TAG_ACPI_NEW, 36, 0x22);
	add_load_base(m, 0x200000);
	add_end(m);
	buf = mbi_finish(m, &len);

	CHECK_EQ(parse(buf, len), 0);
	MESSAGES(0, NULL);
	CHECK_EQ(info.total_size, len);
	CHECK_STR(info.cmdline, "console=serial quiet");
	CHECK(inside(info.cmdline, buf, len), "cmdline is a copy");
	CHECK_STR(info.loader_name, "GRUB 2.12");
	check_pc_map(__FILE__, __LINE__);

	CHECK_EQ(info.module_count, 3);
	CHECK_EQ(info.modules[0].start, 0x200000);
	CHECK_EQ(info.modules[0].end, 0x22a000);
	CHECK_STR(info.modules[0].cmdline, "initrd");
	CHECK_EQ(info.modules[1].start, 0x22a000);
	CHECK_EQ(info.modules[1].end, 0x300000);
	CHECK_STR(info.modules[1].cmdline, "/boot/test.bin arg1 arg2");
	CHECK(inside(info.modules[1].cmdline, buf, len), "string is a copy");
	CHECK_EQ(info.modules[2].start, 0x300000);
	CHECK_EQ(info.modules[2].end, 0x300000);
	CHECK_STR(info.modules[2].cmdline, "");

	CHECK_EQ(info.fb.kind, FB_KIND_RGB);
	CHECK_EQ(info.fb.phys, 0xfd000000);
	CHECK_EQ(info.fb.pitch, 4096);
	CHECK_EQ(info.fb.width, 1024);
	CHECK_EQ(info.fb.height, 768);
	CHECK_EQ(info.fb.bpp, 32);
	CHECK(info.fb.red_pos == 16 && info.fb.red_size == 8 &&
		      info.fb.green_pos == 8 && info.fb.green_size == 8 &&
		      info.fb.blue_pos == 0 && info.fb.blue_size == 8,
	      "colours %u/%u %u/%u %u/%u", info.fb.red_pos, info.fb.red_size,
	      info.fb.green_pos, info.fb.green_size, info.fb.blue_pos,
	      info.fb.blue_size);

	CHECK(info.rsdp == buf + new_acpi + 8, "rsdp %p, new tag body at %p",
	      info.rsdp, (void *)(buf + new_acpi + 8));
	CHECK_EQ(info.rsdp_size, 36);
	CHECK(info.rsdp_is_v2, "not v2");
	CHECK(info.has_load_base, "no load base");
	CHECK_EQ(info.load_base, 0x200000);
	free(buf);
}

/* GRUB fills entry_size in; a larger entry keeps the known fields first. */
HOST_TEST(mmap_larger_entries)
{
	struct mbi *m = mbi_start();
	size_t len;
	uint8_t *buf;

	add_mmap(m, 32, pc_map, ARRAY_SIZE(pc_map));
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	MESSAGES(0, NULL);
	check_pc_map(__FILE__, __LINE__);
	free(buf);

	/* A trailing partial entry is not read. */
	m = mbi_start();
	tag_begin(m, MB2_TAG_MMAP);
	put32(m, 24);
	put32(m, 0);
	put_entry(m, &pc_map[0], 24);
	put_entry(m, &pc_map[1], 24);
	put_fill(m, 0x77, 16); /* two thirds of another */
	tag_end(m);
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	CHECK_EQ(info.mmap_count, 2);
	free(buf);
}

HOST_TEST(framebuffer_kinds)
{
	static const struct fb ega = {0xb8000, 160, 80,
				      25,      16,  MB2_FB_EGA_TEXT};
	static const struct fb indexed = {0xa0000, 320, 320,
					  200,	   8,	MB2_FB_INDEXED};
	static const struct fb rgb = {0xe0000000, 3200, 800,
				      600,	  32,	MB2_FB_RGB};
	struct mbi *m = mbi_start();
	size_t len;
	uint8_t *buf;

	/* EGA text: no colour information, 32 bytes. */
	fb_common(m, &ega);
	CHECK_EQ(m->len - m->tag, 32);
	tag_end(m);
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	MESSAGES(0, NULL);
	CHECK_EQ(info.fb.kind, FB_KIND_EGA_TEXT);
	CHECK_EQ(info.fb.phys, 0xb8000);
	CHECK(info.fb.width == 80 && info.fb.height == 25 &&
		      info.fb.pitch == 160 && info.fb.bpp == 16,
	      "%ux%u pitch %u bpp %u", info.fb.width, info.fb.height,
	      info.fb.pitch, info.fb.bpp);
	free(buf);

	/* Indexed colour, with its palette: not supported. */
	m = mbi_start();
	fb_common(m, &indexed);
	put16(m, 2); /* colours */
	put_fill(m, 0x3f, 6);
	tag_end(m);
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	MESSAGES(1, "not supported");
	CHECK_EQ(info.fb.kind, FB_KIND_NONE);
	free(buf);

	/* RGB, 38-byte tag as the last tag before the end: read exactly. */
	m = mbi_start();
	CHECK_EQ(m->len, 8);
	add_fb_rgb(m, &rgb);
	CHECK_EQ(m->len, 8 + 40); /* 38 + 2 bytes of padding */
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(((uint32_t *)buf)[3], 38);
	CHECK_EQ(parse(buf, len), 0);
	MESSAGES(0, NULL);
	CHECK_EQ(info.fb.kind, FB_KIND_RGB);
	CHECK_EQ(info.fb.pitch, 3200);
	free(buf);

	/* RGB without its colour bytes, an unknown type. */
	for (int i = 0; i < 2; i++) {
		struct fb odd = rgb;

		m = mbi_start();
		odd.type = i ? 7 : MB2_FB_RGB;
		fb_common(m, &odd);
		tag_end(m);
		add_end(m);
		buf = mbi_finish(m, &len);
		CHECK_EQ(parse(buf, len), 0);
		MESSAGES(1, "not supported");
		CHECK_EQ(info.fb.kind, FB_KIND_NONE);
		free(buf);
	}

	/* Shorter than the common part. */
	m = mbi_start();
	tag_begin(m, MB2_TAG_FRAMEBUFFER);
	put64(m, 0xe0000000);
	put32(m, 3200);
	put32(m, 800);
	tag_end(m);
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	MESSAGES(1, "too short");
	CHECK_EQ(info.fb.kind, FB_KIND_NONE);
	free(buf);
}

HOST_TEST(framebuffer_invalid_geometry)
{
	static const struct fb base = {0xe0000000, 3200, 800,
				       600,	   32,	 MB2_FB_RGB};

	for (int i = 0; i < 8; i++) {
		struct fb f = base;
		struct mbi *m = mbi_start();
		size_t len;
		uint8_t *buf;

		switch (i % 4) {
		case 0:
			f.width = 0;
			break;
		case 1:
			f.pitch = 0;
			break;
		case 2:
			f.height = 0;
			break;
		case 3:
			f.addr = 0;
			break;
		}
		if (i >= 4) {
			f.type = MB2_FB_EGA_TEXT;
			fb_common(m, &f);
			tag_end(m);
		} else {
			add_fb_rgb(m, &f);
		}
		add_end(m);
		buf = mbi_finish(m, &len);
		CHECK_EQ(parse(buf, len), 0);
		MESSAGES(1, i % 4 == 3 ? "no linear framebuffer" : "invalid");
		CHECK(info.fb.kind == FB_KIND_NONE, "case %d: kind %d", i,
		      info.fb.kind);
		free(buf);
	}
}

HOST_TEST(acpi_new_wins)
{
	for (int order = 0; order < 2; order++) {
		struct mbi *m = mbi_start();
		size_t old_tag, new_tag, len;
		uint8_t *buf;

		if (order) {
			new_tag = add_acpi(m, MB2_TAG_ACPI_NEW, 36, 0x22);
			old_tag = add_acpi(m, MB2_TAG_ACPI_OLD, 20, 0x11);
		} else {
			old_tag = add_acpi(m, MB2_TAG_ACPI_OLD, 20, 0x11);
			new_tag = add_acpi(m, MB2_TAG_ACPI_NEW, 36, 0x22);
		}
		add_end(m);
		buf = mbi_finish(m, &len);
		CHECK_EQ(parse(buf, len), 0);
		MESSAGES(0, NULL);
		CHECK(info.rsdp == buf + new_tag + 8,
		      "order %d: rsdp at offset %td (old %zu, new %zu)", order,
		      (const uint8_t *)info.rsdp - buf, old_tag, new_tag);
		CHECK_EQ(info.rsdp_size, 36);
		CHECK(info.rsdp_is_v2, "order %d: not v2", order);
		free(buf);
	}
}

HOST_TEST(acpi_old_only_and_sizes)
{
	struct mbi *m = mbi_start();
	size_t tag, len;
	uint8_t *buf;

	tag = add_acpi(m, MB2_TAG_ACPI_OLD, 20, 0x11);
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	CHECK(info.rsdp == buf + tag + 8, "rsdp not in the old tag");
	CHECK_EQ(info.rsdp_size, 20);
	CHECK(!info.rsdp_is_v2, "v2 from the old tag");
	free(buf);

	/* Longer than any RSDP: capped. Empty: size 0. */
	m = mbi_start();
	add_acpi(m, MB2_TAG_ACPI_NEW, 100, 0x33);
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	CHECK_EQ(info.rsdp_size, MB2_MAX_RSDP_SIZE);
	free(buf);
	m = mbi_start();
	add_acpi(m, MB2_TAG_ACPI_NEW, 0, 0);
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	CHECK_EQ(info.rsdp_size, 0);
	free(buf);
}

HOST_TEST(load_base)
{
	struct mbi *m = mbi_start();
	size_t len;
	uint8_t *buf;

	add_load_base(m, 0xfffff000);
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	CHECK(info.has_load_base, "no load base");
	CHECK_EQ(info.load_base, 0xfffff000);
	free(buf);

	/* Too short to hold the address: ignored. */
	m = mbi_start();
	tag_begin(m, MB2_TAG_LOAD_BASE);
	tag_end(m);
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	CHECK(!info.has_load_base, "load base from an 8-byte tag");
	free(buf);
}

HOST_TEST(minimal_and_unknown_tags)
{
	struct mbi *m = mbi_start();
	size_t len;
	uint8_t *buf;

	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(len, 16);
	CHECK_EQ(parse(buf, len), 0);
	MESSAGES(0, NULL);
	EXPECT_EMPTY();
	CHECK_EQ(info.total_size, 16);
	/* More bytes available than the information has: fine. */
	free(buf);
	buf = calloc(1, 64);
	((uint32_t *)buf)[0] = 16;
	((uint32_t *)buf)[3] = 8; /* the end tag's size */
	CHECK_EQ(parse(buf, 64), 0);
	CHECK_EQ(info.total_size, 16);
	free(buf);

	/* Tags the kernel does not use, odd sizes, are stepped over. */
	m = mbi_start();
	for (uint32_t type = 4; type < 40; type++) {
		if (type == MB2_TAG_MMAP || type == MB2_TAG_FRAMEBUFFER ||
		    type == MB2_TAG_ACPI_OLD || type == MB2_TAG_ACPI_NEW ||
		    type == MB2_TAG_LOAD_BASE)
			continue;
		tag_begin(m, type);
		put_fill(m, 0xff, type % 13);
		tag_end(m);
	}
	add_string_tag(m, MB2_TAG_CMDLINE, "found");
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	MESSAGES(0, NULL);
	CHECK_STR(info.cmdline, "found");
	free(buf);
}

/* --- Malformed information ------------------------------------------------ */

HOST_TEST(bad_pointer_or_avail)
{
	struct mbi *m = mbi_start();
	size_t len;
	uint8_t *buf, *shifted;

	add_string_tag(m, MB2_TAG_CMDLINE, "x");
	add_end(m);
	buf = mbi_finish(m, &len);

	CHECK_EQ(parse(NULL, 4096), -EINVAL);
	MESSAGES(1, "missing");
	EXPECT_EMPTY();
	for (size_t avail = 0; avail < 16; avail++) {
		CHECK_EQ(parse(buf, avail), -EINVAL);
		MESSAGES(1, "missing");
		EXPECT_EMPTY();
	}
	/* The same bytes off an 8-byte boundary. */
	shifted = malloc(len + 8);
	for (size_t shift = 1; shift < 8; shift++) {
		memcpy(shifted + shift, buf, len);
		CHECK_EQ(parse(shifted + shift, len), -EINVAL);
		MESSAGES(1, "misaligned");
		EXPECT_EMPTY();
	}
	free(shifted);
	free(buf);
}

HOST_TEST(bad_total_size)
{
	static const uint32_t too_small[] = {0, 1, 8, 15};
	struct mbi *m = mbi_start();
	size_t len;
	uint8_t *buf;

	add_string_tag(m, MB2_TAG_CMDLINE, "x");
	add_end(m);
	for (size_t i = 0; i < ARRAY_SIZE(too_small); i++) {
		buf = mbi_finish_total(m, too_small[i], &len);
		CHECK_EQ(parse(buf, len), -EINVAL);
		MESSAGES(1, "total size");
		EXPECT_EMPTY();
		free(buf);
	}
	/* Claims more than the buffer has. */
	buf = mbi_finish_total(m, (uint32_t)m->len + 8, &len);
	CHECK_EQ(parse(buf, len), -EINVAL);
	MESSAGES(1, "total size");
	free(buf);
	buf = mbi_finish_total(m, UINT32_MAX, &len);
	CHECK_EQ(parse(buf, len), -EINVAL);
	MESSAGES(1, "total size");
	free(buf);
	/* A buffer at the limit, then one over. */
	for (size_t total = MB2_MAX_TOTAL; total <= MB2_MAX_TOTAL + 8;
	     total += 8) {
		buf = calloc(1, total);
		((uint32_t *)buf)[0] = (uint32_t)total;
		((uint32_t *)buf)[2] = 1000; /* an unused tag, everything */
		((uint32_t *)buf)[3] = (uint32_t)(total - 16);
		((uint32_t *)(buf + total - 8))[1] = 8; /* end tag */
		CHECK_EQ(parse(buf, total),
			 total == MB2_MAX_TOTAL ? 0 : -EINVAL);
		MESSAGES(total == MB2_MAX_TOTAL ? 0 : 1, "total size");
		free(buf);
	}
}

HOST_TEST(bad_tag_size)
{
	static const uint32_t sizes[] = {0, 1, 4, 7};

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		struct mbi *m = mbi_start();
		size_t len;
		uint8_t *buf;

		add_string_tag(m, MB2_TAG_CMDLINE, "before");
		tag_begin(m, MB2_TAG_LOADER_NAME);
		put_fill(m, 'a', 8);
		tag_end_size(m, sizes[i]);
		add_end(m);
		buf = mbi_finish(m, &len);
		CHECK_EQ(parse(buf, len), -EINVAL);
		MESSAGES(1, "bad size");
		free(buf);
	}
}

HOST_TEST(tag_past_the_end)
{
	struct mbi *m = mbi_start();
	size_t len;
	uint8_t *buf;

	add_string_tag(m, MB2_TAG_CMDLINE, "before");
	tag_begin(m, MB2_TAG_CMDLINE);
	put_fill(m, 'a', 8);
	tag_end_size(m, 17); /* one byte more than is left */
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), -EINVAL);
	MESSAGES(1, "bad size");
	free(buf);

	/* Sizes near 2^32 must not wrap the offset. */
	m = mbi_start();
	tag_begin(m, MB2_TAG_MMAP);
	put32(m, 24);
	put32(m, 0);
	tag_end_size(m, UINT32_MAX - 3);
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), -EINVAL);
	MESSAGES(1, "bad size");
	CHECK_EQ(info.mmap_count, 0);
	free(buf);
}

HOST_TEST(no_end_tag)
{
	struct mbi *m = mbi_start();
	size_t len;
	uint8_t *buf;

	add_string_tag(m, MB2_TAG_CMDLINE, "no end");
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), -EINVAL);
	MESSAGES(1, "no end tag");
	free(buf);

	/* Four bytes left over: too few for a tag header. */
	m = mbi_start();
	add_string_tag(m, MB2_TAG_CMDLINE, "no end");
	put32(m, 0);
	buf = mbi_finish(m, &len);
	CHECK_EQ(len % 8, 4);
	CHECK_EQ(parse(buf, len), -EINVAL);
	MESSAGES(1, "no end tag");
	free(buf);

	/* Garbage where the end tag should be. */
	m = mbi_start();
	put_fill(m, 0x55, 8);
	buf = mbi_finish(m, &len);
	memset(buf + 8, 0xff, 8); /* a tag of type and size 0xffffffff */
	CHECK_EQ(parse(buf, len), -EINVAL);
	MESSAGES(1, "bad size");
	free(buf);
}

HOST_TEST(unterminated_strings)
{
	struct mbi *m = mbi_start();
	size_t len;
	uint8_t *buf;

	/* Followed by the end tag: NULs lie just past the tag. */
	tag_begin(m, MB2_TAG_CMDLINE);
	put(m, "abcdefg", 7);
	tag_end(m);
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	MESSAGES(1, "not terminated");
	CHECK_STR(info.cmdline, "");
	free(buf);

	/*
	 * The last bytes of the buffer, no NUL anywhere after the tag: ASan
	 * reports a read past it. (Then there is no end tag.)
	 */
	m = mbi_start();
	tag_begin(m, MB2_TAG_CMDLINE);
	put_fill(m, 'x', 16);
	tag_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(len, 32);
	CHECK_EQ(parse(buf, len), -EINVAL);
	MESSAGES(2, "not terminated");
	CHECK_STR(info.cmdline, "");
	free(buf);

	/* No bytes at all. */
	m = mbi_start();
	tag_begin(m, MB2_TAG_CMDLINE);
	tag_end(m);
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	MESSAGES(1, "not terminated");
	CHECK_STR(info.cmdline, "");
	free(buf);

	/* Loader name and module strings: NULL, silently. */
	m = mbi_start();
	tag_begin(m, MB2_TAG_LOADER_NAME);
	put_fill(m, 'L', 8);
	tag_end(m);
	tag_begin(m, MB2_TAG_MODULE);
	put32(m, 0x1000);
	put32(m, 0x2000);
	put_fill(m, 'M', 8);
	tag_end(m);
	add_module(m, 0x3000, 0x4000, NULL); /* 16 bytes, no string */
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	MESSAGES(0, NULL);
	CHECK(!info.loader_name, "loader name %s",
	      host_quote(info.loader_name));
	CHECK_EQ(info.module_count, 2);
	CHECK(!info.modules[0].cmdline && !info.modules[1].cmdline,
	      "module strings %s %s", host_quote(info.modules[0].cmdline),
	      host_quote(info.modules[1].cmdline));
	free(buf);
}

HOST_TEST(mmap_bad_entry_size)
{
	static const uint32_t sizes[] = {0, 8, 16, 20, 23, 25, 28, 30, 33};

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		struct mbi *m = mbi_start();
		size_t len;
		uint8_t *buf;

		add_mmap(m, sizes[i], pc_map, 3);
		add_string_tag(m, MB2_TAG_CMDLINE, "after");
		add_end(m);
		buf = mbi_finish(m, &len);
		CHECK_EQ(parse(buf, len), 0);
		MESSAGES(1, "entry size");
		CHECK(info.mmap_count == 0, "entry size %u: %zu entries",
		      sizes[i], info.mmap_count);
		CHECK_STR(info.cmdline, "after"); /* the walk goes on */
		free(buf);
	}

	/* A tag too short for its own header fields. */
	struct mbi *m = mbi_start();
	size_t len;
	uint8_t *buf;

	tag_begin(m, MB2_TAG_MMAP);
	put32(m, 24);
	tag_end(m);
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	MESSAGES(1, "too short");
	CHECK_EQ(info.mmap_count, 0);
	free(buf);
}

HOST_TEST(mmap_wrapping_and_empty)
{
	static const struct entry map[] = {
		{0x1000, 0x1000, MB2_MMAP_AVAILABLE},
		{0xfffffffffffff000, 0x2000, MB2_MMAP_AVAILABLE}, /* wraps */
		{0x2000, 0, MB2_MMAP_RESERVED},			  /* empty */
		{UINT64_MAX, UINT64_MAX, MB2_MMAP_RESERVED},	  /* wraps */
		{0xffffffff00000000, 0xfffffffe, MB2_MMAP_RESERVED},
		/* Ends exactly at 2^64, which has no 64-bit end: refused. */
		{0xfffffffffffff000, 0x1000, MB2_MMAP_RESERVED},
		{0x3000, 0x1000, MB2_MMAP_AVAILABLE},
	};
	struct mbi *m = mbi_start();
	size_t len;
	uint8_t *buf;

	add_mmap(m, 24, map, ARRAY_SIZE(map));
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	MESSAGES(3, "wraps");
	CHECK_EQ(info.mmap_count, 3);
	CHECK_EQ(info.mmap[0].base, 0x1000);
	CHECK_EQ(info.mmap[1].base, 0xffffffff00000000);
	CHECK_EQ(info.mmap[1].length, 0xfffffffe);
	CHECK_EQ(info.mmap[2].base, 0x3000);
	CHECK(!info.mmap_truncated, "truncated");
	free(buf);
}

HOST_TEST(mmap_too_many_entries)
{
	static struct entry map[MB2_MAX_MMAP + 10];
	struct mbi *m;
	size_t len;
	uint8_t *buf;

	for (size_t i = 0; i < ARRAY_SIZE(map); i++)
		map[i] = (struct entry){i * 0x10000, 0x8000, 1 + i % 5};

	/* Exactly the limit, plus empty entries which do not count. */
	m = mbi_start();
	add_mmap(m, 24, map, MB2_MAX_MMAP);
	add_mmap(m, 24, (const struct entry[]){{0x5000, 0, 1}, {0, 0, 2}}, 2);
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	MESSAGES(0, NULL);
	CHECK_EQ(info.mmap_count, MB2_MAX_MMAP);
	CHECK(!info.mmap_truncated, "truncated at the limit");
	free(buf);

	/* Past it: the first MB2_MAX_MMAP kept, one message. */
	m = mbi_start();
	add_mmap(m, 32, map, ARRAY_SIZE(map));
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	MESSAGES(1, "more than");
	CHECK_EQ(info.mmap_count, MB2_MAX_MMAP);
	CHECK(info.mmap_truncated, "not truncated");
	CHECK_EQ(info.mmap[0].base, 0);
	CHECK_EQ(info.mmap[MB2_MAX_MMAP - 1].base,
		 (MB2_MAX_MMAP - 1) * 0x10000);
	CHECK_EQ(info.mmap[MB2_MAX_MMAP - 1].type, 1 + (MB2_MAX_MMAP - 1) % 5);
	free(buf);
}

HOST_TEST(modules)
{
	struct mbi *m = mbi_start();
	size_t len;
	uint8_t *buf;
	char name[32];

	for (uint32_t i = 0; i < MB2_MAX_MODULES + 2; i++) {
		snprintf(name, sizeof(name), "module%u", i);
		add_module(m, 0x1000000 + i * 0x10000,
			   0x1000000 + i * 0x10000 + 0x800, name);
	}
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	MESSAGES(2, "more than");
	CHECK_EQ(info.module_count, MB2_MAX_MODULES);
	for (uint32_t i = 0; i < info.module_count; i++) {
		snprintf(name, sizeof(name), "module%u", i);
		CHECK_STR(info.modules[i].cmdline, name);
		CHECK(inside(info.modules[i].cmdline, buf, len), "copied");
		CHECK_EQ(info.modules[i].start, 0x1000000 + i * 0x10000);
		CHECK_EQ(info.modules[i].end, 0x1000000 + i * 0x10000 + 0x800);
	}
	free(buf);

	/* end < start, and a tag too short for start and end. */
	m = mbi_start();
	add_module(m, 0x2000, 0x1fff, "backwards");
	tag_begin(m, MB2_TAG_MODULE);
	put32(m, 0x1000);
	tag_end(m);
	add_module(m, 0x5000, 0x6000, "good");
	add_end(m);
	buf = mbi_finish(m, &len);
	CHECK_EQ(parse(buf, len), 0);
	MESSAGES(2, "malformed module");
	CHECK_EQ(info.module_count, 1);
	CHECK_STR(info.modules[0].cmdline, "good");
	free(buf);
}

HOST_TEST(mmap_type_names)
{
	CHECK_STR(mb2_mmap_type_name(MB2_MMAP_AVAILABLE), "available");
	CHECK_STR(mb2_mmap_type_name(MB2_MMAP_RESERVED), "reserved");
	CHECK_STR(mb2_mmap_type_name(MB2_MMAP_ACPI_RECLAIMABLE),
		  "ACPI reclaimable");
	CHECK_STR(mb2_mmap_type_name(MB2_MMAP_ACPI_NVS), "ACPI NVS");
	CHECK_STR(mb2_mmap_type_name(MB2_MMAP_BAD), "bad RAM");
	CHECK_STR(mb2_mmap_type_name(0), "unknown");
	CHECK_STR(mb2_mmap_type_name(UINT32_MAX), "unknown");
}
