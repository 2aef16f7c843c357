// SPDX-License-Identifier: MIT
/*
 * ACPI table parsing on plain buffers (see acpi/tables.h).
 *
 * Multi-byte fields are read a byte at a time, little-endian: ACPI fields
 * are often misaligned (the XSDT's 64-bit entries start at offset 36), and
 * byte reads are correct on any host the unit tests run on.
 */
#include "acpi/tables.h"
#include "lib/errno.h"
#include "lib/string.h"

/* RSDP fields (ACPI 6.5, table 5.3). */
#define RSDP_OEM_ID	   9
#define RSDP_REVISION	   15
#define RSDP_RSDT	   16
#define RSDP_LENGTH	   20
#define RSDP_XSDT	   24
#define RSDP_SIGNATURE_LEN 8

/* Table header fields (table 5.4). */
#define HDR_SIGNATURE	 0
#define HDR_LENGTH	 4
#define HDR_REVISION	 8
#define HDR_OEM_ID	 10
#define HDR_OEM_TABLE_ID 16

/* MADT (table 5.19): two fields after the header, then the entries. */
#define MADT_LAPIC_ADDRESS 36
#define MADT_FLAGS	   40
#define MADT_ENTRIES	   44
#define MADT_PCAT_COMPAT   0x1
/* Processor flags: online-capable exists from MADT revision 5 (ACPI 6.3). */
#define MADT_CPU_ENABLED	0x1
#define MADT_CPU_ONLINE_CAPABLE 0x2
#define MADT_ONLINE_CAPABLE_REV 5
#define MADT_XAPIC_INVALID_ID	0xffU
#define MADT_X2APIC_INVALID_ID	0xffffffffU
#define MADT_LAPIC_NMI_ALL_UIDS 0xffU
#define MADT_REPORT_DUPLICATES	4 /* reported one by one, then summed up */

/* MADT entry types (table 5.21) and the size of each. */
enum {
	MADT_LOCAL_APIC = 0,
	MADT_IOAPIC = 1,
	MADT_OVERRIDE = 2,
	MADT_NMI_SOURCE = 3,
	MADT_LAPIC_NMI = 4,
	MADT_LAPIC_ADDRESS_OVERRIDE = 5,
	MADT_LOCAL_X2APIC = 9,
	MADT_X2APIC_NMI = 0xa,
};

static const uint8_t madt_entry_size[] = {
	[MADT_LOCAL_APIC] = 8,	  [MADT_IOAPIC] = 12,
	[MADT_OVERRIDE] = 10,	  [MADT_NMI_SOURCE] = 8,
	[MADT_LAPIC_NMI] = 6,	  [MADT_LAPIC_ADDRESS_OVERRIDE] = 12,
	[MADT_LOCAL_X2APIC] = 16, [MADT_X2APIC_NMI] = 12,
};

/* DMAR (VT-d specification, table 8-1 "DMA Remapping Reporting"). */
#define DMAR_HOST_ADDRESS_WIDTH 36
#define DMAR_FLAGS		37
#define DMAR_INTR_REMAP		0x1
#define DMAR_X2APIC_OPT_OUT	0x2
#define DMAR_DMA_CTRL_OPT_IN	0x4

/* FADT fields (table 5.9) and flags (table 5.10). */
#define FADT_DSDT	  40
#define FADT_PM_TMR_BLK	  76
#define FADT_PM_TMR_LEN	  91
#define FADT_FLAGS	  112
#define FADT_X_DSDT	  140
#define FADT_X_PM_TMR_BLK 208
#define FADT_TMR_VAL_EXT  (1U << 8)
#define FADT_HW_REDUCED	  (1U << 20)
#define PM_TMR_LEN_VALID  4 /* the spec's only allowed value */

/* Generic Address Structure (5.2.3.2): 12 bytes. */
#define GAS_SPACE_ID	 0
#define GAS_ADDRESS	 4
#define GAS_SIZE	 12
#define GAS_SPACE_MEMORY 0
#define GAS_SPACE_IO	 1

