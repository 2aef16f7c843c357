// SPDX-License-Identifier: MIT
/*
 * Walking the multiboot2 tags. The layout (spec 3.6): a u32 total size and a
 * reserved u32, then tags, each starting on an 8-byte boundary with a u32
 * type and a u32 size (header included), ending with a tag of type 0. Every
 * size is checked before anything behind it is read: a malformed structure is
 * reported, never followed off the end.
 */
#include "boot/multiboot2.h"
#include "lib/errno.h"
#include "lib/string.h"

struct tag_header {
	uint32_t type;
	uint32_t size;
};

struct mmap_tag {
	struct tag_header h;
	uint32_t entry_size;
	uint32_t entry_version;
	/* entries follow */
};

struct mmap_entry {
	uint64_t base;
	uint64_t length;
	uint32_t type;
	uint32_t reserved;
};

struct module_tag {
	struct tag_header h;
	uint32_t start;
	uint32_t end;
	/* NUL-terminated string follows */
};

struct framebuffer_tag {
	struct tag_header h;
	uint64_t addr;
	uint32_t pitch;
	uint32_t width;
	uint32_t height;
	uint8_t bpp;
	uint8_t type;
	uint16_t reserved;
	/* colour info follows; for RGB: */
	uint8_t red_pos, red_size;
	uint8_t green_pos, green_size;
	uint8_t blue_pos, blue_size;
};

struct load_base_tag {
	struct tag_header h;
	uint32_t base;
};

#define TAG_ALIGN 8
/* The bytes of the framebuffer tag before its colour information. */
#define FB_TAG_COMMON_SIZE offsetof(struct framebuffer_tag, red_pos)
/* ...and with the RGB colour information (no padding in the real tag). */
#define FB_TAG_RGB_SIZE (offsetof(struct framebuffer_tag, blue_size) + 1)

const char *mb2_mmap_type_name(uint32_t type)
{
	switch (type) {
	case MB2_MMAP_AVAILABLE:
		return "available";
	case MB2_MMAP_RESERVED:
		return "reserved";
	case MB2_MMAP_ACPI_RECLAIMABLE:
		return "ACPI reclaimable";
	case MB2_MMAP_ACPI_NVS:
		return "ACPI NVS";
	case MB2_MMAP_BAD:
		return "bad RAM";
	default:
		return "unknown";
	}
}

/* A string inside a tag: must end with a NUL before the tag does. */
static const char *tag_string(const uint8_t *start, const uint8_t *end)
{
	size_t room = start < end ? (size_t)(end - start) : 0;

	if (!room || strnlen((const char *)start, room) == room)
		return NULL;
	return (const char *)start;
}

static void parse_mmap(const uint8_t *tag, uint32_t size, struct boot_info *out,
		       mb2_report report, void *ctx)
{
	const struct mmap_tag *m = (const void *)tag;

	if (size < sizeof(*m)) {
		report(ctx, "multiboot2: memory map tag too short (%u bytes)",
		       size);
		return;
	}
	if (m->entry_size < sizeof(struct mmap_entry) || m->entry_size % 8) {
		report(ctx, "multiboot2: memory map entry size %u is invalid",
		       m->entry_size);
		return;
	}
	for (uint32_t off = sizeof(*m); off + m->entry_size <= size;
	     off += m->entry_size) {
		const struct mmap_entry *e = (const void *)(tag + off);

		if (e->length == 0)
			continue;
		if (e->base + e->length < e->base) {
			report(ctx,
			       "multiboot2: memory map entry at %#llx wraps "
			       "around (ignored)",
			       (unsigned long long)e->base);
			continue;
		}
		if (out->mmap_count == MB2_MAX_MMAP) {
			out->mmap_truncated = true;
			continue;
		}
		out->mmap[out->mmap_count++] = (struct mb2_region){
			.base = e->base, .length = e->length, .type = e->type};
	}
	if (out->mmap_truncated)
		report(ctx,
		       "multiboot2: memory map has more than %d entries; "
		       "the rest are ignored",
		       MB2_MAX_MMAP);
}

static void parse_module(const uint8_t *tag, uint32_t size,
			 struct boot_info *out, mb2_report report, void *ctx)
{
	const struct module_tag *m = (const void *)tag;

	if (size < sizeof(*m) || m->end < m->start) {
		report(ctx, "multiboot2: malformed module tag (ignored)");
		return;
	}
	if (out->module_count == MB2_MAX_MODULES) {
		report(ctx, "multiboot2: more than %d modules; ignoring %#x",
		       MB2_MAX_MODULES, m->start);
		return;
	}
	out->modules[out->module_count++] = (struct mb2_module){
		.start = m->start,
		.end = m->end,
		.cmdline = tag_string(tag + sizeof(*m), tag + size),
	};
}

