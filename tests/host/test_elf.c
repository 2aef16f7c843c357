// SPDX-License-Identifier: MIT
/*
 * proc/elf.c on crafted executables. A builder writes the ELF header and
 * program headers field by field from a description, into a heap block of
 * exactly the file's size, so ASan reports any read past the end. Every
 * rejection is checked to come with exactly one message naming the
 * problem; truncated and randomly damaged files must be refused without a
 * crash; and the real user programs (the .elf files in build/user/) must
 * be accepted.
 */
#include "proc/elf.h"
#include "lib/errno.h"
#include "uapi/syscall.h"
#include "arch/layout.h"
#include "tests/host/host_test.h"

#include <dirent.h>

_Static_assert(ELF_USER_TOP == USER_TOP, "elf.h disagrees with arch/layout.h");
_Static_assert(ELF_PROT_READ == SYS_PROT_READ &&
		       ELF_PROT_WRITE == SYS_PROT_WRITE &&
		       ELF_PROT_EXEC == SYS_PROT_EXEC,
	       "ELF_PROT_* must be the SYS_PROT_* bits");

/* Where the Makefile puts the user programs (relative to the working
 * directory, normally the top of the source tree). */
#ifndef USER_ELF_DIR
#define USER_ELF_DIR "build/user"
#endif

/* --- Builder ------------------------------------------------------------ */

/* Values from the System V ABI (proc/elf.c keeps its own copies). */
#define ET_REL	     1
#define ET_EXEC	     2
#define ET_DYN	     3
#define ET_CORE	     4
#define EM_386	     3
#define EM_X86_64    62
#define EM_AARCH64   183
#define PT_LOAD	     1
#define PT_DYNAMIC   2
#define PT_INTERP    3
#define PT_NOTE	     4
#define PT_TLS	     7
#define PT_GNU_STACK 0x6474e551
#define PF_X	     1
#define PF_W	     2
#define PF_R	     4

#define MAX_PH 24

struct ph_spec {
	uint32_t type, flags;
	uint64_t offset, vaddr, filesz, memsz;
};

/* A file to build: the header fields as written, and the file size. */
struct elf_spec {
	uint8_t ident[16];
	uint16_t type, machine;
	uint32_t version;
	uint64_t entry, phoff;
	uint16_t ehsize, phentsize, phnum; /* phnum as written */
	struct ph_spec ph[MAX_PH];
	size_t nph; /* headers written (phnum may claim otherwise) */
	size_t size;
};

/*
 * A typical program, as user/linker.ld lays it out: text, rodata and
 * data+bss, each page-aligned, plus a PT_GNU_STACK that needs no action.
 * The file ends where the data segment's file bytes end, so any
 * truncation cuts into a segment.
 */
static struct elf_spec good(void)
{
	struct elf_spec s = {
		.ident = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0},
		.type = ET_EXEC,
		.machine = EM_X86_64,
		.version = 1,
		.entry = 0x400010,
		.phoff = 64,
		.ehsize = 64,
		.phentsize = 56,
		.phnum = 4,
		.ph = {{PT_LOAD, PF_R | PF_X, 0x1000, 0x400000, 0x180, 0x180},
		       {PT_LOAD, PF_R, 0x2000, 0x401000, 0x40, 0x40},
		       {PT_LOAD, PF_R | PF_W, 0x3000, 0x402000, 0x10, 0x2000},
		       {PT_GNU_STACK, PF_R | PF_W, 0, 0, 0, 0}},
		.nph = 4,
		.size = 0x3010,
	};
	return s;
}

/* n little-endian bytes of v at off, those that lie inside the file. */
static void put_le(uint8_t *buf, size_t size, uint64_t off, uint64_t v,
		   unsigned n)
{
	for (unsigned i = 0; i < n; i++, v >>= 8) {
		if (off < size && i < size - off)
			buf[off + i] = (uint8_t)v;
	}
}