/* HPET description table (IA-PC HPET specification 1.0a, table 3). */
#define HPET_BLOCK_ID  36
#define HPET_BASE      40
#define HPET_NUMBER    52
#define HPET_MIN_TICK  53
#define HPET_TABLE_LEN 56

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* Copies an n-byte text field, NUL-terminated, so it prints safely. */
static void copy_text(char *dst, const uint8_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? (char)src[i] : '?';
	dst[n] = '\0';
}

bool acpi_checksum_ok(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint8_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum = (uint8_t)(sum + b[i]);
	return sum == 0;
}

/* --- RSDP ----------------------------------------------------------------- */

int acpi_rsdp_parse(const void *p, size_t avail, struct acpi_rsdp_info *out,
		    acpi_report report, void *ctx)
{
	const uint8_t *b = p;
	uint32_t length;

	memset(out, 0, sizeof(*out));
	if (avail < ACPI_RSDP_V1_SIZE) {
		report(ctx, "RSDP: only %zu bytes, need %d", avail,
		       ACPI_RSDP_V1_SIZE);
		return -EINVAL;
	}
	if (memcmp(b, ACPI_SIGNATURE_RSDP, RSDP_SIGNATURE_LEN)) {
		report(ctx, "RSDP: no \"RSD PTR \" signature");
		return -EINVAL;
	}
	if (!acpi_checksum_ok(b, ACPI_RSDP_V1_SIZE)) {
		report(ctx, "RSDP: bad checksum");
		return -EINVAL;
	}
	out->revision = b[RSDP_REVISION];
	copy_text(out->oem_id, b + RSDP_OEM_ID, 6);
	out->length = ACPI_RSDP_V1_SIZE;
	out->rsdt = get32(b + RSDP_RSDT);

	/* Revision 2 and up add the XSDT, under a second checksum. */
	if (out->revision >= 2) {
		if (avail < ACPI_RSDP_V2_SIZE) {
			report(ctx,
			       "RSDP: revision %u but only %zu bytes: "
			       "using the RSDT only",
			       out->revision, avail);
			goto v1;
		}
		length = get32(b + RSDP_LENGTH);
		if (length < ACPI_RSDP_V2_SIZE || length > avail ||
		    length > ACPI_RSDP_MAX_SIZE) {
			report(ctx,
			       "RSDP: length %u is not in %d..%zu: "
			       "using the RSDT only",
			       length, ACPI_RSDP_V2_SIZE,
			       MIN(avail, (size_t)ACPI_RSDP_MAX_SIZE));
			goto v1;
		}
		if (!acpi_checksum_ok(b, length)) {
			report(ctx, "RSDP: bad extended checksum: "
				    "using the RSDT only");
			goto v1;
		}
		out->length = length;
		out->xsdt = get64(b + RSDP_XSDT);
	}
v1:
	if (!out->rsdt && !out->xsdt) {
		report(ctx, "RSDP: names neither an RSDT nor an XSDT");
		return -EINVAL;
	}
	return 0;
}

long acpi_rsdp_scan(const void *base, size_t len)
{
	const uint8_t *b = base;

	for (size_t off = 0;
	     len >= ACPI_RSDP_V1_SIZE && off <= len - ACPI_RSDP_V1_SIZE;
	     off += 16) {
		if (!memcmp(b + off, ACPI_SIGNATURE_RSDP, RSDP_SIGNATURE_LEN) &&
		    acpi_checksum_ok(b + off, ACPI_RSDP_V1_SIZE))
			return (long)off;
	}
	return -1;
}

/* --- Headers and root tables ---------------------------------------------- */

void acpi_header_read(const void *p, struct acpi_header *out)
{
	const uint8_t *b = p;

	copy_text(out->signature, b + HDR_SIGNATURE, 4);
	out->length = get32(b + HDR_LENGTH);
	out->revision = b[HDR_REVISION];
	copy_text(out->oem_id, b + HDR_OEM_ID, 6);
	copy_text(out->oem_table_id, b + HDR_OEM_TABLE_ID, 8);
}

