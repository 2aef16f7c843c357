/* SPDX-License-Identifier: MIT */
/*
 * The embedded console font: a PSF2 file (8x16 glyphs) generated at build time
 * by tools/make/mkfont.py from the glyph drawings in console/font.txt, and linked
 * into .rodata by NASM's incbin (symbols font_psf_start / font_psf_end).
 */
#ifndef CONSOLE_FONT_H
#define CONSOLE_FONT_H

#include "lib/types.h"

struct font {
	uint32_t glyph_width;  /* pixels */
	uint32_t glyph_height; /* pixels */
	uint32_t glyph_count;
	uint32_t bytes_per_row; /* (glyph_width + 7) / 8 */
	const uint8_t *glyphs;	/* glyph_count * glyph_height rows */
};

/*
 * The font, parsed from the embedded PSF2 file on the first call; NULL if
 * the file is malformed. The first call must not race with another (fbcon
 * makes it from fbcon_init, during boot).
 */
const struct font *font_get(void);

/*
 * The glyph_height rows (bytes_per_row bytes each, most significant bit =
 * leftmost pixel) drawing byte c. Our font has a glyph for all 256 bytes
 * (a box for those font.txt does not draw); a font with fewer falls back to
 * its '?' glyph.
 */
const uint8_t *font_glyph(const struct font *font, unsigned char c);

#endif
