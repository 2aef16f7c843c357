/* SPDX-License-Identifier: MIT */
/*
 * ACPI tables as bytes (ACPI 6.5, chapter 5.2): the RSDP, the root tables
 * (RSDT, XSDT), the MADT, the FADT, the HPET table and the DMAR's flags.
 * Pure logic: every function works on a buffer and its size, touches no
 * hardware and keeps no state, so the host unit tests can feed it malformed
 * tables. Firmware tables are input like any other: every length is checked
 * before a byte is read, and problems are reported, never trusted.
 *
 * acpi/acpi.c finds the tables in physical memory and maps them.
 */
#ifndef ACPI_TABLES_H
#define ACPI_TABLES_H

#include "lib/types.h"
#include "sync/cpumask.h"

typedef void (*acpi_report)(void *ctx, const char *fmt, ...) __printf(2, 3);

/* Sizes fixed by the specification. */
#define ACPI_RSDP_V1_SIZE   20	 /* ACPI 1.0 RSDP: up to the RSDT address */
#define ACPI_RSDP_V2_SIZE   36	 /* ACPI 2.0+ RSDP: adds length and XSDT */
#define ACPI_HEADER_SIZE    36	 /* the header every other table starts with */
#define ACPI_RSDP_MAX_SIZE  4096 /* a larger RSDP length field is nonsense */
#define ACPI_SIGNATURE_RSDP "RSD PTR "

/* True when the len bytes at p add up to 0 (mod 256), as every table must. */
bool acpi_checksum_ok(const void *p, size_t len);

/* --- RSDP (5.2.5) --------------------------------------------------------- */

struct acpi_rsdp_info {
	uint8_t revision; /* 0: ACPI 1.0; 2 and up: ACPI 2.0+ */
	char oem_id[7];	  /* NUL-terminated, unprintable bytes as '?' */
	uint32_t length;  /* bytes covered by the checksums */
	uint64_t rsdt;	  /* physical address, 0 when absent */
	uint64_t xsdt;	  /* physical address, 0 when absent or unusable */
};

/*
 * Validates the RSDP at p, of which avail bytes may be read: signature and
 * the 20-byte checksum; for revision 2 and up also the length field
 * (ACPI_RSDP_V2_SIZE..avail) and the extended checksum. A 2.0+ RSDP whose
 * extended part is bad is reported and used as a 1.0 one (xsdt = 0).
 * Returns 0, or -EINVAL (reported) when the RSDP cannot be used at all.
 */
int acpi_rsdp_parse(const void *p, size_t avail, struct acpi_rsdp_info *out,
		    acpi_report report, void *ctx);

/*
 * Looks for a valid RSDP on 16-byte boundaries in the len bytes at base
 * (where the firmware leaves it under BIOS: 5.2.5.1). Returns the offset of
 * the first one, or -1. Stays silent: candidates with a bad checksum are
 * common in ROM areas and are just passed over.
 */
long acpi_rsdp_scan(const void *base, size_t len);

/* --- Table header (5.2.6) ------------------------------------------------- */

struct acpi_header {
	char signature[5]; /* NUL-terminated, unprintable bytes as '?' */
	uint32_t length;
	uint8_t revision;
	char oem_id[7];
	char oem_table_id[9];
};

/* Decodes the first ACPI_HEADER_SIZE bytes at p (the caller checked them). */
void acpi_header_read(const void *p, struct acpi_header *out);

/*
 * Checks a whole table of which avail bytes may be read: the length field
 * (ACPI_HEADER_SIZE..avail), the signature when signature is not NULL, and
 * the checksum over the length. Returns 0 or -EINVAL (reported).
 */
int acpi_table_check(const void *table, size_t avail, const char *signature,
		     acpi_report report, void *ctx);

/* --- RSDT and XSDT (5.2.7, 5.2.8) ----------------------------------------- */

/* The entries of a root table: physical addresses of the other tables. */
struct acpi_root {
	const uint8_t *entries;
	size_t count;
	size_t entry_size; /* 4 for the RSDT, 8 for the XSDT */
};

