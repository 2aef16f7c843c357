// SPDX-License-Identifier: MIT
/*
 * Framebuffer text console.
 *
 * Both kinds of screen are handled as a grid of "pixels" written whole:
 *  - RGB: real pixels of 2, 3 or 4 bytes; a character cell is a glyph of
 *    the font (8x16), each font pixel drawn as a square of scale x scale
 *    pixels, and every pixel of it is written, ink or background;
 *  - EGA text: each "pixel" is a 2-byte cell, character then attribute, and
 *    a character cell is one of them.
 * Video memory is never read: it is slow on real hardware (a 4K screen
 * read back for each scrolled line takes a visible while). The shadow, in
 * RAM, holds the character of every cell; a scroll moves the shadow and
 * redraws only the cells whose character changed.
 * The caller (console/console.c) serialises calls; nothing here may print,
 * since printing comes back here.
 */
#include "console/fbcon.h"
#include "console/font.h"
#include "lib/option.h"
#include "lib/string.h"
#include "arch/x86.h"

#define TAB_WIDTH 8

/*
 * The shadow's size: every cell of a 7680x4320 (8K) screen at scale 1.
 * A screen with more cells at the scale in force keeps its top rows only
 * (fbcon_init says how many fit), so nothing is drawn past the shadow.
 */
#define SHADOW_CELLS (960 * 270)

/* Text mode attribute byte: light grey on black, the PC default. */
#define EGA_ATTR 0x07U
/* CP437's small square: what text mode shows for unprintable bytes. */
#define EGA_UNPRINTABLE 0xfe
/*
 * A matrix in text mode: each cell is two modules, one above the other,
 * drawn with CP437's block characters in white on black.
 */
#define EGA_MATRIX_ATTR 0x0fU
#define EGA_BLOCK_FULL	0xdbU
#define EGA_BLOCK_UPPER 0xdfU
#define EGA_BLOCK_LOWER 0xdcU
#define EGA_BLOCK_NONE	' '

/* VGA CRT controller: index and data ports, and the cursor start register. */
#define VGA_CRTC_INDEX	      0x3d4
#define VGA_CRTC_DATA	      0x3d5
#define VGA_CRTC_CURSOR_START 0x0a
#define VGA_CURSOR_DISABLE    0x20

struct fbcon {
	enum fb_kind kind; /* FB_KIND_NONE until fbcon_init succeeds */
	uint8_t *base;	   /* where the first pixel is mapped */
	uint32_t pitch;	   /* bytes from one line of pixels to the next */
	uint32_t width;	   /* pixels per line */
	uint32_t height;   /* lines */
	uint32_t bytes_per_pixel;
	uint32_t fg, bg;	 /* pixel values of the text's two colours */
	uint32_t light, dark;	 /* and of a matrix's (RGB only) */
	const struct font *font; /* NULL in text mode */
	uint32_t cell_width;	 /* pixels per character cell, across */
	uint32_t cell_height;	 /* and down */
	uint32_t scale;		 /* screen pixels per font pixel, each way */
	uint32_t columns, rows;	 /* character cells on screen */
	uint32_t col, row;	 /* where the next character goes */
};

static struct fbcon con;

/* The character in each cell, row by row, columns per row. */
static uint8_t shadow[SHADOW_CELLS];
/*
 * The screen shows pixels the shadow does not describe (a matrix): the
 * next scroll redraws every cell instead of the changed ones.
 */
static bool shadow_stale;

/*
 * font_scale=: in the order of the words, so choice i is scale i (auto is
 * 0). auto picks the largest scale whose thresholds the screen meets:
 * x2 from 1600x1000 pixels (100 columns or more), x3 from 3000x1700 (125
 * columns or more), so text stays readable on a high-resolution laptop
 * screen and a line of the boot log still fits across.
 */
enum { FONT_SCALE_AUTO };
static const char *const font_scale_words[] = {"auto", "1", "2", "3", NULL};
static const struct option_desc font_scale_desc = {
	.name = "font_scale",
	.type = OPTION_CHOICE,
	.choices = font_scale_words,
	.help = "how many screen pixels each pixel of the 8x16 font takes, "
		"each way; `auto`: 2 from 1600x1000 pixels, 3 from 3000x1700, "
		"else 1"};
static struct option_value font_scale_option;
OPTION(13, font_scale, &font_scale_desc, &font_scale_option, NULL, NULL);

