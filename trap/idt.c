// SPDX-License-Identifier: MIT
/*
 * Every vector gets an interrupt gate (interrupts off on entry) to its stub
 * in trap/isr.asm. Double fault, NMI and machine check run on their own
 * IST stacks: they can arrive when the current stack is unusable (a kernel
 * stack overflow into its guard page is the classic double fault).
 */
#include "trap/idt.h"
#include "cpu/gdt.h"
#include "trap/trap.h"
#include "arch/x86.h"

struct idt_gate {
	uint16_t offset_low;
	uint16_t selector;
	uint8_t ist;
	uint8_t type_attr;
	uint16_t offset_mid;
	uint32_t offset_high;
	uint32_t reserved;
} __packed;

_Static_assert(sizeof(struct idt_gate) == 16, "64-bit IDT gates are 16 bytes");

#define GATE_INTERRUPT 0x0e /* type: 64-bit interrupt gate */
#define GATE_PRESENT   0x80
#define GATE_DPL3      0x60 /* reachable with INT n from ring 3 */
#define IDT_VECTORS    256

static struct idt_gate idt[IDT_VECTORS] __aligned(16);
static bool idt_filled;

static uint8_t ist_for(unsigned vector)
{
	switch (vector) {
	case VEC_DOUBLE_FAULT:
		return IST_DOUBLE_FAULT;
	case VEC_NMI:
		return IST_NMI;
	case VEC_MACHINE_CHECK:
		return IST_MACHINE_CHECK;
	default:
		return 0;
	}
}

static void fill(void)
{
	for (unsigned v = 0; v < IDT_VECTORS; v++) {
		uint64_t handler = isr_stub_table[v];

		idt[v] = (struct idt_gate){
			.offset_low = handler & 0xffff,
			.selector = GDT_KERNEL_CODE,
			.ist = ist_for(v),
			.type_attr = GATE_PRESENT | GATE_INTERRUPT |
				     (v == VEC_BREAKPOINT ? GATE_DPL3 : 0),
			.offset_mid = (handler >> 16) & 0xffff,
			.offset_high = handler >> 32,
		};
	}
	idt_filled = true;
}

void idt_load(void)
{
	struct descriptor_pointer idtr = {sizeof(idt) - 1, (uint64_t)idt};

	if (!idt_filled)
		fill();
	lidt(&idtr);
}