/* The file, in a heap block of exactly s->size bytes; free() it. */
static uint8_t *build(const struct elf_spec *s)
{
	uint8_t *buf = malloc(s->size ? s->size : 1);
	size_t n = s->size;

	if (!buf) {
		fprintf(stderr, "test_elf: out of memory\n");
		abort();
	}
	memset(buf, 0, n);
	/* Segment contents: a pattern (int3), so no byte is left to chance. */
	for (size_t i = 0; i < s->nph; i++) {
		const struct ph_spec *p = &s->ph[i];

		for (uint64_t j = 0; p->type == PT_LOAD && j < p->filesz; j++) {
			if (p->offset >= n || j >= n - p->offset)
				break;
			buf[p->offset + j] = 0xcc;
		}
	}
	for (size_t i = 0; i < 16; i++)
		put_le(buf, n, i, s->ident[i], 1);
	put_le(buf, n, 16, s->type, 2);
	put_le(buf, n, 18, s->machine, 2);
	put_le(buf, n, 20, s->version, 4);
	put_le(buf, n, 24, s->entry, 8);
	put_le(buf, n, 32, s->phoff, 8);
	put_le(buf, n, 40, 0, 8); /* no section headers */
	put_le(buf, n, 48, 0, 4);
	put_le(buf, n, 52, s->ehsize, 2);
	put_le(buf, n, 54, s->phentsize, 2);
	put_le(buf, n, 56, s->phnum, 2);
	for (size_t i = 0; i < s->nph; i++) {
		const struct ph_spec *p = &s->ph[i];
		uint64_t at = s->phoff + i * 56;

		if (at < s->phoff || at >= n) /* outside the file */
			break;
		put_le(buf, n, at + 0, p->type, 4);
		put_le(buf, n, at + 4, p->flags, 4);
		put_le(buf, n, at + 8, p->offset, 8);
		put_le(buf, n, at + 16, p->vaddr, 8);
		put_le(buf, n, at + 24, p->vaddr, 8); /* p_paddr */
		put_le(buf, n, at + 32, p->filesz, 8);
		put_le(buf, n, at + 40, p->memsz, 8);
		put_le(buf, n, at + 48, 0x1000, 8); /* p_align */
	}
	return buf;
}

/* Appends a program header (and counts it in phnum). */
static struct ph_spec *add_ph(struct elf_spec *s, uint32_t type, uint32_t flags,
			      uint64_t offset, uint64_t vaddr, uint64_t filesz,
			      uint64_t memsz)
{
	struct ph_spec *p = &s->ph[s->nph++];

	*p = (struct ph_spec){type, flags, offset, vaddr, filesz, memsz};
	s->phnum = (uint16_t)s->nph;
	return p;
}

/* --- Parsing and reports -------------------------------------------------- */

static struct elf_image image;

/* Every message of elf_parse names its module. */
static void check_elf_prefix(const char *text)
{
	CHECK(!strncmp(text, "elf: ", 5), "message without the elf: prefix: %s",
	      host_quote(text));
}

static int parse_buf(const void *buf, size_t len)
{
	memset(&messages, 0, sizeof(messages));
	check_message = check_elf_prefix;
	memset(&image, 0x5a, sizeof(image));
	return elf_parse(buf, len, &image, capture, &messages);
}

static int parse(const struct elf_spec *s)
{
	uint8_t *buf = build(s);
	int r = parse_buf(buf, s->size);

	free(buf);
	return r;
}

/* Exactly want messages, the first (if any) containing word. */
static void expect_messages(const char *file, int line, int want,
			    const char *word)
{
	host_check(messages.count == want, "messages", file, line,
		   "%d messages, want %d; first: %s; second: %s",
		   messages.count, want,
		   messages.count ? host_quote(messages.text[0]) : "none",
		   messages.count > 1 ? host_quote(messages.text[1]) : "none");
	if (word && messages.count)
		host_check(strstr(messages.text[0], word) != NULL, "message",
			   file, line, "%s lacks %s",
			   host_quote(messages.text[0]), host_quote(word));
}

#define MESSAGES(want, word) expect_messages(__FILE__, __LINE__, (want), (word))

/* Whether the n-th message (0-based) contains word. */
static bool said(int n, const char *word)
{
	return n < messages.count && n < MAX_MESSAGES &&
	       strstr(messages.text[n], word);
}

/* A refused file: -EINVAL, one message with word, nothing described. */
static void expect_reject(const char *file, int line, const struct elf_spec *s,
			  const char *word)
{
	int r = parse(s);

	host_check(r == -EINVAL, "rejected", file, line,
		   "elf_parse returned %d, want -EINVAL", r);
	expect_messages(file, line, 1, word);
	host_check(image.segment_count == 0 && image.entry == 0, "empty", file,
		   line, "a refused file left %zu segments, entry %#llx",
		   image.segment_count, (unsigned long long)image.entry);
}

