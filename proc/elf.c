// SPDX-License-Identifier: MIT
/*
 * Validation of static x86-64 ELF executables (see proc/elf.h).
 *
 * The file comes from outside the kernel, so nothing in it is trusted: every
 * offset and size is checked against the file before it is used, every sum
 * is checked for overflow, and fields are read byte by byte in
 * little-endian order (the image may sit at any alignment, and a cast to a
 * struct pointer would be an unaligned access the C standard does not
 * allow).
 *
 * What an accepted file promises the loader:
 * - each PT_LOAD segment's file bytes lie inside the file, and its memory
 *   lies inside user space, above the first page;
 * - file offset and address agree modulo the page size, so a page of the
 *   file maps to a page of memory;
 * - no two segments touch the same page, so each page gets one set of
 *   rights;
 * - no segment is both writable and executable (W^X);
 * - the entry point lies in an executable segment;
 * - nothing asks for a dynamic linker.
 */
#include "proc/elf.h"
#include "lib/errno.h"

/* ELF header layout (gABI "ELF Header"): byte offsets of the fields used. */
#define EHDR_SIZE	 64
#define EH_IDENT_CLASS	 4
#define EH_IDENT_DATA	 5
#define EH_IDENT_VERSION 6
#define EH_IDENT_OSABI	 7
#define EH_TYPE		 16
#define EH_MACHINE	 18
#define EH_VERSION	 20
#define EH_ENTRY	 24
#define EH_PHOFF	 32
#define EH_EHSIZE	 52
#define EH_PHENTSIZE	 54
#define EH_PHNUM	 56

#define ELFCLASS32    1
#define ELFCLASS64    2
#define ELFDATA2LSB   1
#define ELFDATA2MSB   2
#define EV_CURRENT    1
#define ELFOSABI_SYSV 0
#define ELFOSABI_GNU  3 /* GNU ld sets it for IFUNC and unique symbols */

#define ET_REL	1
#define ET_EXEC 2
#define ET_DYN	3
#define ET_CORE 4

#define EM_386	   3
#define EM_ARM	   40
#define EM_X86_64  62
#define EM_AARCH64 183
#define EM_RISCV   243

/* The value of e_phnum meaning "the real count is elsewhere" (PN_XNUM). */
#define PN_XNUM 0xffff

/* Program header layout (gABI "Program Header"). */
#define PHDR_SIZE 56
#define PH_TYPE	  0
#define PH_FLAGS  4
#define PH_OFFSET 8
#define PH_VADDR  16
#define PH_FILESZ 32
#define PH_MEMSZ  40

#define PT_LOAD	   1
#define PT_DYNAMIC 2
#define PT_INTERP  3
#define PT_TLS	   7

/* Segment permission bits: note X is the lowest, unlike ELF_PROT_*. */
#define PF_X 0x1
#define PF_W 0x2
#define PF_R 0x4

static const uint8_t elf_magic[4] = {0x7f, 'E', 'L', 'F'};

/* A little-endian field of n bytes (n <= 8) at p. */
static uint64_t get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = (v << 8) | p[n];
	return v;
}

struct ehdr {
	uint16_t type, machine;
	uint32_t version;
	uint64_t entry, phoff;
	uint16_t ehsize, phentsize, phnum;
};

struct phdr {
	uint32_t type, flags;
	uint64_t offset, vaddr, filesz, memsz;
};

/* Where problems go, and how many there were. */
struct checker {
	elf_report report;
	void *ctx;
	unsigned problems;
};

/* A macro, not a function: report takes "...", not a va_list. */
#define PROBLEM(c, ...)                                             \
	do {                                                        \
		(c)->problems++;                                    \
		if ((c)->report)                                    \
			(c)->report((c)->ctx, "elf: " __VA_ARGS__); \
	} while (0)

static unsigned prot_from_flags(uint32_t flags)
{
	return ((flags & PF_R) ? ELF_PROT_READ : 0) |
	       ((flags & PF_W) ? ELF_PROT_WRITE : 0) |
	       ((flags & PF_X) ? ELF_PROT_EXEC : 0);
}

const char *elf_prot_name(unsigned prot)
{
	static const char *const names[8] = {"---", "r--", "-w-", "rw-",
					     "--x", "r-x", "-wx", "rwx"};

	return prot < 8 ? names[prot] : "???";
}

static const char *machine_name(unsigned machine)
{
	switch (machine) {
	case EM_386:
		return " (i386)";
	case EM_ARM:
		return " (32-bit ARM)";
	case EM_AARCH64:
		return " (AArch64)";
	case EM_RISCV:
		return " (RISC-V)";
	default:
		return "";
	}
}

