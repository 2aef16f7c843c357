/* SPDX-License-Identifier: MIT */
/*
 * Checking an ELF executable before the kernel loads it (pure logic: no
 * globals, no hardware, so host unit tests feed it crafted and damaged
 * files).
 *
 * shootdown runs one kind of program: a static, non-relocatable x86-64
 * executable (ELF64, little-endian, ET_EXEC) whose loadable segments lie in
 * the user half of the address space. elf_parse checks every field the
 * loader relies on and reports each problem in words, so a student whose
 * program is refused learns why. Section headers are not read: loading
 * needs only the program headers.
 *
 * The ELF format: the System V ABI, "gABI" chapter 4 (object files) and
 * chapter 5 (program loading), and its x86-64 supplement.
 */
#ifndef PROC_ELF_H
#define PROC_ELF_H

#include "lib/types.h"

/* At most this many PT_LOAD segments (text, rodata, data is the usual 3). */
#define ELF_MAX_SEGMENTS 16

/*
 * The first address above user space: USER_TOP in arch/layout.h, repeated
 * here because that header also holds kernel-only code (the host unit test
 * checks that the two agree).
 */
#define ELF_USER_TOP 0x0000800000000000ULL

/*
 * Segments may not map the first page: it stays unmapped so that a NULL
 * pointer dereference faults instead of reading the program.
 */
#define ELF_USER_BOTTOM 0x1000ULL

/* The page size segments must be congruent to (file offset vs address). */
#define ELF_PAGE_SIZE 4096ULL

/*
 * Segment protections: the same bits as SYS_PROT_* in uapi/syscall.h
 * (not the ELF PF_* bits, which are in the opposite order).
 */
#define ELF_PROT_READ  0x1
#define ELF_PROT_WRITE 0x2
#define ELF_PROT_EXEC  0x4

/*
 * One loadable segment: filesz bytes of the file from offset appear at
 * vaddr, and the rest up to memsz (the .bss) is zero.
 */
struct elf_segment {
	uint64_t vaddr;
	uint64_t memsz;
	uint64_t offset;
	uint64_t filesz;
	unsigned prot; /* ELF_PROT_* */
};

struct elf_image {
	uint64_t entry;
	struct elf_segment segments[ELF_MAX_SEGMENTS]; /* in file order */
	size_t segment_count;
};

typedef void (*elf_report)(void *ctx, const char *fmt, ...) __printf(2, 3);

/*
 * Checks the ELF file image (size bytes, any alignment) and describes its
 * segments in out. Each problem goes to report once (report may be NULL);
 * returns 0, or -EINVAL when the file cannot be loaded, in which case out
 * is left empty. Checks that depend on an earlier one (the program headers
 * on the ELF header, the entry point on the segments) are only made once
 * the earlier ones passed, so one mistake gives one message.
 */
int elf_parse(const void *image, size_t size, struct elf_image *out,
	      elf_report report, void *ctx);

/* "r-x", "rw-", ... for a combination of ELF_PROT_* bits. */
const char *elf_prot_name(unsigned prot);

#endif
