/* SPDX-License-Identifier: MIT */
/*
 * IOAPICs: route device interrupts (global system interrupts, GSIs) to a
 * CPU's local APIC. At boot every redirection entry is masked; a driver asks
 * for its IRQ with ioapic_route, which applies the MADT's interrupt source
 * overrides (ISA IRQ 0 is usually GSI 2, for example).
 */
#ifndef APIC_IOAPIC_H
#define APIC_IOAPIC_H

#include "lib/types.h"

struct madt_info;

/* Maps each IOAPIC the MADT lists and masks all its entries. */
void ioapic_init(const struct madt_info *madt);

/*
 * Routes ISA IRQ irq (after overrides) to vector on the CPU with APIC ID
 * destination. Returns 0, or -ENOENT when no IOAPIC serves it.
 */
int ioapic_route_isa_irq(unsigned irq, uint8_t vector, uint32_t destination);

#endif
