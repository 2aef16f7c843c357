// SPDX-License-Identifier: MIT
/*
 * 8259A initialization (Intel 8259A datasheet, ICW1-ICW4): after a BIOS
 * boot the master delivers IRQ 0-7 on vectors 8-15, the exception vectors.
 * Even masked, a PIC can raise a spurious IRQ 7 (or 15 on the slave), so it
 * is remapped to vectors where that is harmless before being masked.
 */
#include "apic/pic.h"
#include "trap/trap.h"
#include "arch/x86.h"

#define PIC1_COMMAND 0x20
#define PIC1_DATA    0x21
#define PIC2_COMMAND 0xa0
#define PIC2_DATA    0xa1

#define ICW1_INIT_ICW4	   0x11 /* start initialization, ICW4 follows */
#define ICW3_MASTER	   0x04 /* slave on IRQ 2 */
#define ICW3_SLAVE	   0x02 /* cascade identity 2 */
#define ICW4_8086	   0x01
#define PIC_MASK_ALL	   0xff
#define PIC_EOI		   0x20
#define PIC_SLAVE_SPURIOUS 15
#define UNUSED_PORT	   0x80 /* POST code port: a write is a short delay */

/* The 8259 needs a moment between initialization words on old hardware. */
static void io_delay(void)
{
	outb(UNUSED_PORT, 0);
}

static void spurious_interrupt(struct trap_frame *frame)
{
	pic_spurious((unsigned)frame->vector);
}

void pic_remap_and_mask(void)
{
	outb(PIC1_COMMAND, ICW1_INIT_ICW4);
	io_delay();
	outb(PIC2_COMMAND, ICW1_INIT_ICW4);
	io_delay();
	outb(PIC1_DATA, PIC_VECTOR_BASE);
	io_delay();
	outb(PIC2_DATA, PIC_VECTOR_BASE + 8);
	io_delay();
	outb(PIC1_DATA, ICW3_MASTER);
	io_delay();
	outb(PIC2_DATA, ICW3_SLAVE);
	io_delay();
	outb(PIC1_DATA, ICW4_8086);
	io_delay();
	outb(PIC2_DATA, ICW4_8086);
	io_delay();
	outb(PIC1_DATA, PIC_MASK_ALL);
	outb(PIC2_DATA, PIC_MASK_ALL);
	/* Masked, they can still raise spurious IRQ 7 and 15 here. */
	for (unsigned v = PIC_VECTOR_BASE; v < PIC_VECTOR_BASE + PIC_VECTORS;
	     v++)
		trap_set_spurious(v, spurious_interrupt);
}

void pic_spurious(unsigned vector)
{
	/* A spurious IRQ 15 came through the master's IRQ 2, which did see
	 * a real request from the slave: the master wants its EOI. */
	if (vector - PIC_VECTOR_BASE == PIC_SLAVE_SPURIOUS)
		outb(PIC1_COMMAND, PIC_EOI);
}