static void parse_framebuffer(const uint8_t *tag, uint32_t size,
			      struct boot_info *out, mb2_report report,
			      void *ctx)
{
	const struct framebuffer_tag *f = (const void *)tag;
	struct fb_info *fb = &out->fb;

	if (size < FB_TAG_COMMON_SIZE) {
		report(ctx, "multiboot2: framebuffer tag too short");
		return;
	}
	*fb = (struct fb_info){
		.kind = FB_KIND_NONE,
		.phys = f->addr,
		.pitch = f->pitch,
		.width = f->width,
		.height = f->height,
		.bpp = f->bpp,
	};
	if (f->type == MB2_FB_EGA_TEXT) {
		fb->kind = FB_KIND_EGA_TEXT;
	} else if (f->type == MB2_FB_RGB && size >= FB_TAG_RGB_SIZE) {
		fb->kind = FB_KIND_RGB;
		fb->red_pos = f->red_pos;
		fb->red_size = f->red_size;
		fb->green_pos = f->green_pos;
		fb->green_size = f->green_size;
		fb->blue_pos = f->blue_pos;
		fb->blue_size = f->blue_size;
	} else {
		report(ctx,
		       "multiboot2: framebuffer type %u not supported "
		       "(indexed colour or short tag); no screen output",
		       f->type);
		return;
	}
	/* A UEFI display that can only copy pixels (a "blt-only" GOP, as
	 * virtio-gpu's) gives GRUB a mode but no framebuffer to hand on. */
	if (fb->width && fb->height && fb->pitch && !fb->phys) {
		report(ctx,
		       "multiboot2: the loader's %ux%u framebuffer has no "
		       "address: this display has no linear framebuffer "
		       "(a UEFI display that only copies); no screen output, "
		       "use the serial port or a BIOS boot",
		       fb->width, fb->height);
		fb->kind = FB_KIND_NONE;
		return;
	}
	if (!fb->width || !fb->height || !fb->pitch ||
	    (uint64_t)fb->pitch * fb->height / fb->height != fb->pitch) {
		report(ctx,
		       "multiboot2: framebuffer %ux%u pitch %u at %#llx "
		       "is invalid",
		       fb->width, fb->height, fb->pitch,
		       (unsigned long long)fb->phys);
		fb->kind = FB_KIND_NONE;
	}
}

static void parse_tag(const uint8_t *tag, const struct tag_header *h,
		      struct boot_info *out, mb2_report report, void *ctx)
{
	const uint8_t *body = tag + sizeof(*h);
	const uint8_t *end = tag + h->size;

	switch (h->type) {
	case MB2_TAG_CMDLINE:
		out->cmdline = tag_string(body, end);
		if (!out->cmdline) {
			report(ctx, "multiboot2: command line is not "
				    "terminated (ignored)");
			out->cmdline = "";
		}
		break;
	case MB2_TAG_LOADER_NAME:
		out->loader_name = tag_string(body, end);
		break;
	case MB2_TAG_MODULE:
		parse_module(tag, h->size, out, report, ctx);
		break;
	case MB2_TAG_MMAP:
		parse_mmap(tag, h->size, out, report, ctx);
		break;
	case MB2_TAG_FRAMEBUFFER:
		parse_framebuffer(tag, h->size, out, report, ctx);
		break;
	case MB2_TAG_ACPI_OLD:
	case MB2_TAG_ACPI_NEW:
		/* The new (2.0+) RSDP wins over the old one. */
		if (out->rsdp_is_v2 && h->type == MB2_TAG_ACPI_OLD)
			break;
		out->rsdp = body;
		out->rsdp_size = MIN((size_t)(end - body), MB2_MAX_RSDP_SIZE);
		out->rsdp_is_v2 = h->type == MB2_TAG_ACPI_NEW;
		break;
	case MB2_TAG_LOAD_BASE:
		if (h->size >= sizeof(struct load_base_tag)) {
			out->has_load_base = true;
			out->load_base =
				((const struct load_base_tag *)tag)->base;
		}
		break;
	default:
		break; /* tags shootdown does not use */
	}
}

int mb2_parse(const void *mbi, size_t avail, struct boot_info *out,
	      mb2_report report, void *ctx)
{
	const uint8_t *base = mbi;
	uint32_t total;
	size_t off;

	memset(out, 0, sizeof(*out));
	out->cmdline = "";
	if (!mbi || avail < 16 || ((uintptr_t)mbi % TAG_ALIGN)) {
		report(ctx, "multiboot2: boot information missing or "
			    "misaligned");
		return -EINVAL;
	}
	total = *(const uint32_t *)base;
	if (total < 16 || total > avail || total > MB2_MAX_TOTAL) {
		report(ctx, "multiboot2: total size %u is invalid", total);
		return -EINVAL;
	}
	out->total_size = total;
	for (off = 8; off + sizeof(struct tag_header) <= total;) {
		const struct tag_header *h = (const void *)(base + off);

		if (h->size < sizeof(*h) || h->size > total - off) {
			report(ctx,
			       "multiboot2: tag %u at offset %zu has bad "
			       "size %u",
			       h->type, off, h->size);
			return -EINVAL;
		}
		if (h->type == MB2_TAG_END)
			return 0;
		parse_tag(base + off, h, out, report, ctx);
		off += ALIGN_UP((size_t)h->size, TAG_ALIGN);
	}
	report(ctx, "multiboot2: no end tag within %u bytes", total);
	return -EINVAL;
}
