/* SPDX-License-Identifier: MIT */
/*
 * Framebuffer text console: draws text with the embedded 8x16 PSF2 font
 * (console/font.c), scaled by font_scale= (x2 and x3 on high-resolution
 * screens), into the linear framebuffer GRUB set up, or writes to the EGA
 * text buffer when GRUB left the machine in text mode. Real PCs booted
 * from USB often have no serial port: this is where their output goes.
 */
#ifndef CONSOLE_FBCON_H
#define CONSOLE_FBCON_H

#include "lib/types.h"

enum fb_kind {
	FB_KIND_NONE,	 /* no usable display */
	FB_KIND_RGB,	 /* linear framebuffer, direct colour */
	FB_KIND_EGA_TEXT /* 80x25-style text buffer, 2 bytes per cell */
};

/* What the multiboot2 framebuffer tag says (spec 3.6.12). */
struct fb_info {
	enum fb_kind kind;
	uint64_t phys;	/* physical address of the first pixel/cell */
	uint32_t pitch; /* bytes per row of pixels (or of cells) */
	uint32_t width; /* pixels (or columns) */
	uint32_t height;
	uint8_t bpp; /* bits per pixel (16 for EGA text) */
	uint8_t red_pos, red_size;
	uint8_t green_pos, green_size;
	uint8_t blue_pos, blue_size;
};

/*
 * Start drawing at virt, where the framebuffer described by fb is mapped,
 * on a blank screen, at the font scale font_scale= gives for its size.
 * Returns false (and stays off) if the mode is one it cannot draw in
 * (for example indexed colour, or fewer than 15 bits per pixel).
 */
bool fbcon_init(const struct fb_info *fb, void *virt);

/* Whether fbcon_init would draw on fb (it touches nothing). */
bool fbcon_usable(const struct fb_info *fb);

/* The font scale fbcon_init would draw fb at, 0 if it would not draw. */
unsigned fbcon_font_scale_for(const struct fb_info *fb);

/* The framebuffer is now mapped at virt (after the kernel page tables). */
void fbcon_move(void *virt);

bool fbcon_active(void);

/* Handles '\n', '\r', '\t' and '\b'; scrolls at the bottom. */
void fbcon_putc(char c);

/*
 * The screen as a page rather than a scrolling log (bench/screen.c shows
 * results a page at a time, and QR codes).
 */

/* Character cells across and down (0 and 0 without a screen). */
void fbcon_size(unsigned *columns, unsigned *rows);

/* Blanks the screen; the next character goes to the top left corner. */
void fbcon_clear(void);

/*
 * A square matrix of modules (a QR code): dark(ctx, x, y) for each module,
 * drawn dark on light, with `quiet` light modules around it, as large as
 * fits below the first text_rows rows of text, centred across.
 *
 * fbcon_matrix_room says how many modules (quiet ones included) fit along
 * a side there, each at least FBCON_MODULE_MIN_PIXELS pixels square on a
 * framebuffer, or one cell across and half a cell down in text mode
 * (CP437's half blocks); fbcon_draw_matrix draws side + 2 * quiet modules
 * along a side, as large as they fit, and returns false (drawing nothing)
 * when they do not.
 */
#define FBCON_MODULE_MIN_PIXELS 4
typedef bool (*fbcon_module_fn)(const void *ctx, unsigned x, unsigned y);
unsigned fbcon_matrix_room(unsigned text_rows);
bool fbcon_draw_matrix(unsigned text_rows, unsigned side, unsigned quiet,
		       fbcon_module_fn dark, const void *ctx);

#endif
