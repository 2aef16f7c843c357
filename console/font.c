// SPDX-License-Identifier: MIT
/*
 * The embedded PSF2 console font. PSF2 is the Linux console font format: a
 * 32-byte header, then glyph_count bitmaps of charsize bytes each. Our file
 * comes from tools/make/mkfont.py, but it is checked like any other input: a
 * broken build step must turn the screen off, not draw from wild pointers.
 */
#include "console/font.h"
#include "lib/string.h"

/* build/console/font_psf.o (see the Makefile) */
extern const uint8_t font_psf_start[], font_psf_end[];

#define PSF2_MAGIC 0x864ab572U /* bytes 72 b5 4a 86, read little-endian */

struct psf2_header {
	uint32_t magic;
	uint32_t version;     /* 0 */
	uint32_t header_size; /* offset of the first glyph */
	uint32_t flags;	      /* bit 0: a Unicode table follows (unused here) */
	uint32_t length;      /* number of glyphs */
	uint32_t charsize;    /* bytes per glyph */
	uint32_t height;
	uint32_t width;
};

static struct font font;
static bool parsed;
static bool valid;

static bool parse(const uint8_t *data, size_t size)
{
	struct psf2_header h;
	uint32_t row_bytes;

	if (size < sizeof(h))
		return false;
	/* incbin gives no alignment: copy the header instead of casting. */
	memcpy(&h, data, sizeof(h));
	if (h.magic != PSF2_MAGIC || h.header_size < sizeof(h) ||
	    h.header_size > size)
		return false;
	/* Bounds keep the products below from overflowing. */
	if (h.width == 0 || h.width > 64 || h.height == 0 || h.height > 64 ||
	    h.length == 0)
		return false;
	row_bytes = (h.width + 7) / 8;
	if (h.charsize != row_bytes * h.height)
		return false;
	if ((uint64_t)h.length * h.charsize > size - h.header_size)
		return false;

	font = (struct font){
		.glyph_width = h.width,
		.glyph_height = h.height,
		.glyph_count = h.length,
		.bytes_per_row = row_bytes,
		.glyphs = data + h.header_size,
	};
	return true;
}

const struct font *font_get(void)
{
	/* Two symbols, not one array: subtract their addresses. */
	size_t size = (uintptr_t)font_psf_end - (uintptr_t)font_psf_start;

	if (!parsed) {
		valid = parse(font_psf_start, size);
		parsed = true;
	}
	return valid ? &font : NULL;
}

const uint8_t *font_glyph(const struct font *f, unsigned char c)
{
	uint32_t index = c;

	if (index >= f->glyph_count)
		index = '?' < f->glyph_count ? '?' : 0;
	return f->glyphs + (size_t)index * f->glyph_height * f->bytes_per_row;
}