static uint32_t font_scale(uint32_t width, uint32_t height)
{
	if (font_scale_option.choice != FONT_SCALE_AUTO)
		return font_scale_option.choice;
	if (width >= 3000 && height >= 1700)
		return 3;
	if (width >= 1600 && height >= 1000)
		return 2;
	return 1;
}

/*
 * Scale an 8-bit intensity to a field of `size` bits at bit `pos`, so the
 * same colour comes out in 5:6:5, 8:8:8 or 10:10:10 layouts.
 */
static uint32_t channel(uint8_t value, uint8_t pos, uint8_t size)
{
	uint32_t max = (1U << size) - 1;

	return (value * max + 127) / 255 << pos;
}

static uint32_t rgb(const struct fb_info *fb, uint8_t r, uint8_t g, uint8_t b)
{
	return channel(r, fb->red_pos, fb->red_size) |
	       channel(g, fb->green_pos, fb->green_size) |
	       channel(b, fb->blue_pos, fb->blue_size);
}

static bool field_fits(uint8_t pos, uint8_t size, uint8_t bpp)
{
	return size >= 1 && size <= 16 && pos + size <= bpp;
}

static void put_pixel(uint8_t *p, uint32_t value)
{
	switch (con.bytes_per_pixel) {
	case 2:
		*(uint16_t *)p = (uint16_t)value;
		break;
	case 3:
		p[0] = (uint8_t)value;
		p[1] = (uint8_t)(value >> 8);
		p[2] = (uint8_t)(value >> 16);
		break;
	case 4:
		*(uint32_t *)p = value;
		break;
	}
}

/* Fill `count` lines of pixels (of cells in text mode) with background. */
static void blank_lines(uint32_t first, uint32_t count)
{
	for (uint32_t y = first; y < first + count; y++) {
		uint8_t *line = con.base + (size_t)y * con.pitch;

		for (uint32_t x = 0; x < con.width; x++)
			put_pixel(line + x * con.bytes_per_pixel, con.bg);
	}
}

static void draw_char(uint32_t col, uint32_t row, unsigned char c)
{
	uint8_t *line = con.base + (size_t)row * con.cell_height * con.pitch +
			(size_t)col * con.cell_width * con.bytes_per_pixel;
	const uint8_t *bits;

	if (con.kind == FB_KIND_EGA_TEXT) {
		if (c < 0x20 || c > 0x7e)
			c = EGA_UNPRINTABLE;
		put_pixel(line, c | EGA_ATTR << 8);
		return;
	}

	/* Glyph rows are bitmaps, most significant bit leftmost; each font
	 * pixel becomes scale x scale screen pixels. */
	bits = font_glyph(con.font, c);
	for (uint32_t y = 0; y < con.font->glyph_height; y++) {
		for (uint32_t repeat = 0; repeat < con.scale; repeat++) {
			uint8_t *p = line;

			for (uint32_t x = 0; x < con.font->glyph_width; x++) {
				bool ink = bits[x / 8] & (0x80 >> (x % 8));

				for (uint32_t i = 0; i < con.scale; i++) {
					put_pixel(p, ink ? con.fg : con.bg);
					p += con.bytes_per_pixel;
				}
			}
			line += con.pitch;
		}
		bits += con.font->bytes_per_row;
	}
}

static uint8_t *shadow_cell(uint32_t col, uint32_t row)
{
	return &shadow[(size_t)row * con.columns + col];
}

/* Puts c in a cell, drawing it only if the screen shows something else. */
static void set_cell(uint32_t col, uint32_t row, unsigned char c)
{
	uint8_t *cell = shadow_cell(col, row);

	if (*cell == c && !shadow_stale)
		return;
	*cell = c;
	draw_char(col, row, c);
}

/*
 * Move every text row up by one and blank the last, from the shadow: only
 * the cells whose character changes are drawn (a line of text over a
 * blank one, say), and video memory is never read. After a matrix the
 * screen is blanked and every cell drawn.
 */
static void scroll(void)
{
	if (shadow_stale)
		blank_lines(0, con.height);
	for (uint32_t row = 0; row + 1 < con.rows; row++) {
		for (uint32_t col = 0; col < con.columns; col++)
			set_cell(col, row, *shadow_cell(col, row + 1));
	}
	for (uint32_t col = 0; col < con.columns; col++)
		set_cell(col, con.rows - 1, ' ');
	shadow_stale = false;
}

