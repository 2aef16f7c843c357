/* SPDX-License-Identifier: MIT */
/* The two local-APIC back ends (apic/xapic.c, apic/x2apic.c). Private to apic/. */
#ifndef APIC_LAPIC_BACKEND_H
#define APIC_LAPIC_BACKEND_H

#include "lib/types.h"

struct lapic_backend {
	const char *name;
	uint32_t (*read)(uint32_t reg);
	void (*write)(uint32_t reg, uint32_t value);
	/* Writes the ICR: the destination and the command word. */
	void (*send_ipi)(uint32_t destination, uint32_t command);
	uint32_t (*id)(void);
};

extern const struct lapic_backend xapic_backend;
extern const struct lapic_backend x2apic_backend;

/* xAPIC only: where the register page is mapped (set by apic/lapic.c). */
extern volatile uint32_t *xapic_registers;

#endif