int acpi_table_check(const void *table, size_t avail, const char *signature,
		     acpi_report report, void *ctx)
{
	struct acpi_header h;

	if (avail < ACPI_HEADER_SIZE) {
		report(ctx, "table: only %zu bytes, shorter than its header",
		       avail);
		return -EINVAL;
	}
	acpi_header_read(table, &h);
	if (signature && memcmp(table, signature, 4)) {
		report(ctx, "table %s: expected signature %.4s", h.signature,
		       signature);
		return -EINVAL;
	}
	if (h.length < ACPI_HEADER_SIZE || h.length > avail) {
		report(ctx, "table %s: length %u is not in %d..%zu",
		       h.signature, h.length, ACPI_HEADER_SIZE, avail);
		return -EINVAL;
	}
	if (!acpi_checksum_ok(table, h.length)) {
		report(ctx, "table %s: bad checksum", h.signature);
		return -EINVAL;
	}
	return 0;
}

int acpi_root_init(struct acpi_root *root, const void *table, size_t avail,
		   bool xsdt, acpi_report report, void *ctx)
{
	size_t bytes;

	memset(root, 0, sizeof(*root));
	if (acpi_table_check(table, avail, xsdt ? "XSDT" : "RSDT", report, ctx))
		return -EINVAL;
	root->entry_size = xsdt ? 8 : 4;
	root->entries = (const uint8_t *)table + ACPI_HEADER_SIZE;
	bytes = get32((const uint8_t *)table + HDR_LENGTH) - ACPI_HEADER_SIZE;
	root->count = bytes / root->entry_size;
	if (bytes % root->entry_size)
		report(ctx, "%s: %zu stray bytes after the last entry ignored",
		       xsdt ? "XSDT" : "RSDT", bytes % root->entry_size);
	return 0;
}

uint64_t acpi_root_entry(const struct acpi_root *root, size_t i)
{
	const uint8_t *e = root->entries + i * root->entry_size;

	return root->entry_size == 8 ? get64(e) : get32(e);
}

/* --- MADT ----------------------------------------------------------------- */

static struct madt_cpu *madt_find_cpu(struct madt_info *out, uint32_t apic_id)
{
	for (size_t i = 0; i < out->cpu_count; i++) {
		if (out->cpus[i].apic_id == apic_id)
			return &out->cpus[i];
	}
	return NULL;
}

static bool madt_has_uid(const struct madt_info *out, uint32_t uid)
{
	for (size_t i = 0; i < out->cpu_count; i++) {
		if (out->cpus[i].uid == uid)
			return true;
	}
	return false;
}

/*
 * Records one processor entry. A CPU may be listed twice (a local APIC and
 * a local x2APIC entry for the same ID): it is kept once, enabled if either
 * entry says so.
 */
static void madt_add_cpu(struct madt_info *out, const struct madt_cpu *cpu,
			 size_t offset, acpi_report report, void *ctx)
{
	struct madt_cpu *seen = madt_find_cpu(out, cpu->apic_id);

	if (seen) {
		if (++out->cpus_duplicate <= MADT_REPORT_DUPLICATES)
			report(ctx,
			       "MADT: APIC ID %u listed again at offset %zu "
			       "(counted once)",
			       cpu->apic_id, offset);
		if (cpu->enabled && !seen->enabled) {
			seen->enabled = true;
			seen->online_capable = false;
		} else if (!seen->enabled) {
			seen->online_capable |= cpu->online_capable;
		}
		return;
	}
	if (out->cpu_count == MAX_CPUS) {
		out->cpus_dropped++; /* reported once, after the walk */
		return;
	}
	out->cpus[out->cpu_count++] = *cpu;
}

