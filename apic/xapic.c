// SPDX-License-Identifier: MIT
/*
 * xAPIC back end: 32-bit loads and stores to the register page, which is
 * mapped uncached (apic/lapic.c). Only aligned 32-bit accesses are allowed
 * (SDM Vol. 3A, 11.4.1).
 */
#include "apic/lapic.h"
#include "apic/lapic_backend.h"
#include "console/kprintf.h"
#include "arch/x86.h"

/* Bounded wait for the ICR: an APIC that never goes idle must not hang us. */
#define ICR_IDLE_SPINS 1000000

volatile uint32_t *xapic_registers;

static uint32_t xapic_read(uint32_t reg)
{
	return xapic_registers[reg / 4];
}

static void xapic_write(uint32_t reg, uint32_t value)
{
	xapic_registers[reg / 4] = value;
}

/*
 * The xAPIC has one ICR: the previous IPI must have left it (delivery status
 * idle) before the next is written, or the write is lost (SDM Vol. 3A,
 * 11.6.1). High half first: writing the low half sends.
 */
static void xapic_send_ipi(uint32_t destination, uint32_t command)
{
	int spins = 0;

	while (xapic_read(LAPIC_ICR_LOW) & ICR_DELIVERY_PENDING) {
		if (++spins == ICR_IDLE_SPINS) {
			kprintf("apic: ICR still busy after %d polls; sending "
				"anyway\n",
				spins);
			break;
		}
		cpu_relax();
	}
	xapic_write(LAPIC_ICR_HIGH, destination << 24);
	xapic_write(LAPIC_ICR_LOW, command);
}

static uint32_t xapic_id(void)
{
	return xapic_read(LAPIC_ID) >> 24;
}

const struct lapic_backend xapic_backend = {
	.name = "xapic",
	.read = xapic_read,
	.write = xapic_write,
	.send_ipi = xapic_send_ipi,
	.id = xapic_id,
};