#define REJECT(spec, word) expect_reject(__FILE__, __LINE__, (spec), (word))

/* --- Well-formed files ------------------------------------------------------ */

HOST_TEST(typical_program)
{
	struct elf_spec s = good();

	CHECK_EQ(parse(&s), 0);
	MESSAGES(0, NULL);
	CHECK_EQ(image.entry, 0x400010);
	if (!CHECK_EQ(image.segment_count, 3))
		return;
	CHECK_EQ(image.segments[0].vaddr, 0x400000);
	CHECK_EQ(image.segments[0].memsz, 0x180);
	CHECK_EQ(image.segments[0].offset, 0x1000);
	CHECK_EQ(image.segments[0].filesz, 0x180);
	CHECK_EQ(image.segments[0].prot, ELF_PROT_READ | ELF_PROT_EXEC);
	CHECK_EQ(image.segments[1].vaddr, 0x401000);
	CHECK_EQ(image.segments[1].prot, ELF_PROT_READ);
	CHECK_EQ(image.segments[2].vaddr, 0x402000);
	CHECK_EQ(image.segments[2].memsz, 0x2000);
	CHECK_EQ(image.segments[2].offset, 0x3000);
	CHECK_EQ(image.segments[2].filesz, 0x10);
	CHECK_EQ(image.segments[2].prot, ELF_PROT_READ | ELF_PROT_WRITE);

	/* No report function: the same answer, silently. */
	{
		uint8_t *buf = build(&s);

		CHECK_EQ(elf_parse(buf, s.size, &image, NULL, NULL), 0);
		free(buf);
	}
}

/* Legal variations: none of them may be refused. */
HOST_TEST(accepted_variations)
{
	struct elf_spec s;

	/* GNU ld marks files with IFUNCs as OS/ABI GNU. */
	s = good();
	s.ident[7] = 3;
	CHECK_EQ(parse(&s), 0);
	MESSAGES(0, NULL);

	/* An empty PT_LOAD loads nothing and is ignored. */
	s = good();
	add_ph(&s, PT_LOAD, PF_R | PF_W | PF_X, 0, 0, 0, 0);
	CHECK_EQ(parse(&s), 0);
	MESSAGES(0, NULL);
	CHECK_EQ(image.segment_count, 3);

	/* Segments that are not page-aligned, only congruent. */
	s = good();
	s.ph[1].offset = 0x2123;
	s.ph[1].vaddr = 0x401123;
	s.entry = 0x40017f; /* the last byte of text */
	CHECK_EQ(parse(&s), 0);
	MESSAGES(0, NULL);

	/* Right up to the top of user space, and from the second page. */
	s = good();
	s.ph[2].vaddr = ELF_USER_TOP - 0x2000;
	s.ph[0].vaddr = 0x1000;
	s.entry = 0x1000;
	CHECK_EQ(parse(&s), 0);
	MESSAGES(0, NULL);

	/* Notes and unknown types are skipped. */
	s = good();
	add_ph(&s, PT_NOTE, PF_R, 0x2000, 0x401000, 0x40, 0x40);
	add_ph(&s, 0x70000001, 0, 0xffffffffffff, 0, ~0ULL, 1);
	CHECK_EQ(parse(&s), 0);
	MESSAGES(0, NULL);

	/* An entry point inside the .bss part of an executable segment. */
	s = good();
	s.ph[0].memsz = 0x1000;
	s.entry = 0x400fff;
	CHECK_EQ(parse(&s), 0);
	MESSAGES(0, NULL);
}

HOST_TEST(sixteen_segments)
{
	struct elf_spec s = good();

	s.nph = 0;
	for (unsigned i = 0; i < ELF_MAX_SEGMENTS; i++)
		add_ph(&s, PT_LOAD, i ? PF_R : PF_R | PF_X, 0x1000 * (i + 1),
		       0x400000 + 0x1000 * i, 0x10, 0x10);
	s.size = 0x1000 * ELF_MAX_SEGMENTS + 0x10;
	s.entry = 0x400000;
	CHECK_EQ(parse(&s), 0);
	MESSAGES(0, NULL);
	CHECK_EQ(image.segment_count, ELF_MAX_SEGMENTS);
	CHECK_EQ(image.segments[15].vaddr, 0x40f000);

	add_ph(&s, PT_LOAD, PF_R, 0x1000, 0x500000, 0x10, 0x10);
	REJECT(&s, "more than 16");
	CHECK(said(0, "program header 16"), "which one: %s",
	      host_quote(messages.text[0]));

	/* Two too many: still one message. */
	add_ph(&s, PT_LOAD, PF_R, 0x1000, 0x600000, 0x10, 0x10);
	REJECT(&s, "more than 16");
}

