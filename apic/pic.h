/* SPDX-License-Identifier: MIT */
/*
 * The legacy 8259 PICs: remapped away from the exception vectors and masked.
 * Interrupts come from the local APIC and the IOAPIC; the 8259s can still
 * raise spurious IRQ 7 and 15, which arrive on PIC_VECTOR_BASE + 7 and + 15.
 */
#ifndef APIC_PIC_H
#define APIC_PIC_H

#include "lib/types.h"

#define PIC_VECTOR_BASE 0x30 /* 0x30-0x3f: after VECTOR_TIMER */
#define PIC_VECTORS	16

void pic_remap_and_mask(void);

/* A spurious 8259 interrupt arrived on vector: acknowledge as needed. */
void pic_spurious(unsigned vector);

#endif
