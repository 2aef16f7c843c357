// SPDX-License-Identifier: MIT
#include "cpu/gdt.h"
#include "lib/string.h"
#include "arch/x86.h"

struct cpu_tables boot_cpu_tables __aligned(PAGE_SIZE);

/* Descriptor bits (SDM Vol. 3A, 3.4.5 and 7.2.3). */
#define DESC_ACCESSED  (1ULL << 40)
#define DESC_WRITABLE  (1ULL << 41) /* data: writable; code: readable */
#define DESC_CODE      (1ULL << 43)
#define DESC_USER_SEG  (1ULL << 44) /* S: code/data, not system */
#define DESC_DPL3      (3ULL << 45)
#define DESC_PRESENT   (1ULL << 47)
#define DESC_LONG      (1ULL << 53) /* L: 64-bit code */
#define DESC_DB32      (1ULL << 54) /* D/B: 32-bit segment */
#define DESC_GRAN_4K   (1ULL << 55)
#define DESC_LIMIT_MAX (0xfULL << 48 | 0xffffULL)
#define DESC_TSS_AVAIL (9ULL << 40) /* type: 64-bit TSS, available */

#define SEG_COMMON                                                      \
	(DESC_PRESENT | DESC_USER_SEG | DESC_ACCESSED | DESC_WRITABLE | \
	 DESC_GRAN_4K | DESC_LIMIT_MAX)

static void tss_descriptor(uint64_t *slot, const struct tss *tss)
{
	uint64_t base = (uint64_t)tss;
	uint64_t limit = sizeof(*tss) - 1;

	slot[0] = (limit & 0xffff) | ((base & 0xffffff) << 16) |
		  DESC_TSS_AVAIL | DESC_PRESENT | ((base >> 24) & 0xff) << 56;
	slot[1] = base >> 32;
}

void gdt_load(struct cpu_tables *t)
{
	struct descriptor_pointer gdtr;

	memset(t->gdt, 0, sizeof(t->gdt));
	t->gdt[GDT_KERNEL_CODE / 8] = SEG_COMMON | DESC_CODE | DESC_LONG;
	t->gdt[GDT_KERNEL_DATA / 8] = SEG_COMMON | DESC_DB32;
	/* GDT_USER_CODE32 stays zero (not present): a far jump or far
	 * return to it faults in ring 3, so no user thread can reach
	 * compatibility mode, where SYSCALL goes through MSR_CSTAR. SYSRET
	 * with a 64-bit operand loads CS from STAR[63:48] + 16 with fixed
	 * attributes and never reads this slot; it only fixes where the
	 * user selectors sit. */
	t->gdt[GDT_USER_DATA / 8] = SEG_COMMON | DESC_DB32 | DESC_DPL3;
	t->gdt[GDT_USER_CODE / 8] =
		SEG_COMMON | DESC_CODE | DESC_LONG | DESC_DPL3;

	memset(&t->tss, 0, sizeof(t->tss));
	for (int i = 0; i < IST_STACKS; i++)
		t->tss.ist[i] = (uint64_t)t->ist_stacks[i] + IST_STACK_SIZE;
	t->tss.iomap_base = sizeof(t->tss);
	tss_descriptor(&t->gdt[GDT_TSS / 8], &t->tss);

	gdtr.limit = sizeof(t->gdt) - 1;
	gdtr.base = (uint64_t)t->gdt;
	lgdt(&gdtr);
	load_segments(GDT_KERNEL_CODE, GDT_KERNEL_DATA);
	ltr(GDT_TSS);
}