HOST_TEST(prot_names)
{
	CHECK_STR(elf_prot_name(0), "---");
	CHECK_STR(elf_prot_name(ELF_PROT_READ), "r--");
	CHECK_STR(elf_prot_name(ELF_PROT_READ | ELF_PROT_WRITE), "rw-");
	CHECK_STR(elf_prot_name(ELF_PROT_READ | ELF_PROT_EXEC), "r-x");
	CHECK_STR(elf_prot_name(7), "rwx");
	CHECK_STR(elf_prot_name(8), "???");
}

/* --- The ELF header ---------------------------------------------------------- */

HOST_TEST(not_elf)
{
	static const char text[] = "#!/bin/sh\necho hello\n";
	char *buf = malloc(sizeof(text) - 1);
	struct elf_spec s = good();

	memcpy(buf, text, sizeof(text) - 1);
	CHECK_EQ(parse_buf(buf, sizeof(text) - 1), -EINVAL);
	MESSAGES(1, "not an ELF file");
	CHECK(said(0, "23 21 2f 62"), "the bytes: %s",
	      host_quote(messages.text[0]));
	free(buf);

	s.ident[3] = 'f';
	REJECT(&s, "not an ELF file");

	/* Nothing at all. */
	CHECK_EQ(parse_buf(NULL, 0), -EINVAL);
	MESSAGES(1, "0 bytes");
	CHECK_EQ(parse_buf(NULL, 100), -EINVAL);
	MESSAGES(1, "NULL");
}

HOST_TEST(short_header)
{
	struct elf_spec s = good();

	s.size = 63;
	REJECT(&s, "63 bytes, too few for an ELF header");
	s.size = 4;
	REJECT(&s, "too few");
	/* Fewer bytes than the magic: cannot tell, so "too short". */
	s.size = 3;
	REJECT(&s, "too few");
}

HOST_TEST(identification)
{
	struct elf_spec s = good();

	s.ident[4] = 1;
	REJECT(&s, "32-bit");
	s.ident[4] = 9;
	REJECT(&s, "unknown ELF class 9");

	s = good();
	s.ident[5] = 2;
	REJECT(&s, "big-endian");
	s.ident[5] = 0;
	REJECT(&s, "unknown byte order 0");

	s = good();
	s.ident[6] = 0;
	REJECT(&s, "ELF version 0 (EI_VERSION)");

	s = good();
	s.ident[7] = 9; /* FreeBSD */
	REJECT(&s, "OS/ABI 9");
}

HOST_TEST(file_types)
{
	struct elf_spec s = good();

	s.type = ET_DYN;
	REJECT(&s, "position-independent");
	CHECK(said(0, "ET_DYN") && said(0, "-no-pie"), "%s",
	      host_quote(messages.text[0]));

	/* A typical PIE also has PT_INTERP: still the one ET_DYN message. */
	add_ph(&s, PT_INTERP, PF_R, 0x2000, 0x401000, 0x1c, 0x1c);
	REJECT(&s, "ET_DYN");

	s.type = ET_REL;
	REJECT(&s, "relocatable object");
	s.type = ET_CORE;
	REJECT(&s, "core dump");
	s.type = 0xfe00;
	REJECT(&s, "file type 65024");
}

HOST_TEST(header_fields)
{
	struct elf_spec s = good();

	s.machine = EM_386;
	REJECT(&s, "machine 3 (i386)");
	s.machine = EM_AARCH64;
	REJECT(&s, "AArch64");

	s = good();
	s.version = 0;
	REJECT(&s, "ELF version 0 (e_version)");

	s = good();
	s.ehsize = 52; /* the ELF32 header size */
	REJECT(&s, "ELF header size 52");

	s = good();
	s.phentsize = 32; /* the ELF32 program header size */
	REJECT(&s, "program header size 32");

	/* Several wrong fields: each reported, once, in order. */
	s = good();
	s.machine = 40;
	s.version = 2;
	s.phentsize = 0;
	CHECK_EQ(parse(&s), -EINVAL);
	MESSAGES(3, "machine 40 (32-bit ARM)");
	CHECK(said(1, "e_version") && said(2, "e_phentsize"),
	      "second %s, third %s", host_quote(messages.text[1]),
	      host_quote(messages.text[2]));
}