/*
 * The identification bytes: whether the rest of the header can be read
 * at all (class and byte order decide the layout of every other field).
 */
static bool check_ident(const uint8_t *b, size_t size, struct checker *c)
{
	if (size >= 4 && (b[0] != elf_magic[0] || b[1] != elf_magic[1] ||
			  b[2] != elf_magic[2] || b[3] != elf_magic[3])) {
		PROBLEM(c,
			"not an ELF file: it starts with %02x %02x %02x %02x, "
			"not 7f 45 4c 46 (\"\\x7fELF\")",
			b[0], b[1], b[2], b[3]);
		return false;
	}
	if (size < EHDR_SIZE) {
		PROBLEM(c,
			"the file has %zu bytes, too few for an ELF header "
			"(%d bytes): truncated?",
			size, EHDR_SIZE);
		return false;
	}
	if (b[EH_IDENT_CLASS] != ELFCLASS64) {
		if (b[EH_IDENT_CLASS] == ELFCLASS32)
			PROBLEM(c, "a 32-bit ELF file (ELFCLASS32): shootdown "
				   "runs 64-bit x86-64 programs");
		else
			PROBLEM(c,
				"unknown ELF class %u (EI_CLASS), expected "
				"2 (ELFCLASS64)",
				b[EH_IDENT_CLASS]);
		return false;
	}
	if (b[EH_IDENT_DATA] != ELFDATA2LSB) {
		if (b[EH_IDENT_DATA] == ELFDATA2MSB)
			PROBLEM(c,
				"a big-endian ELF file (ELFDATA2MSB): x86-64 "
				"is little-endian");
		else
			PROBLEM(c,
				"unknown byte order %u (EI_DATA), expected "
				"1 (ELFDATA2LSB)",
				b[EH_IDENT_DATA]);
		return false;
	}
	return true;
}

/*
 * The rest of the ELF header. Every field is checked and each problem
 * reported; the program headers are only read when all are right.
 */
static bool check_header(const uint8_t *b, size_t size, struct ehdr *eh,
			 struct checker *c)
{
	unsigned before = c->problems;
	unsigned osabi = b[EH_IDENT_OSABI];

	eh->type = (uint16_t)get_le(b + EH_TYPE, 2);
	eh->machine = (uint16_t)get_le(b + EH_MACHINE, 2);
	eh->version = (uint32_t)get_le(b + EH_VERSION, 4);
	eh->entry = get_le(b + EH_ENTRY, 8);
	eh->phoff = get_le(b + EH_PHOFF, 8);
	eh->ehsize = (uint16_t)get_le(b + EH_EHSIZE, 2);
	eh->phentsize = (uint16_t)get_le(b + EH_PHENTSIZE, 2);
	eh->phnum = (uint16_t)get_le(b + EH_PHNUM, 2);

	if (b[EH_IDENT_VERSION] != EV_CURRENT)
		PROBLEM(c, "ELF version %u (EI_VERSION), expected 1",
			b[EH_IDENT_VERSION]);
	if (osabi != ELFOSABI_SYSV && osabi != ELFOSABI_GNU)
		PROBLEM(c,
			"OS/ABI %u (EI_OSABI) is neither System V (0) nor "
			"GNU (3)",
			osabi);
	switch (eh->type) {
	case ET_EXEC:
		break;
	case ET_DYN:
		PROBLEM(c, "a position-independent executable or shared "
			   "library (ET_DYN): shootdown loads programs at the "
			   "addresses they were linked for; link with -static "
			   "-no-pie");
		break;
	case ET_REL:
		PROBLEM(c, "a relocatable object file (ET_REL), not an "
			   "executable: link it first");
		break;
	case ET_CORE:
		PROBLEM(c, "a core dump (ET_CORE), not an executable");
		break;
	default:
		PROBLEM(c,
			"file type %u (e_type) is not an executable (2, "
			"ET_EXEC)",
			eh->type);
	}
	if (eh->machine != EM_X86_64)
		PROBLEM(c, "machine %u%s (e_machine) is not x86-64 (62)",
			eh->machine, machine_name(eh->machine));
	if (eh->version != EV_CURRENT)
		PROBLEM(c, "ELF version %u (e_version), expected 1",
			eh->version);
	if (eh->ehsize != EHDR_SIZE)
		PROBLEM(c, "ELF header size %u (e_ehsize), expected %d",
			eh->ehsize, EHDR_SIZE);
	if (eh->phentsize != PHDR_SIZE)
		PROBLEM(c, "program header size %u (e_phentsize), expected %d",
			eh->phentsize, PHDR_SIZE);
	if (c->problems != before)
		return false;