static void madt_processor(struct madt_info *out, const uint8_t *e,
			   size_t offset, uint8_t madt_revision,
			   acpi_report report, void *ctx)
{
	/* LAB(L0) begin: read a local APIC or local x2APIC entry
	 * keeps: madt_add_cpu */
	struct madt_cpu cpu = {0};
	uint32_t flags;

	/* An invalid ID marks a placeholder: counted, summed up later. */
	if (e[0] == MADT_LOCAL_APIC) {
		cpu.uid = e[2];
		cpu.apic_id = e[3];
		flags = get32(e + 4);
		if (cpu.apic_id == MADT_XAPIC_INVALID_ID) {
			out->cpus_invalid_id++;
			return;
		}
	} else {
		cpu.apic_id = get32(e + 4);
		flags = get32(e + 8);
		cpu.uid = get32(e + 12);
		cpu.x2apic_entry = true;
		if (cpu.apic_id == MADT_X2APIC_INVALID_ID) {
			out->cpus_invalid_id++;
			return;
		}
	}
	cpu.enabled = flags & MADT_CPU_ENABLED;
	/* Before revision 5 the bit is reserved; with enabled it is moot. */
	cpu.online_capable = !cpu.enabled &&
			     madt_revision >= MADT_ONLINE_CAPABLE_REV &&
			     (flags & MADT_CPU_ONLINE_CAPABLE);
	madt_add_cpu(out, &cpu, offset, report, ctx);
	/* LAB(L0) end */
}

/* Counts one entry of a kind; true when there is room to keep it. */
static bool madt_room(struct madt_info *out, struct madt_class_count *seen,
		      size_t kept, size_t max)
{
	seen->listed++;
	if (kept < max)
		return true;
	seen->over_limit++;
	out->entries_dropped++;
	return false;
}

static struct madt_ioapic madt_read_ioapic(const uint8_t *e)
{
	return (struct madt_ioapic){
		.id = e[2],
		.address = get32(e + 4),
		.gsi_base = get32(e + 8),
	};
}

/*
 * A local APIC NMI entry matters for the CPUs it names: every CPU, or one
 * the kernel kept. Entries for other UIDs (a placeholder's) are counted.
 */
static void madt_read_lapic_nmi(struct madt_info *out, const uint8_t *e)
{
	struct madt_lapic_nmi nmi;

	if (e[0] == MADT_LAPIC_NMI) {
		nmi.uid = e[2] == MADT_LAPIC_NMI_ALL_UIDS ? MADT_ALL_PROCESSORS
							  : e[2];
		nmi.flags = get16(e + 3);
		nmi.lint = e[5];
	} else {
		nmi.flags = get16(e + 2);
		nmi.uid = get32(e + 4);
		nmi.lint = e[8];
	}
	if (nmi.uid != MADT_ALL_PROCESSORS && !madt_has_uid(out, nmi.uid)) {
		out->lapic_nmis_seen.listed++;
		out->lapic_nmis_unmatched++;
		return;
	}
	if (madt_room(out, &out->lapic_nmis_seen, out->lapic_nmi_count,
		      MADT_MAX_LAPIC_NMIS))
		out->lapic_nmis[out->lapic_nmi_count++] = nmi;
}

/* Every entry but the processors' (read before, in their own pass). */
static void madt_other_entry(struct madt_info *out, const uint8_t *e)
{
	switch (e[0]) {
	case MADT_IOAPIC:
		if (madt_room(out, &out->ioapics_seen, out->ioapic_count,
			      MADT_MAX_IOAPICS))
			out->ioapics[out->ioapic_count++] = madt_read_ioapic(e);
		break;
	case MADT_OVERRIDE:
		if (madt_room(out, &out->overrides_seen, out->override_count,
			      MADT_MAX_OVERRIDES))
			out->overrides[out->override_count++] =
				(struct madt_override){
					.bus = e[2],
					.source = e[3],
					.gsi = get32(e + 4),
					.flags = get16(e + 8),
				};
		break;
	case MADT_NMI_SOURCE:
		if (madt_room(out, &out->nmi_sources_seen,
			      out->nmi_source_count, MADT_MAX_NMI_SOURCES))
			out->nmi_sources[out->nmi_source_count++] =
				(struct madt_nmi_source){
					.flags = get16(e + 2),
					.gsi = get32(e + 4),
				};
		break;
	case MADT_LAPIC_NMI:
	case MADT_X2APIC_NMI:
		madt_read_lapic_nmi(out, e);
		break;
	case MADT_LAPIC_ADDRESS_OVERRIDE:
		out->lapic_address = get64(e + 4);
		out->lapic_address_overridden = true;
		break;
	default:
		out->entries_unknown++;
		break;
	}
}