HOST_TEST(program_header_table)
{
	struct elf_spec s = good();

	s.phnum = 0;
	REJECT(&s, "no program headers");

	s = good();
	s.phnum = 0xffff;
	REJECT(&s, "PN_XNUM");

	/* The table starts past the end, ends past the end, wraps around. */
	s = good();
	s.phoff = s.size + 8;
	REJECT(&s, "program header table");
	s.phoff = s.size - 4 * 56 + 1;
	REJECT(&s, "goes past the end");
	s.phoff = ~0ULL - 8;
	REJECT(&s, "goes past the end");
	s = good();
	s.phnum = 300; /* 64 + 300 * 56 bytes: more than the file */
	REJECT(&s, "300 entries");

	/* Exactly at the end of the file: fine. */
	s = good();
	s.size += 4 * 56;
	s.phoff = s.size - 4 * 56;
	CHECK_EQ(parse(&s), 0);
	MESSAGES(0, NULL);
}

/* --- Program headers ----------------------------------------------------------- */

HOST_TEST(dynamic_linking)
{
	struct elf_spec s = good();

	/* What a dynamically linked executable has: both, said once. */
	add_ph(&s, PT_INTERP, PF_R, 0x2000, 0x401000, 0x1c, 0x1c);
	add_ph(&s, PT_DYNAMIC, PF_R | PF_W, 0x3000, 0x402000, 0x10, 0x10);
	REJECT(&s, "dynamically linked: shootdown runs static executables");
	CHECK(said(0, "program header 4 is PT_INTERP"), "%s",
	      host_quote(messages.text[0]));

	/* A static-pie's PT_DYNAMIC alone. */
	s = good();
	add_ph(&s, PT_DYNAMIC, PF_R | PF_W, 0x3000, 0x402000, 0x10, 0x10);
	REJECT(&s, "dynamically linked");
	CHECK(said(0, "PT_DYNAMIC"), "%s", host_quote(messages.text[0]));

	s = good();
	add_ph(&s, PT_TLS, PF_R, 0x3000, 0x402000, 0x8, 0x10);
	REJECT(&s, "PT_TLS");
}

HOST_TEST(no_loadable_segments)
{
	struct elf_spec s = good();

	s.nph = 0;
	add_ph(&s, PT_GNU_STACK, PF_R | PF_W, 0, 0, 0, 0);
	REJECT(&s, "no loadable (PT_LOAD) segments");

	/* Only empty ones. */
	add_ph(&s, PT_LOAD, PF_R | PF_X, 0x1000, 0x400000, 0, 0);
	REJECT(&s, "no loadable");
}

HOST_TEST(segment_sizes)
{
	struct elf_spec s = good();

	s.ph[1].filesz = 0x41;
	REJECT(&s, "program header 1: p_filesz 0x41 is larger than p_memsz "
		   "0x40");
}

HOST_TEST(segment_file_range)
{
	struct elf_spec s = good();

	/* One byte past the end of the file. */
	s.ph[2].filesz = 0x11;
	s.ph[2].memsz = 0x11;
	REJECT(&s, "program header 2: its file bytes (p_offset 0x3000, "
		   "p_filesz 0x11) go past the end of the 12304-byte file");

	/* Starting past the end (congruent, so one problem only). */
	s = good();
	s.ph[1].offset = 0x5000;
	REJECT(&s, "p_offset 0x5000");

	/* offset + filesz wraps around 2^64. */
	s = good();
	s.ph[1].offset = 0xfffffffffffff000;
	s.ph[1].filesz = 0x2000;
	s.ph[1].memsz = 0x2000;
	REJECT(&s, "go past the end");

	/* filesz alone larger than the file. */
	s = good();
	s.ph[2].filesz = ~0ULL;
	s.ph[2].memsz = ~0ULL - 0x402000;
	CHECK_EQ(parse(&s), -EINVAL);
	CHECK(said(0, "larger than p_memsz") || said(0, "go past the end"),
	      "%s", host_quote(messages.text[0]));
}

