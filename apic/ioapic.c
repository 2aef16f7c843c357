// SPDX-License-Identifier: MIT
/*
 * IOAPIC access (82093AA datasheet; ACPI spec 5.2.12.5): two registers in
 * MMIO, an index (IOREGSEL) and a window (IOWIN). Register 1 holds the
 * number of redirection entries; entry n is the register pair 0x10 + 2n
 * (low: vector, delivery, polarity, trigger, mask; high: destination).
 *
 * Nothing in shootdown takes device interrupts (the serial port is polled,
 * the timer is the local APIC's): at boot every entry is masked, so a device
 * the firmware left enabled cannot raise stray vectors.
 */
#include "apic/ioapic.h"
#include "acpi/tables.h"
#include "console/kprintf.h"
#include "mm/kmap.h"
#include "mm/pagetable.h"

#define IOAPIC_REGSEL		   0x00 /* byte offset of the index register */
#define IOAPIC_WINDOW		   0x10 /* byte offset of the data window */
#define IOAPIC_REG_VER		   0x01
#define IOAPIC_VER_MAX_ENTRY_SHIFT 16
#define IOAPIC_VER_MAX_ENTRY_MASK  0xff
#define IOAPIC_REG_REDIRECT	   0x10 /* + 2 * entry */
#define REDIRECT_MASKED		   0x10000
#define IOAPIC_MMIO_SIZE	   0x20

struct ioapic {
	volatile uint32_t *regs;
	uint32_t gsi_base;
	unsigned entries;
};

static uint32_t ioapic_read(const struct ioapic *io, uint32_t reg)
{
	io->regs[IOAPIC_REGSEL / 4] = reg;
	return io->regs[IOAPIC_WINDOW / 4];
}

static void ioapic_write(const struct ioapic *io, uint32_t reg, uint32_t v)
{
	io->regs[IOAPIC_REGSEL / 4] = reg;
	io->regs[IOAPIC_WINDOW / 4] = v;
}

static void write_entry(const struct ioapic *io, unsigned n, uint64_t entry)
{
	/* Mask first: never leave a half-written, unmasked entry. */
	ioapic_write(io, IOAPIC_REG_REDIRECT + 2 * n, REDIRECT_MASKED);
	ioapic_write(io, IOAPIC_REG_REDIRECT + 2 * n + 1,
		     (uint32_t)(entry >> 32));
	ioapic_write(io, IOAPIC_REG_REDIRECT + 2 * n, (uint32_t)entry);
}

void ioapic_init(const struct madt_info *madt)
{
	if (!madt || !madt->ioapic_count) {
		kprintf("ioapic: none in the MADT\n");
		return;
	}
	for (size_t i = 0; i < madt->ioapic_count; i++) {
		struct ioapic io = {
			.regs = ioremap(madt->ioapics[i].address,
					IOAPIC_MMIO_SIZE, PTE_CACHE_UC),
			.gsi_base = madt->ioapics[i].gsi_base,
		};

		io.entries = ((ioapic_read(&io, IOAPIC_REG_VER) >>
			       IOAPIC_VER_MAX_ENTRY_SHIFT) &
			      IOAPIC_VER_MAX_ENTRY_MASK) +
			     1;
		for (unsigned n = 0; n < io.entries; n++)
			write_entry(&io, n, REDIRECT_MASKED);
		kprintf("ioapic: id %u at %#x, GSIs %u-%u, all masked\n",
			madt->ioapics[i].id, madt->ioapics[i].address,
			io.gsi_base, io.gsi_base + io.entries - 1);
	}
}