/* Checks the entry at offset; reports why it cannot be read. */
static bool madt_entry_ok(const uint8_t *t, size_t offset, size_t end,
			  acpi_report report, void *ctx)
{
	size_t left = end - offset;
	uint8_t type, len;

	if (left < 2) {
		report(ctx, "MADT: %zu stray byte at offset %zu", left, offset);
		return false;
	}
	type = t[offset];
	len = t[offset + 1];
	if (len < 2) {
		report(ctx, "MADT: entry at offset %zu (type %u) has length %u",
		       offset, type, len);
		return false;
	}
	if (len > left) {
		report(ctx,
		       "MADT: entry at offset %zu (type %u, length %u) runs "
		       "past the table's end (%zu)",
		       offset, type, len, end);
		return false;
	}
	if (type < ARRAY_SIZE(madt_entry_size) && len < madt_entry_size[type]) {
		report(ctx,
		       "MADT: entry at offset %zu (type %u) has length %u, "
		       "needs %u",
		       offset, type, len, madt_entry_size[type]);
		return false;
	}
	return true;
}

static void madt_quiet(void *ctx, const char *fmt, ...)
{
	(void)ctx;
	(void)fmt;
}

/*
 * The offset where the entries stop being readable: the table's end, or
 * the first malformed entry (reported). Both passes stop there.
 */
static size_t madt_readable_end(const uint8_t *t, size_t end,
				acpi_report report, void *ctx)
{
	size_t offset;

	for (offset = MADT_ENTRIES; offset < end; offset += t[offset + 1]) {
		if (!madt_entry_ok(t, offset, end, report, ctx))
			break;
	}
	return offset;
}

static bool madt_is_processor(uint8_t type)
{
	return type == MADT_LOCAL_APIC || type == MADT_LOCAL_X2APIC;
}

/* One line per kind of entry that went over the kernel's limit. */
static void madt_report_class(const struct madt_class_count *seen, size_t kept,
			      const char *what, acpi_report report, void *ctx)
{
	if (seen->over_limit)
		report(ctx, "MADT: %zu %s, kept %zu (the kernel's limit)",
		       seen->listed, what, kept);
}

static void madt_summarise(const struct madt_info *out, acpi_report report,
			   void *ctx)
{
	if (out->cpus_invalid_id)
		report(ctx,
		       "MADT: %zu placeholder processor entries (APIC ID 0xff "
		       "or 0xffffffff) skipped",
		       out->cpus_invalid_id);
	if (out->cpus_duplicate > MADT_REPORT_DUPLICATES)
		report(ctx, "MADT: %zu entries repeated an APIC ID in all",
		       out->cpus_duplicate);
	if (out->cpus_dropped)
		report(ctx,
		       "MADT: %zu more CPUs than the kernel supports "
		       "(MAX_CPUS %d): ignored",
		       out->cpus_dropped, MAX_CPUS);
	madt_report_class(&out->ioapics_seen, out->ioapic_count, "IOAPICs",
			  report, ctx);
	madt_report_class(&out->overrides_seen, out->override_count,
			  "interrupt source overrides", report, ctx);
	madt_report_class(&out->nmi_sources_seen, out->nmi_source_count,
			  "NMI sources", report, ctx);
	if (out->lapic_nmis_seen.over_limit || out->lapic_nmis_unmatched)
		report(ctx,
		       "MADT: %zu local-APIC NMI entries, kept %zu: %zu name "
		       "no CPU kept, %zu over the limit of %d",
		       out->lapic_nmis_seen.listed, out->lapic_nmi_count,
		       out->lapic_nmis_unmatched,
		       out->lapic_nmis_seen.over_limit, MADT_MAX_LAPIC_NMIS);
}

