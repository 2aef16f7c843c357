// SPDX-License-Identifier: MIT
/*
 * IOAPIC access (82093AA datasheet; ACPI spec 5.2.12.5): two registers in
 * MMIO, an index (IOREGSEL) and a window (IOWIN). Register 1 holds the
 * number of redirection entries; entry n is the register pair 0x10 + 2n
 * (low: vector, delivery, polarity, trigger, mask; high: destination).
 *
 * Nothing in shootdown takes device interrupts yet (the serial port is
 * polled, the timer is the local APIC's): at boot every entry is masked, so
 * a device the firmware left enabled cannot raise stray vectors, and
 * ioapic_route_isa_irq is there for the first driver that needs one.
 */
#include "apic/ioapic.h"
#include "acpi/tables.h"
#include "lib/errno.h"
#include "kernel/kprintf.h"
#include "mm/kmap.h"
#include "mm/pagetable.h"

#define IOAPIC_REGSEL		   0x00 /* byte offset of the index register */
#define IOAPIC_WINDOW		   0x10 /* byte offset of the data window */
#define IOAPIC_REG_VER		   0x01
#define IOAPIC_VER_MAX_ENTRY_SHIFT 16
#define IOAPIC_VER_MAX_ENTRY_MASK  0xff
#define IOAPIC_REG_REDIRECT	   0x10 /* + 2 * entry */
#define REDIRECT_MASKED		   0x10000
#define REDIRECT_LEVEL_TRIGGER	   0x08000
#define REDIRECT_ACTIVE_LOW	   0x02000
#define REDIRECT_DEST_SHIFT	   56 /* physical mode: APIC ID (xAPIC) */
#define IOAPIC_MMIO_SIZE	   0x20

/* MPS INTI flags in an interrupt source override (ACPI 5.2.12.5). */
#define INTI_POLARITY_MASK 0x3
#define INTI_ACTIVE_LOW	   0x3
#define INTI_TRIGGER_MASK  0xc
#define INTI_LEVEL	   0xc

struct ioapic {
	volatile uint32_t *regs;
	uint32_t gsi_base;
	unsigned entries;
};

static struct ioapic ioapics[MADT_MAX_IOAPICS];
static size_t ioapic_count;
static const struct madt_info *madt_seen;

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
	madt_seen = madt;
	if (!madt || !madt->ioapic_count) {
		kprintf("ioapic: none in the MADT\n");
		return;
	}
	for (size_t i = 0; i < madt->ioapic_count; i++) {
		struct ioapic *io = &ioapics[ioapic_count];

		io->regs = ioremap(madt->ioapics[i].address, IOAPIC_MMIO_SIZE,
				   PTE_CACHE_UC);
		io->gsi_base = madt->ioapics[i].gsi_base;
		io->entries = ((ioapic_read(io, IOAPIC_REG_VER) >>
				IOAPIC_VER_MAX_ENTRY_SHIFT) &
			       IOAPIC_VER_MAX_ENTRY_MASK) +
			      1;
		for (unsigned n = 0; n < io->entries; n++)
			write_entry(io, n, REDIRECT_MASKED);
		kprintf("ioapic: id %u at %#x, GSIs %u-%u, all masked\n",
			madt->ioapics[i].id, madt->ioapics[i].address,
			io->gsi_base, io->gsi_base + io->entries - 1);
		ioapic_count++;
	}
}

int ioapic_route_isa_irq(unsigned irq, uint8_t vector, uint32_t destination)
{
	/* ISA interrupts are edge-triggered, active high, GSI = IRQ... */
	uint32_t gsi = irq;
	uint64_t entry = vector;

	/* ...unless the firmware says otherwise. */
	for (size_t i = 0; madt_seen && i < madt_seen->override_count; i++) {
		const struct madt_override *o = &madt_seen->overrides[i];

		if (o->bus != 0 || o->source != irq)
			continue;
		gsi = o->gsi;
		if ((o->flags & INTI_POLARITY_MASK) == INTI_ACTIVE_LOW)
			entry |= REDIRECT_ACTIVE_LOW;
		if ((o->flags & INTI_TRIGGER_MASK) == INTI_LEVEL)
			entry |= REDIRECT_LEVEL_TRIGGER;
	}
	entry |= (uint64_t)destination << REDIRECT_DEST_SHIFT;
	for (size_t i = 0; i < ioapic_count; i++) {
		const struct ioapic *io = &ioapics[i];

		if (gsi >= io->gsi_base && gsi < io->gsi_base + io->entries) {
			write_entry(io, gsi - io->gsi_base, entry);
			return 0;
		}
	}
	return -ENOENT;
}