	if (eh->phnum == 0) {
		PROBLEM(c, "no program headers (e_phnum 0): nothing to load");
		return false;
	}
	if (eh->phnum == PN_XNUM) {
		PROBLEM(c, "e_phnum is PN_XNUM (0xffff, more than 65534 "
			   "program headers): not supported");
		return false;
	}
	/* phnum * 56 is below 2^22: only the sum with phoff can overflow. */
	if (eh->phoff > size ||
	    (uint64_t)eh->phnum * PHDR_SIZE > size - eh->phoff) {
		PROBLEM(c,
			"the program header table (%u entries of %d bytes at "
			"offset %#llx, e_phoff) goes past the end of the "
			"%zu-byte file",
			eh->phnum, PHDR_SIZE, (unsigned long long)eh->phoff,
			size);
		return false;
	}
	return true;
}

static void read_phdr(const uint8_t *p, struct phdr *ph)
{
	ph->type = (uint32_t)get_le(p + PH_TYPE, 4);
	ph->flags = (uint32_t)get_le(p + PH_FLAGS, 4);
	ph->offset = get_le(p + PH_OFFSET, 8);
	ph->vaddr = get_le(p + PH_VADDR, 8);
	ph->filesz = get_le(p + PH_FILESZ, 8);
	ph->memsz = get_le(p + PH_MEMSZ, 8);
}

/*
 * One PT_LOAD segment (program header number n; memsz > 0). Each of its
 * problems is reported; returns whether it has none.
 */
static bool check_load(const struct phdr *ph, unsigned n, size_t size,
		       struct checker *c)
{
	unsigned before = c->problems;
	unsigned prot = prot_from_flags(ph->flags);
	uint64_t end = ph->vaddr + ph->memsz;

	if (ph->filesz > ph->memsz)
		PROBLEM(c,
			"program header %u: p_filesz %#llx is larger than "
			"p_memsz %#llx",
			n, (unsigned long long)ph->filesz,
			(unsigned long long)ph->memsz);
	if (ph->offset > size || ph->filesz > size - ph->offset)
		PROBLEM(c,
			"program header %u: its file bytes (p_offset %#llx, "
			"p_filesz %#llx) go past the end of the %zu-byte file",
			n, (unsigned long long)ph->offset,
			(unsigned long long)ph->filesz, size);

	if (end < ph->vaddr)
		PROBLEM(c,
			"program header %u: p_vaddr %#llx + p_memsz %#llx "
			"overflows",
			n, (unsigned long long)ph->vaddr,
			(unsigned long long)ph->memsz);
	else if (ph->vaddr < ELF_USER_BOTTOM)
		PROBLEM(c,
			"program header %u: memory %#llx-%#llx includes the "
			"first page, which stays unmapped to catch NULL "
			"pointers",
			n, (unsigned long long)ph->vaddr,
			(unsigned long long)end);
	else if (end > ELF_USER_TOP)
		PROBLEM(c,
			"program header %u: memory %#llx-%#llx is not inside "
			"user space (%#llx-%#llx)",
			n, (unsigned long long)ph->vaddr,
			(unsigned long long)end, ELF_USER_BOTTOM, ELF_USER_TOP);

	if (ph->offset % ELF_PAGE_SIZE != ph->vaddr % ELF_PAGE_SIZE)
		PROBLEM(c,
			"program header %u: p_offset %#llx and p_vaddr %#llx "
			"differ modulo the page size (%#llx), so the file "
			"cannot be mapped page by page",
			n, (unsigned long long)ph->offset,
			(unsigned long long)ph->vaddr, ELF_PAGE_SIZE);

	if ((prot & ELF_PROT_WRITE) && (prot & ELF_PROT_EXEC))
		PROBLEM(c,
			"program header %u (%#llx-%#llx) is writable and "
			"executable (%s): refused (W^X)",
			n, (unsigned long long)ph->vaddr,
			(unsigned long long)end, elf_prot_name(prot));
	return c->problems == before;
}

/* The pages a segment touches: [first, last] page start addresses. */
static uint64_t first_page(const struct elf_segment *s)
{
	return ALIGN_DOWN(s->vaddr, ELF_PAGE_SIZE);
}

static uint64_t last_page(const struct elf_segment *s)
{
	return ALIGN_DOWN(s->vaddr + s->memsz - 1, ELF_PAGE_SIZE);
}