HOST_TEST(segment_addresses)
{
	struct elf_spec s = good();

	/* p_vaddr + p_memsz wraps around 2^64. */
	s.ph[1].vaddr = 0xfffffffffffff000;
	s.ph[1].memsz = 0x2000;
	REJECT(&s, "overflows");

	/* The kernel half. */
	s = good();
	s.ph[1].vaddr = 0xffffffff80001000;
	REJECT(&s, "not inside user space");

	/* Non-canonical. */
	s = good();
	s.ph[1].vaddr = 0x8000000000001000;
	REJECT(&s, "not inside user space");

	/* Ending one byte above user space. */
	s = good();
	s.ph[2].vaddr = ELF_USER_TOP - 0x2000;
	s.ph[2].memsz = 0x2001;
	REJECT(&s, "program header 2: memory 0x7fffffffe000-0x800000000001 "
		   "is not inside user space");

	/* The NULL page. */
	s = good();
	s.ph[1].vaddr = 0;
	s.ph[1].offset = 0x2000;
	REJECT(&s, "first page");
	s.ph[1].vaddr = 0xfc0;
	s.ph[1].offset = 0x1fc0;
	REJECT(&s, "first page");
}

HOST_TEST(segment_congruence)
{
	struct elf_spec s = good();

	s.ph[1].vaddr = 0x401010;
	REJECT(&s, "program header 1: p_offset 0x2000 and p_vaddr 0x401010 "
		   "differ modulo the page size");
}

HOST_TEST(write_xor_execute)
{
	struct elf_spec s = good();

	s.ph[0].flags = PF_R | PF_W | PF_X;
	REJECT(&s, "program header 0 (0x400000-0x400180) is writable and "
		   "executable (rwx): refused (W^X)");

	s.ph[0].flags = PF_W | PF_X;
	REJECT(&s, "-wx");
}

HOST_TEST(overlapping_segments)
{
	struct elf_spec s = good();

	/* Data starts in rodata's page: one page, two sets of rights. */
	s.ph[2].vaddr = 0x401800;
	s.ph[2].offset = 0x2800;
	s.size = 0x2810;
	REJECT(&s, "program headers 1 (0x401000-0x401040) and 2 "
		   "(0x401800-0x403800) share a page");

	/* Three segments on one page: each pair once. */
	s = good();
	s.ph[1].vaddr = 0x400200;
	s.ph[1].offset = 0x1200;
	s.ph[2].vaddr = 0x400400;
	s.ph[2].offset = 0x1400;
	s.size = 0x1410;
	CHECK_EQ(parse(&s), -EINVAL);
	MESSAGES(3, "program headers 0 (0x400000-0x400180) and 1");
	CHECK(said(1, "program headers 0 (") && said(1, "and 2") &&
		      said(2, "program headers 1 (") && said(2, "and 2"),
	      "%s / %s", host_quote(messages.text[1]),
	      host_quote(messages.text[2]));

	/* The same addresses twice. */
	s = good();
	s.ph[1].vaddr = 0x400000;
	s.ph[1].offset = 0x2000;
	REJECT(&s, "share a page");

	/* Adjacent pages do not overlap. */
	s = good();
	s.ph[0].memsz = 0x1000;
	CHECK_EQ(parse(&s), 0);
	MESSAGES(0, NULL);
}

HOST_TEST(entry_point)
{
	struct elf_spec s = good();

	s.entry = 0x500000;
	REJECT(&s, "the entry point 0x500000 (e_entry) is in no loadable "
		   "segment");
	s.entry = 0x400180; /* one past the end of text */
	REJECT(&s, "in no loadable segment");
	s.entry = 0;
	REJECT(&s, "in no loadable segment");

	s.entry = 0x401000;
	REJECT(&s, "is in program header 1, which is not executable (r--)");
	s.entry = 0x403fff; /* the last byte of .bss */
	REJECT(&s, "which is not executable (rw-)");
}

/*
 * Problems in one segment are all reported; a rejected segment holding the
 * entry point does not add an entry-point message.
 */
HOST_TEST(one_message_per_problem)
{
	struct elf_spec s = good();

	s.ph[0].flags = PF_R | PF_W | PF_X;
	s.ph[0].filesz = 0x200;
	s.ph[0].vaddr = 0x400010;
	CHECK_EQ(parse(&s), -EINVAL);
	MESSAGES(3, "p_filesz 0x200 is larger");
	CHECK(said(1, "modulo the page size") && said(2, "W^X"), "%s / %s",
	      host_quote(messages.text[1]), host_quote(messages.text[2]));

	/* Problems in two segments: both. */
	s = good();
	s.ph[1].vaddr = 0xffff800000000000;
	s.ph[2].flags = PF_R | PF_W | PF_X;
	CHECK_EQ(parse(&s), -EINVAL);
	MESSAGES(2, "program header 1: memory 0xffff800000000000");
	CHECK(said(1, "program header 2") && said(1, "W^X"), "%s",
	      host_quote(messages.text[1]));
}