static void newline(void)
{
	con.col = 0;
	if (con.row + 1 < con.rows)
		con.row++;
	else
		scroll();
}

static bool init_rgb(struct fbcon *c, const struct fb_info *fb)
{
	if (fb->bpp != 15 && fb->bpp != 16 && fb->bpp != 24 && fb->bpp != 32)
		return false;
	if (!field_fits(fb->red_pos, fb->red_size, fb->bpp) ||
	    !field_fits(fb->green_pos, fb->green_size, fb->bpp) ||
	    !field_fits(fb->blue_pos, fb->blue_size, fb->bpp))
		return false;
	c->font = font_get();
	if (!c->font)
		return false;
	c->bytes_per_pixel = (fb->bpp + 7U) / 8;
	c->fg = rgb(fb, 0xaa, 0xaa, 0xaa);
	c->bg = rgb(fb, 0, 0, 0);
	c->light = rgb(fb, 0xff, 0xff, 0xff);
	c->dark = c->bg;
	c->scale = font_scale(fb->width, fb->height);
	c->cell_width = c->font->glyph_width * c->scale;
	c->cell_height = c->font->glyph_height * c->scale;
	return true;
}

static void init_ega_text(struct fbcon *c)
{
	c->bytes_per_pixel = 2;
	c->bg = ' ' | EGA_ATTR << 8;
	c->scale = 1;
	c->cell_width = 1;
	c->cell_height = 1;
}

/* The console fb describes, drawing at virt; false if it cannot draw. */
static bool setup(struct fbcon *c, const struct fb_info *fb, void *virt)
{
	*c = (struct fbcon){
		.kind = fb->kind,
		.base = virt,
		.pitch = fb->pitch,
		.width = fb->width,
		.height = fb->height,
	};
	if (fb->kind == FB_KIND_RGB) {
		if (!init_rgb(c, fb))
			return false;
	} else if (fb->kind == FB_KIND_EGA_TEXT) {
		init_ega_text(c);
	} else {
		return false;
	}
	if ((uint64_t)c->width * c->bytes_per_pixel > c->pitch)
		return false;
	c->columns = c->width / c->cell_width;
	c->rows = c->height / c->cell_height;
	if (c->columns == 0 || c->columns > SHADOW_CELLS)
		return false;
	/* Rows the shadow cannot hold stay blank (see SHADOW_CELLS). */
	c->rows = MIN(c->rows, SHADOW_CELLS / c->columns);
	return c->rows != 0;
}

bool fbcon_usable(const struct fb_info *fb)
{
	struct fbcon c;

	return setup(&c, fb, NULL);
}

unsigned fbcon_font_scale_for(const struct fb_info *fb)
{
	struct fbcon c;

	return setup(&c, fb, NULL) ? c.scale : 0;
}

bool fbcon_init(const struct fb_info *fb, void *virt)
{
	struct fbcon c;

	con.kind = FB_KIND_NONE;
	if (!setup(&c, fb, virt))
		return false;
	con = c;
	fbcon_clear();
	if (con.kind == FB_KIND_EGA_TEXT) {
		/*
		 * The firmware's blinking cursor would stay wherever GRUB left
		 * it, in the middle of our text: hide it.
		 */
		outb(VGA_CRTC_INDEX, VGA_CRTC_CURSOR_START);
		outb(VGA_CRTC_DATA, VGA_CURSOR_DISABLE);
	}
	return true;
}

void fbcon_move(void *virt)
{
	con.base = virt;
}

bool fbcon_active(void)
{
	return con.kind != FB_KIND_NONE;
}

void fbcon_putc(char ch)
{
	unsigned char c = (unsigned char)ch;

	if (!fbcon_active())
		return;
	/*
	 * A write from NMI or panic context may land in the middle of
	 * another on this CPU (console/console.c): never draw outside the
	 * screen, whatever state it left.
	 */
	con.row = MIN(con.row, con.rows - 1);
	con.col = MIN(con.col, con.columns);
	switch (c) {
	case '\n':
		newline();
		break;
	case '\r':
		con.col = 0;
		break;
	case '\t':
		con.col = MIN(ALIGN_DOWN(con.col + TAB_WIDTH, TAB_WIDTH),
			      con.columns);
		break;
	case '\b':
		if (con.col > 0)
			con.col--;
		break;
	default:
		/*
		 * Wrap only when the next character arrives, so that a line
		 * exactly as wide as the screen followed by '\n' does not leave
		 * an empty line behind it.
		 */
		if (con.col == con.columns)
			newline();
		set_cell(con.col, con.row, c);
		con.col++;
		break;
	}
}

