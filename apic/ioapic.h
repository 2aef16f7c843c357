/* SPDX-License-Identifier: MIT */
/*
 * IOAPICs: they route device interrupts (global system interrupts, GSIs) to
 * a CPU's local APIC. No device interrupt is used here: at boot every
 * redirection entry is masked.
 */
#ifndef APIC_IOAPIC_H
#define APIC_IOAPIC_H

#include "lib/types.h"

struct madt_info;

/* Maps each IOAPIC the MADT lists, the ones beyond the parse's limit too,
 * and masks all its entries. */
void ioapic_init(const struct madt_info *madt);

#endif