int madt_parse(const void *table, size_t length, struct madt_info *out,
	       acpi_report report, void *ctx)
{
	const uint8_t *t = table;
	size_t end, readable, offset;

	memset(out, 0, sizeof(*out));
	if (acpi_table_check(table, length, "APIC", report, ctx))
		return -EINVAL;
	end = get32(t + HDR_LENGTH);
	if (end < MADT_ENTRIES) {
		report(ctx, "MADT: length %zu, shorter than its fixed fields",
		       end);
		return -EINVAL;
	}
	out->lapic_address = get32(t + MADT_LAPIC_ADDRESS);
	out->pcat_compat = get32(t + MADT_FLAGS) & MADT_PCAT_COMPAT;

	readable = madt_readable_end(t, end, report, ctx);
	if (readable < end) {
		report(ctx,
		       "MADT: stopped reading at offset %zu; keeping the "
		       "entries before it",
		       readable);
		out->incomplete = true;
	}
	for (offset = MADT_ENTRIES; offset < readable;
	     offset += t[offset + 1]) {
		if (madt_is_processor(t[offset]))
			madt_processor(out, t + offset, offset, t[HDR_REVISION],
				       report, ctx);
	}
	for (offset = MADT_ENTRIES; offset < readable;
	     offset += t[offset + 1]) {
		if (!madt_is_processor(t[offset]))
			madt_other_entry(out, t + offset);
	}

	madt_summarise(out, report, ctx);
	for (size_t i = 0; i < out->cpu_count; i++)
		out->cpus_enabled += out->cpus[i].enabled;
	return 0;
}

size_t madt_for_each_ioapic(const void *table, size_t length,
			    void (*visit)(void *ctx,
					  const struct madt_ioapic *ioapic),
			    void *ctx)
{
	const uint8_t *t = table;
	size_t end, offset, visited = 0;

	if (acpi_table_check(table, length, "APIC", madt_quiet, NULL))
		return 0;
	end = get32(t + HDR_LENGTH);
	if (end < MADT_ENTRIES)
		return 0;
	end = madt_readable_end(t, end, madt_quiet, NULL);
	for (offset = MADT_ENTRIES; offset < end; offset += t[offset + 1]) {
		struct madt_ioapic ioapic;

		if (t[offset] != MADT_IOAPIC)
			continue;
		ioapic = madt_read_ioapic(t + offset);
		visit(ctx, &ioapic);
		visited++;
	}
	return visited;
}

/* --- DMAR ----------------------------------------------------------------- */

int dmar_parse(const void *table, size_t length, struct dmar_info *out,
	       acpi_report report, void *ctx)
{
	const uint8_t *t = table;
	uint32_t len;

	memset(out, 0, sizeof(*out));
	if (acpi_table_check(table, length, "DMAR", report, ctx))
		return -EINVAL;
	len = get32(t + HDR_LENGTH);
	if (len < DMAR_MIN_SIZE) {
		report(ctx,
		       "DMAR: length %u, needs %d for its flags: flags "
		       "ignored",
		       len, DMAR_MIN_SIZE);
		return -EINVAL;
	}
	out->host_address_width = t[DMAR_HOST_ADDRESS_WIDTH];
	out->intr_remap = t[DMAR_FLAGS] & DMAR_INTR_REMAP;
	out->x2apic_opt_out = t[DMAR_FLAGS] & DMAR_X2APIC_OPT_OUT;
	out->dma_ctrl_opt_in = t[DMAR_FLAGS] & DMAR_DMA_CTRL_OPT_IN;
	return 0;
}