/*
 * Checks a root table (as acpi_table_check, signature "XSDT" or "RSDT") and
 * sets root up to walk its entries. Returns 0 or -EINVAL (reported).
 */
int acpi_root_init(struct acpi_root *root, const void *table, size_t avail,
		   bool xsdt, acpi_report report, void *ctx);

/* The physical address in entry i (i < root->count). */
uint64_t acpi_root_entry(const struct acpi_root *root, size_t i);

/* --- MADT (5.2.12) -------------------------------------------------------- */

#define MADT_MAX_IOAPICS     8
#define MADT_MAX_OVERRIDES   16
#define MADT_MAX_NMI_SOURCES 8
/* Local APIC NMI entries are kept only for the processors kept in cpus[]
 * (and for all processors): one each, plus a few that name every CPU. */
#define MADT_MAX_ALL_CPU_NMIS 8
#define MADT_MAX_LAPIC_NMIS   (MAX_CPUS + MADT_MAX_ALL_CPU_NMIS)

#define MADT_ALL_PROCESSORS 0xffffffffU /* lapic_nmi.uid: every CPU */

/*
 * One CPU. Enabled: usable now. Online-capable: not running, but the
 * firmware could start it later (hot-add; ACPI 6.3+). Neither: absent, an
 * empty socket (QEMU lists CPUs up to maxcpus this way). Absent CPUs are
 * kept so the list shows what the firmware described.
 */
struct madt_cpu {
	uint32_t apic_id;
	uint32_t uid; /* ACPI processor UID, ties the CPU to its NMI entries */
	bool enabled;
	bool online_capable;
	bool x2apic_entry; /* first seen in a local x2APIC entry (type 9) */
};

struct madt_ioapic {
	uint8_t id;
	uint32_t address; /* physical address of its registers */
	uint32_t gsi_base;
};

/* An ISA IRQ wired to another global system interrupt, or other polarity. */
struct madt_override {
	uint8_t bus; /* 0: ISA */
	uint8_t source;
	uint32_t gsi;
	uint16_t flags; /* MPS INTI flags: polarity, trigger mode */
};

/* Which local APIC LINT pin is wired to NMI, on which CPUs. */
struct madt_lapic_nmi {
	uint32_t uid; /* MADT_ALL_PROCESSORS for all */
	uint16_t flags;
	uint8_t lint; /* 0 or 1 */
};

/* A global system interrupt that delivers NMIs. */
struct madt_nmi_source {
	uint16_t flags;
	uint32_t gsi;
};

/* How many entries of one kind the MADT listed, and how many did not fit. */
struct madt_class_count {
	size_t listed;
	size_t over_limit; /* beyond the kernel's table for them */
};

struct madt_info {
	uint64_t lapic_address; /* after any 64-bit override (type 5) */
	bool lapic_address_overridden;
	bool pcat_compat; /* dual 8259 PICs present: mask them */

	struct madt_cpu cpus[MAX_CPUS]; /* in table order, unique APIC IDs */
	size_t cpu_count;
	size_t cpus_enabled;
	size_t cpus_dropped;   /* entries beyond MAX_CPUS */
	size_t cpus_duplicate; /* an APIC ID seen before */
	/* Placeholders: APIC ID 0xff (type 0) or 0xffffffff (type 9). Firmware
	 * lists them for sockets it could fill; they are normal, not errors. */
	size_t cpus_invalid_id;

	struct madt_ioapic ioapics[MADT_MAX_IOAPICS];
	size_t ioapic_count;
	struct madt_override overrides[MADT_MAX_OVERRIDES];
	size_t override_count;
	struct madt_lapic_nmi lapic_nmis[MADT_MAX_LAPIC_NMIS];
	size_t lapic_nmi_count;
	/* For a UID no kept CPU has (a placeholder's, or a dropped CPU's). */
	size_t lapic_nmis_unmatched;
	struct madt_nmi_source nmi_sources[MADT_MAX_NMI_SOURCES];
	size_t nmi_source_count;
	struct madt_class_count ioapics_seen, overrides_seen, lapic_nmis_seen,
		nmi_sources_seen;
	size_t entries_dropped; /* IOAPIC, override or NMI entries over a limit */

