/* SPDX-License-Identifier: MIT */
/*
 * Multiboot2 boot information (spec version 2.0, section 3.6): what GRUB tells
 * the kernel. The parser is pure logic and checks every size against the
 * buffer, so host unit tests can feed it malformed input.
 */
#ifndef BOOT_MULTIBOOT2_H
#define BOOT_MULTIBOOT2_H

#include "lib/types.h"
#include "console/fbcon.h"

/* Tag types used by shootdown (spec 3.6.x). */
#define MB2_TAG_END	    0
#define MB2_TAG_CMDLINE	    1
#define MB2_TAG_LOADER_NAME 2
#define MB2_TAG_MODULE	    3
#define MB2_TAG_MMAP	    6
#define MB2_TAG_FRAMEBUFFER 8
#define MB2_TAG_ACPI_OLD    14
#define MB2_TAG_ACPI_NEW    15
#define MB2_TAG_LOAD_BASE   21

/* Memory map entry types (spec 3.6.8). */
#define MB2_MMAP_AVAILABLE	  1
#define MB2_MMAP_RESERVED	  2
#define MB2_MMAP_ACPI_RECLAIMABLE 3
#define MB2_MMAP_ACPI_NVS	  4
#define MB2_MMAP_BAD		  5

/* Framebuffer types (spec 3.6.12). */
#define MB2_FB_INDEXED	0
#define MB2_FB_RGB	1
#define MB2_FB_EGA_TEXT 2

#define MB2_MAX_MODULES	  16
#define MB2_MAX_MMAP	  128
#define MB2_MAX_RSDP_SIZE 64 /* ACPI 2.0+ RSDP is 36 bytes */
#define MB2_MAX_TOTAL	  (1024 * 1024)

struct mb2_region {
	uint64_t base;
	uint64_t length;
	uint32_t type;
};

struct mb2_module {
	uint64_t start, end; /* physical, end exclusive */
	const char *cmdline; /* points into the boot information */
};

/* Everything the kernel uses from the boot information. */
struct boot_info {
	const char *cmdline; /* "" when absent */
	const char *loader_name;
	struct mb2_region mmap[MB2_MAX_MMAP];
	size_t mmap_count;
	bool mmap_truncated;
	struct mb2_module modules[MB2_MAX_MODULES];
	size_t module_count;
	struct fb_info fb; /* kind FB_KIND_NONE when absent or unusable */
	const void *rsdp;  /* ACPI RSDP copy inside the boot information */
	size_t rsdp_size;
	bool rsdp_is_v2; /* from the "new" (ACPI 2.0+) tag */
	bool has_load_base;
	uint64_t load_base;
	size_t total_size; /* bytes of boot information */
};

typedef void (*mb2_report)(void *ctx, const char *fmt, ...) __printf(2, 3);

/*
 * Parses the boot information at mbi, of which avail bytes may be read.
 * Problems (bad sizes, missing end tag, bad entries) go to report; returns
 * 0, or -EINVAL when the information as a whole cannot be used. Entries that
 * are individually bad are skipped and reported.
 */
int mb2_parse(const void *mbi, size_t avail, struct boot_info *out,
	      mb2_report report, void *ctx);

const char *mb2_mmap_type_name(uint32_t type);

#endif