/* --- FADT and HPET -------------------------------------------------------- */

int fadt_parse(const void *table, size_t length, struct fadt_info *out,
	       acpi_report report, void *ctx)
{
	const uint8_t *t = table;
	uint32_t len, flags = 0, port;

	memset(out, 0, sizeof(*out));
	if (acpi_table_check(table, length, "FACP", report, ctx))
		return -EINVAL;
	/* ACPI 1.0 FADTs end after the flags; later ones grew. */
	len = get32(t + HDR_LENGTH);
	if (len >= FADT_FLAGS + 4)
		flags = get32(t + FADT_FLAGS);
	out->hw_reduced = flags & FADT_HW_REDUCED;
	out->pm_timer_32bit = flags & FADT_TMR_VAL_EXT;

	if (len >= FADT_X_DSDT + 8)
		out->dsdt = get64(t + FADT_X_DSDT);
	if (!out->dsdt && len >= FADT_DSDT + 4)
		out->dsdt = get32(t + FADT_DSDT);

	/* Hardware-reduced ACPI has no fixed hardware, so no PM timer. */
	if (out->hw_reduced)
		return 0;

	/* The 64-bit field wins when filled in, if it is a port. */
	if (len >= FADT_X_PM_TMR_BLK + GAS_SIZE) {
		const uint8_t *gas = t + FADT_X_PM_TMR_BLK;
		uint64_t address = get64(gas + GAS_ADDRESS);

		if (address && gas[GAS_SPACE_ID] == GAS_SPACE_IO &&
		    address <= UINT16_MAX) {
			out->pm_timer = true;
			out->pm_timer_port = (uint16_t)address;
			out->pm_timer_from_x = true;
			return 0;
		}
		if (address)
			report(ctx,
			       "FADT: X_PM_TMR_BLK %#llx in address space %u "
			       "is not a usable I/O port: trying PM_TMR_BLK",
			       (unsigned long long)address, gas[GAS_SPACE_ID]);
	}
	if (len < FADT_PM_TMR_BLK + 4)
		return 0;
	port = get32(t + FADT_PM_TMR_BLK);
	if (!port)
		return 0;
	if (port > UINT16_MAX) {
		report(ctx, "FADT: PM_TMR_BLK %#x is not an I/O port", port);
		return 0;
	}
	if (len > FADT_PM_TMR_LEN && t[FADT_PM_TMR_LEN] != PM_TMR_LEN_VALID) {
		report(ctx, "FADT: PM_TMR_LEN is %u, must be %d: no PM timer",
		       t[FADT_PM_TMR_LEN], PM_TMR_LEN_VALID);
		return 0;
	}
	out->pm_timer = true;
	out->pm_timer_port = (uint16_t)port;
	return 0;
}

int hpet_parse(const void *table, size_t length, struct hpet_info *out,
	       acpi_report report, void *ctx)
{
	const uint8_t *t = table;

	memset(out, 0, sizeof(*out));
	if (acpi_table_check(table, length, "HPET", report, ctx))
		return -EINVAL;
	if (get32(t + HDR_LENGTH) < HPET_TABLE_LEN) {
		report(ctx, "HPET: length %u, needs %d", get32(t + HDR_LENGTH),
		       HPET_TABLE_LEN);
		return -EINVAL;
	}
	if (t[HPET_BASE + GAS_SPACE_ID] != GAS_SPACE_MEMORY) {
		report(ctx, "HPET: registers in address space %u, not memory",
		       t[HPET_BASE + GAS_SPACE_ID]);
		return -EINVAL;
	}
	out->base = get64(t + HPET_BASE + GAS_ADDRESS);
	if (!out->base) {
		report(ctx, "HPET: base address 0");
		return -EINVAL;
	}
	out->block_id = get32(t + HPET_BLOCK_ID);
	out->number = t[HPET_NUMBER];
	out->min_tick = get16(t + HPET_MIN_TICK);
	return 0;
}