	size_t entries_unknown; /* types this parser does not use */
	bool incomplete;	/* a malformed entry ended the walk */
};

/*
 * Parses the MADT in the length bytes at table into out. Returns -EINVAL
 * (reported; out zeroed) when the table is unusable: short, wrong
 * signature, length field beyond length, bad checksum. Otherwise returns
 * 0: a malformed entry (length below 2 or below its type's size, or running
 * past the table) is reported and ends the walk, keeping what was read
 * (out->incomplete). Processor entries are read first, so that local APIC
 * NMI entries can be matched to the CPUs whatever their order. Duplicates,
 * placeholders and entries over a limit are counted, left out and summed
 * up in one message per kind after the walk: real tables have dozens.
 */
int madt_parse(const void *table, size_t length, struct madt_info *out,
	       acpi_report report, void *ctx);

/*
 * Calls visit for every IOAPIC entry of the MADT in the length bytes at
 * table, the ones beyond MADT_MAX_IOAPICS too (they must be masked all the
 * same). Silent: it stops where madt_parse stopped and reported why.
 * Returns the number of entries visited.
 */
size_t madt_for_each_ioapic(const void *table, size_t length,
			    void (*visit)(void *ctx,
					  const struct madt_ioapic *ioapic),
			    void *ctx);

/* --- DMAR (Intel VT-d specification, 8.1) --------------------------------- */

#define DMAR_MIN_SIZE 48 /* the header, width, flags and 10 reserved bytes */

struct dmar_info {
	uint8_t host_address_width; /* DMA address bits, minus one */
	bool intr_remap;	    /* INTR_REMAP: interrupt remapping exists */
	/* X2APIC_OPT_OUT: the firmware asks the OS not to enable x2APIC mode
	 * unless it uses interrupt remapping (this kernel never does). */
	bool x2apic_opt_out;
	bool dma_ctrl_opt_in; /* DMA_CTRL_PLATFORM_OPT_IN */
};

/*
 * Parses the DMAR table's header flags in the length bytes at table.
 * Returns 0, or -EINVAL (reported; out zeroed) when the table is unusable.
 */
int dmar_parse(const void *table, size_t length, struct dmar_info *out,
	       acpi_report report, void *ctx);

/* --- FADT (5.2.9) and HPET table (IA-PC HPET spec 1.0a, 3.2.4) ---------- */

struct fadt_info {
	bool pm_timer; /* an ACPI PM timer is described */
	uint16_t pm_timer_port;
	bool pm_timer_32bit;  /* TMR_VAL_EXT: 32-bit counter, else 24-bit */
	bool pm_timer_from_x; /* the port came from X_PM_TMR_BLK */
	bool hw_reduced;      /* HW_REDUCED_ACPI: no fixed hardware */
	uint64_t dsdt;	      /* physical address of the DSDT, 0 if none */
};

/*
 * Parses the FADT ("FACP") in the length bytes at table. Returns -EINVAL
 * (reported) when the table is unusable; otherwise 0, with pm_timer false
 * when the FADT names no usable timer port.
 */
int fadt_parse(const void *table, size_t length, struct fadt_info *out,
	       acpi_report report, void *ctx);

struct hpet_info {
	uint64_t base;	   /* physical address of the registers */
	uint32_t block_id; /* event timer block ID: vendor, comparators */
	uint8_t number;	   /* HPET sequence number */
	uint16_t min_tick; /* minimum periodic tick, in counter ticks */
};

/*
 * Parses the HPET table in the length bytes at table. The registers must be
 * in memory space; the counter period is not in the table (it is in the
 * HPET's capabilities register). Returns 0 or -EINVAL (reported).
 */
int hpet_parse(const void *table, size_t length, struct hpet_info *out,
	       acpi_report report, void *ctx);

#endif