/*
 * Each page is mapped once with one set of rights, so two segments may not
 * share one (which a linker script without page alignment produces).
 * number[i] is the program header number of out->segments[i].
 */
static void check_overlaps(const struct elf_image *out, const unsigned *number,
			   struct checker *c)
{
	for (size_t i = 0; i < out->segment_count; i++) {
		const struct elf_segment *a = &out->segments[i];

		for (size_t j = i + 1; j < out->segment_count; j++) {
			const struct elf_segment *b = &out->segments[j];

			if (first_page(a) <= last_page(b) &&
			    first_page(b) <= last_page(a))
				PROBLEM(c,
					"program headers %u (%#llx-%#llx) and "
					"%u (%#llx-%#llx) share a page",
					number[i], (unsigned long long)a->vaddr,
					(unsigned long long)(a->vaddr +
							     a->memsz),
					number[j], (unsigned long long)b->vaddr,
					(unsigned long long)(b->vaddr +
							     b->memsz));
		}
	}
}

static void check_entry(const struct elf_image *out, const unsigned *number,
			struct checker *c)
{
	for (size_t i = 0; i < out->segment_count; i++) {
		const struct elf_segment *s = &out->segments[i];

		if (out->entry < s->vaddr || out->entry - s->vaddr >= s->memsz)
			continue;
		if (!(s->prot & ELF_PROT_EXEC))
			PROBLEM(c,
				"the entry point %#llx (e_entry) is in program "
				"header %u, which is not executable (%s)",
				(unsigned long long)out->entry, number[i],
				elf_prot_name(s->prot));
		return;
	}
	PROBLEM(c, "the entry point %#llx (e_entry) is in no loadable segment",
		(unsigned long long)out->entry);
}

int elf_parse(const void *image, size_t size, struct elf_image *out,
	      elf_report report, void *ctx)
{
	struct checker c = {.report = report, .ctx = ctx, .problems = 0};
	const uint8_t *b = image;
	unsigned number[ELF_MAX_SEGMENTS];
	unsigned loads = 0;
	bool dynamic = false;
	struct ehdr eh;

	*out = (struct elf_image){0};
	if (!image && size) {
		PROBLEM(&c, "no image (NULL) of %zu bytes", size);
		return -EINVAL;
	}
	if (!check_ident(b, size, &c) || !check_header(b, size, &eh, &c))
		return -EINVAL;

	for (unsigned n = 0; n < eh.phnum; n++) {
		struct phdr ph;

		read_phdr(b + eh.phoff + (uint64_t)n * PHDR_SIZE, &ph);
		if ((ph.type == PT_INTERP || ph.type == PT_DYNAMIC) &&
		    !dynamic) {
			/* Both usually come together: say it once. */
			PROBLEM(&c,
				"dynamically linked: shootdown runs static "
				"executables (program header %u is %s)",
				n,
				ph.type == PT_INTERP ? "PT_INTERP"
						     : "PT_DYNAMIC");
			dynamic = true;
		} else if (ph.type == PT_TLS) {
			PROBLEM(&c,
				"program header %u is PT_TLS: thread-local "
				"variables are not supported",
				n);
		}
		/* Other types (notes, PT_GNU_STACK...) need no action. */
		if (ph.type != PT_LOAD || ph.memsz == 0)
			continue;
		if (++loads > ELF_MAX_SEGMENTS) {
			if (loads == ELF_MAX_SEGMENTS + 1)
				PROBLEM(&c,
					"more than %d loadable segments "
					"(program header %u is number %u)",
					ELF_MAX_SEGMENTS, n, loads);
			continue;
		}
		if (!check_load(&ph, n, size, &c))
			continue;
		number[out->segment_count] = n;
		out->segments[out->segment_count++] = (struct elf_segment){
			.vaddr = ph.vaddr,
			.memsz = ph.memsz,
			.offset = ph.offset,
			.filesz = ph.filesz,
			.prot = prot_from_flags(ph.flags),
		};
	}
	if (loads == 0 && !c.problems)
		PROBLEM(&c, "no loadable (PT_LOAD) segments: nothing to run");

	/* Only among segments that are each fine: no ranges to distrust. */
	check_overlaps(out, number, &c);
	/* A rejected segment might have held the entry point: wait. */
	if (!c.problems) {
		out->entry = eh.entry;
		check_entry(out, number, &c);
	}
	if (c.problems) {
		*out = (struct elf_image){0};
		return -EINVAL;
	}
	return 0;
}
