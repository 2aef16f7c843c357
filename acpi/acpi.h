/* SPDX-License-Identifier: MIT */
/*
 * ACPI on the running kernel: finds the RSDP, maps and checks every table
 * the root table lists, and parses the ones the kernel needs (MADT: which
 * CPUs and interrupt controllers exist; FADT: the PM timer; HPET; DMAR:
 * whether the firmware asks for xAPIC mode).
 *
 * acpi_init runs once on the boot CPU, after the kernel page tables are
 * live (tables are mapped with ioremap) and before other CPUs start; the
 * results never change afterwards, so readers need no lock.
 */
#ifndef ACPI_ACPI_H
#define ACPI_ACPI_H

#include "acpi/tables.h"
#include "boot/multiboot2.h"
#include "lib/types.h"

#define ACPI_MAX_TABLES	      64
#define ACPI_MAX_ROOT_ENTRIES 256    /* entries of the XSDT/RSDT looked at */
#define ACPI_MAX_TABLE_LEN    MiB(1) /* larger lengths are taken as garbage */
#define ACPI_RSDP_COPY	      64     /* bytes of the RSDP kept for the tests */

/* A table that passed its checks, mapped for good. */
struct acpi_table {
	char signature[5];
	char oem_id[7];
	uint8_t revision;
	uint32_t length;
	uint64_t phys;
	const void *virt;
};

/* Where the RSDP was found, and a copy of it. */
struct acpi_rsdp_found {
	struct acpi_rsdp_info info;
	uint64_t phys;
	const char *source; /* "multiboot2 ACPI 2.0 tag", "EBDA", ... */
	uint8_t bytes[ACPI_RSDP_COPY];
	size_t size;	 /* valid bytes in bytes[] */
	bool using_xsdt; /* the XSDT was usable, else the RSDT is used */
};

/*
 * Finds and checks the tables. Returns 0, or a negative errno with a
 * message when there is no RSDP, no usable root table or no usable MADT:
 * then only the boot CPU can be used.
 */
int acpi_init(const struct boot_info *boot);

/* Prints the RSDP, one line per table, and what the MADT, FADT and HPET
 * table say (one line per CPU entry). */
void acpi_print_tables(void);

/* The first good table with this 4-character signature, or NULL. */
const void *acpi_find_table(const char *signature, size_t *length);

/* The good tables, in the order found (the root table first). */
size_t acpi_table_count(void);
const struct acpi_table *acpi_table_get(size_t i);

/* The RSDP, or NULL when none was found. */
const struct acpi_rsdp_found *acpi_rsdp(void);

/*
 * Searches the EBDA's first KiB and 0xe0000-0xfffff for a valid RSDP, as
 * acpi_init does when the loader passed none (BIOS machines only). Changes
 * nothing else; for the tests.
 */
bool acpi_search_bios_areas(struct acpi_rsdp_found *out);

/* The parsed MADT, or NULL when there is none. */
const struct madt_info *acpi_madt(void);

/* The ACPI PM timer's port and width; false when there is none. */
bool acpi_pm_timer(uint16_t *port, bool *is_32bit);

/* The HPET's register block; false when there is no usable HPET table. */
bool acpi_hpet_base(uint64_t *phys);

/* The DMAR table's flags, or NULL when there is no usable DMAR table. */
const struct dmar_info *acpi_dmar(void);

#endif