/* --- Damaged files ------------------------------------------------------------- */

static uint8_t *copy_exact(const uint8_t *src, size_t len)
{
	uint8_t *buf = malloc(len ? len : 1);

	memcpy(buf, src, len);
	return buf;
}

/* Every cut-short copy is refused, with a message, and nothing else. */
HOST_TEST(truncated_at_every_length)
{
	struct elf_spec s = good();
	uint8_t *full = build(&s);

	for (size_t len = 0; len <= s.size; len++) {
		uint8_t *buf = copy_exact(full, len);
		int r = parse_buf(buf, len);

		if (len == s.size) {
			CHECK_EQ(r, 0);
			MESSAGES(0, NULL);
		} else if (CHECK(r == -EINVAL, "accepted at %zu of %zu bytes",
				 len, s.size)) {
			CHECK(messages.count >= 1, "no message at %zu bytes",
			      len);
			CHECK(image.segment_count == 0,
			      "segments described at %zu bytes", len);
		}
		free(buf);
	}
	free(full);
}

/*
 * What an accepted file promises (proc/elf.c), checked from the outside
 * on whatever the random damage let through.
 */
static void check_promises(const struct elf_image *im, size_t size,
			   uint64_t iteration)
{
	bool entry_ok = false;

	CHECK(im->segment_count >= 1 && im->segment_count <= ELF_MAX_SEGMENTS,
	      "iteration %llu: %zu segments", (unsigned long long)iteration,
	      im->segment_count);
	for (size_t i = 0; i < im->segment_count && i < ELF_MAX_SEGMENTS; i++) {
		const struct elf_segment *a = &im->segments[i];
		uint64_t end = a->vaddr + a->memsz;

		CHECK(a->memsz && a->filesz <= a->memsz && a->offset <= size &&
			      a->filesz <= size - a->offset,
		      "iteration %llu, segment %zu: file range",
		      (unsigned long long)iteration, i);
		CHECK(a->vaddr >= ELF_USER_BOTTOM && end > a->vaddr &&
			      end <= ELF_USER_TOP,
		      "iteration %llu, segment %zu: %#llx-%#llx",
		      (unsigned long long)iteration, i,
		      (unsigned long long)a->vaddr, (unsigned long long)end);
		CHECK(a->vaddr % 4096 == a->offset % 4096,
		      "iteration %llu, segment %zu: not congruent",
		      (unsigned long long)iteration, i);
		CHECK((a->prot & (ELF_PROT_WRITE | ELF_PROT_EXEC)) !=
			      (ELF_PROT_WRITE | ELF_PROT_EXEC),
		      "iteration %llu, segment %zu: W+X",
		      (unsigned long long)iteration, i);
		if (im->entry >= a->vaddr && im->entry < end &&
		    (a->prot & ELF_PROT_EXEC))
			entry_ok = true;
		for (size_t j = i + 1; j < im->segment_count; j++) {
			const struct elf_segment *b = &im->segments[j];

			CHECK(end <= ALIGN_DOWN(b->vaddr, 4096) ||
				      b->vaddr + b->memsz <=
					      ALIGN_DOWN(a->vaddr, 4096),
			      "iteration %llu: segments %zu and %zu share a "
			      "page",
			      (unsigned long long)iteration, i, j);
		}
	}
	CHECK(entry_ok, "iteration %llu: entry %#llx not executable",
	      (unsigned long long)iteration, (unsigned long long)im->entry);
}

/* Values that sit on the edges of the checks. */
static const uint64_t edge_values[] = {
	0,
	1,
	0x1000,
	0x400000,
	0x7fffffffffff,
	0x800000000000,
	0x7ffffffff000,
	0x8000000000000000,
	0xffff800000000000,
	0xffffffff80000000,
	0xfffffffffffff000,
	~0ULL,
};