void fbcon_size(unsigned *columns, unsigned *rows)
{
	*columns = fbcon_active() ? con.columns : 0;
	*rows = fbcon_active() ? con.rows : 0;
}

void fbcon_clear(void)
{
	if (!fbcon_active())
		return;
	blank_lines(0, con.height);
	memset(shadow, ' ', (size_t)con.columns * con.rows);
	shadow_stale = false;
	con.col = 0;
	con.row = 0;
}

/* --- Matrices ------------------------------------------------------------- */

struct matrix {
	unsigned side, quiet, total; /* total = side + 2 * quiet */
	fbcon_module_fn dark;
	const void *ctx;
};

/* Module (x, y) of the whole square, quiet zone included, is light. */
static bool matrix_light(const struct matrix *m, unsigned x, unsigned y)
{
	if (x < m->quiet || y < m->quiet || x >= m->quiet + m->side ||
	    y >= m->quiet + m->side)
		return true;
	return !m->dark(m->ctx, x - m->quiet, y - m->quiet);
}

/* The first pixel line (text mode: cell row) below text_rows rows of text. */
static uint32_t matrix_top(unsigned text_rows)
{
	return MIN(text_rows, con.rows) * con.cell_height;
}

unsigned fbcon_matrix_room(unsigned text_rows)
{
	uint32_t height;

	if (!fbcon_active())
		return 0;
	height = con.height - matrix_top(text_rows);
	if (con.kind == FB_KIND_EGA_TEXT)
		return MIN(con.width, 2 * height);
	return MIN(con.width, height) / FBCON_MODULE_MIN_PIXELS;
}

static void fill_rect(uint32_t x, uint32_t y, uint32_t w, uint32_t h,
		      uint32_t value)
{
	for (uint32_t line = y; line < y + h; line++) {
		uint8_t *p = con.base + (size_t)line * con.pitch +
			     (size_t)x * con.bytes_per_pixel;

		for (uint32_t i = 0; i < w; i++, p += con.bytes_per_pixel)
			put_pixel(p, value);
	}
}

static void draw_matrix_rgb(const struct matrix *m, uint32_t top)
{
	uint32_t scale = MIN(con.width, con.height - top) / m->total;
	uint32_t left = (con.width - m->total * scale) / 2;

	fill_rect(left, top, m->total * scale, m->total * scale, con.light);
	for (unsigned y = 0; y < m->total; y++) {
		for (unsigned x = 0; x < m->total; x++) {
			if (!matrix_light(m, x, y))
				fill_rect(left + x * scale, top + y * scale,
					  scale, scale, con.dark);
		}
	}
}

/* Two modules per cell: the upper and the lower half block. */
static void draw_matrix_text(const struct matrix *m, uint32_t top)
{
	uint32_t left = (con.columns - m->total) / 2;

	for (unsigned y = 0; y < m->total; y += 2) {
		uint8_t *cell = con.base + (size_t)(top + y / 2) * con.pitch +
				(size_t)left * con.bytes_per_pixel;

		for (unsigned x = 0; x < m->total; x++, cell += 2) {
			bool upper = matrix_light(m, x, y);
			bool lower =
				y + 1 < m->total && matrix_light(m, x, y + 1);
			unsigned glyph = upper ? (lower ? EGA_BLOCK_FULL
							: EGA_BLOCK_UPPER)
					       : (lower ? EGA_BLOCK_LOWER
							: EGA_BLOCK_NONE);

			put_pixel(cell, glyph | EGA_MATRIX_ATTR << 8);
		}
	}
}

bool fbcon_draw_matrix(unsigned text_rows, unsigned side, unsigned quiet,
		       fbcon_module_fn dark, const void *ctx)
{
	struct matrix m = {side, quiet, side + 2 * quiet, dark, ctx};

	if (!side || m.total > fbcon_matrix_room(text_rows))
		return false;
	shadow_stale = true;
	if (con.kind == FB_KIND_EGA_TEXT)
		draw_matrix_text(&m, matrix_top(text_rows));
	else
		draw_matrix_rgb(&m, matrix_top(text_rows));
	return true;
}
