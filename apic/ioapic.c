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
#include "acpi/acpi.h"
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

/* The state of the walk over every IOAPIC entry of the MADT. */
struct mask_walk {
	size_t kept; /* the first ones, which the MADT parse kept */
	size_t visited;
	size_t entries_beyond; /* masked in IOAPICs beyond the kept ones */
};

static void mask_ioapic(void *ctx, const struct madt_ioapic *entry)
{
	struct mask_walk *walk = ctx;
	bool kept = walk->visited++ < walk->kept;
	struct ioapic io = {.gsi_base = entry->gsi_base};

	/* Register writes at address 0 would land in RAM. */
	if (!entry->address) {
		kprintf("ioapic: id %u at address 0: skipped\n", entry->id);
		return;
	}
	io.regs = ioremap(entry->address, IOAPIC_MMIO_SIZE, PTE_CACHE_UC);
	io.entries = ((ioapic_read(&io, IOAPIC_REG_VER) >>
		       IOAPIC_VER_MAX_ENTRY_SHIFT) &
		      IOAPIC_VER_MAX_ENTRY_MASK) +
		     1;
	for (unsigned n = 0; n < io.entries; n++)
		write_entry(&io, n, REDIRECT_MASKED);
	if (!kept) {
		walk->entries_beyond += io.entries;
		return;
	}
	kprintf("ioapic: id %u at %#x, GSIs %u-%u, all masked\n", entry->id,
		entry->address, io.gsi_base, io.gsi_base + io.entries - 1);
}

/*
 * Walks the MADT itself rather than the parsed copy: an IOAPIC the parse
 * did not keep (over MADT_MAX_IOAPICS) still has unmasked entries that
 * could fire, so it is masked all the same, and summed up in one line.
 */
void ioapic_init(const struct madt_info *madt)
{
	struct mask_walk walk = {.kept = madt ? madt->ioapic_count : 0};
	size_t len;
	const void *table = acpi_find_table("APIC", &len);

	if (madt && table)
		madt_for_each_ioapic(table, len, mask_ioapic, &walk);
	if (!walk.visited) {
		kprintf("ioapic: none in the MADT\n");
		return;
	}
	if (walk.visited > walk.kept)
		kprintf("ioapic: %zu more IOAPICs than the %d the kernel "
			"keeps: their %zu entries masked too\n",
			walk.visited - walk.kept, MADT_MAX_IOAPICS,
			walk.entries_beyond);
}