HOST_TEST(random_damage)
{
	struct elf_spec s = good();
	uint8_t *good_file = build(&s);
	const size_t headers = 64 + s.nph * 56;
	unsigned accepted = 0;

	host_rand_seed(0xe1f);
	for (uint64_t it = 0; it < 20000; it++) {
		uint8_t *buf = copy_exact(good_file, s.size);
		unsigned changes = 1 + (unsigned)host_rand_below(4);
		int r;

		for (unsigned k = 0; k < changes; k++) {
			unsigned how = (unsigned)host_rand_below(4);

			if (how == 0) { /* any byte */
				buf[host_rand_below(s.size)] =
					(uint8_t)host_rand();
			} else if (how == 1) { /* one bit in the headers */
				buf[host_rand_below(headers)] ^=
					(uint8_t)(1u << host_rand_below(8));
			} else if (how == 2) { /* a byte in the headers */
				buf[host_rand_below(headers)] =
					(uint8_t)host_rand();
			} else { /* an 8-byte field set to an edge value */
				uint64_t v = edge_values[host_rand_below(
					ARRAY_SIZE(edge_values))];
				size_t at = 8 * host_rand_below(headers / 8);

				put_le(buf, s.size, at, v, 8);
			}
		}
		r = parse_buf(buf, s.size);
		if (r == 0) {
			accepted++;
			CHECK(messages.count == 0,
			      "iteration %llu: accepted with %d messages",
			      (unsigned long long)it, messages.count);
			check_promises(&image, s.size, it);
		} else {
			CHECK(r == -EINVAL, "iteration %llu: returned %d",
			      (unsigned long long)it, r);
			CHECK(messages.count >= 1,
			      "iteration %llu: refused silently",
			      (unsigned long long)it);
		}
		free(buf);
	}
	/* Many damaged bytes are harmless (p_paddr, p_align, contents). */
	printf("# %u of 20000 damaged files accepted\n", accepted);
	CHECK(accepted > 0 && accepted < 20000, "%u accepted", accepted);
	free(good_file);
}

/* --- The real user programs ------------------------------------------------------ */

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The file's bytes in a heap block of exactly its size, or NULL. */
static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc(n ? (size_t)n : 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

/*
 * Each program the Makefile built must be accepted. Printed as a KTAP
 * subtest with one case per file, or one skipped case when there are none
 * (the test was run from elsewhere, or before `make`).
 */
HOST_TEST(real_programs)
{
	DIR *dir = opendir(USER_ELF_DIR);
	char *names[64];
	size_t count = 0;
	struct dirent *d;

	while (dir && (d = readdir(dir)) && count < ARRAY_SIZE(names)) {
		size_t n = strlen(d->d_name);

		if (n > 4 && !strcmp(d->d_name + n - 4, ".elf"))
			names[count++] = strdup(d->d_name);
	}
	if (dir)
		closedir(dir);
	qsort(names, count, sizeof(names[0]), compare_names);

	printf("    KTAP version 1\n    # Subtest: real_programs\n");
	printf("    1..%zu\n", count ? count : 1);
	if (!count)
		printf("    ok 1 programs # SKIP no %s/*.elf (run make first, "
		       "from the top of the tree)\n",
		       USER_ELF_DIR);
	for (size_t i = 0; i < count; i++) {
		char path[512];
		size_t len = 0;
		uint8_t *buf;
		unsigned long before = host_test_failures;

		snprintf(path, sizeof(path), "%s/%s", USER_ELF_DIR, names[i]);
		buf = read_file(path, &len);
		if (CHECK(buf, "cannot read %s", path)) {
			CHECK_EQ(parse_buf(buf, len), 0);
			MESSAGES(0, NULL);
			/* user/linker.ld: text first, at 0x400000, r-x. */
			CHECK(image.segment_count >= 2 &&
				      image.segments[0].vaddr == 0x400000 &&
				      image.segments[0].prot ==
					      (ELF_PROT_READ | ELF_PROT_EXEC),
			      "%s: %zu segments, the first at %#llx (%s)",
			      names[i], image.segment_count,
			      (unsigned long long)image.segments[0].vaddr,
			      elf_prot_name(image.segments[0].prot));
			printf("    # %s: %zu bytes, entry %#llx, %zu "
			       "segments\n",
			       names[i], len, (unsigned long long)image.entry,
			       image.segment_count);
		}
		printf("    %sok %zu %s\n",
		       host_test_failures != before ? "not " : "", i + 1,
		       names[i]);
		free(buf);
		free(names[i]);
	}
}
