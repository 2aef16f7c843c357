// SPDX-License-Identifier: MIT
/*
 * ACPI discovery on the running kernel (see acpi/acpi.h):
 *
 *   RSDP (multiboot2 copy, else a scan of the BIOS areas)
 *     -> XSDT (or RSDT) -> every table it lists, each mapped and checked
 *     -> MADT, FADT (and the DSDT it names), HPET parsed once.
 *
 * Tables can lie in memory the direct map does not cover (reserved
 * regions), so each one is mapped with ioremap: its header first, to learn
 * its length, then the whole table. A table that fails a check is reported
 * and never used.
 */
#include "acpi/acpi.h"
#include "cpu/cpu.h"
#include "lib/errno.h"
#include "lib/format.h"
#include "console/kprintf.h"
#include "lib/string.h"
#include "mm/kmap.h"
#include "arch/layout.h"
#include "mm/pagetable.h"

/* Where the BIOS leaves the RSDP (ACPI 6.5, 5.2.5.1). */
#define BDA_EBDA_SEGMENT 0x40e	 /* real-mode segment of the EBDA */
#define EBDA_SCAN_LEN	 0x400	 /* its first KiB */
#define EBDA_LOWEST	 0x500	 /* above the BIOS data area */
#define EBDA_HIGHEST	 0xa0000 /* below the VGA window */
#define BIOS_AREA_START	 0xe0000
#define BIOS_AREA_END	 0x100000

static struct acpi_rsdp_found rsdp_found;
static bool have_rsdp;
static struct acpi_table tables[ACPI_MAX_TABLES];
static size_t table_count;
static struct madt_info madt;
static bool have_madt;
static struct fadt_info fadt;
static bool have_fadt;
static struct hpet_info hpet;
static bool have_hpet;
static struct dmar_info dmar;
static bool have_dmar;
static bool initialised;
static int init_result;

/*
 * The acpi_report callback: ctx, when set, is the physical address of the
 * table being checked. One kprintf per message keeps it on one line.
 */
static void report(void *ctx, const char *fmt, ...)
{
	char message[200];
	va_list ap;

	va_start(ap, fmt);
	kvsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	if (ctx)
		kprintf("acpi: [%#llx] %s\n",
			(unsigned long long)*(const uint64_t *)ctx, message);
	else
		kprintf("acpi: %s\n", message);
}

/* --- Finding the RSDP ----------------------------------------------------- */

static bool low_memory_mapped(uint64_t phys, uint64_t len)
{
	for (uint64_t pa = ALIGN_DOWN(phys, PAGE_SIZE); pa < phys + len;
	     pa += PAGE_SIZE) {
		if (pt_translate(kernel_root, (uint64_t)phys_to_virt(pa), NULL,
				 NULL))
			return false;
	}
	return true;
}

/* Looks for the RSDP in len bytes of low memory at phys. */
static bool scan_area(uint64_t phys, uint64_t len, const char *name,
		      struct acpi_rsdp_found *out)
{
	const uint8_t *area;
	long off;

	if (!low_memory_mapped(phys, len)) {
		kprintf("acpi: %s at %#llx is not mapped: not searched\n", name,
			(unsigned long long)phys);
		return false;
	}
	area = phys_to_virt(phys);
	off = acpi_rsdp_scan(area, len);
	if (off < 0)
		return false;
	if (acpi_rsdp_parse(area + off, len - (uint64_t)off, &out->info, report,
			    NULL))
		return false;
	out->phys = phys + (uint64_t)off;
	out->source = name;
	out->size = MIN((size_t)(len - (uint64_t)off), ACPI_RSDP_COPY);
	memcpy(out->bytes, area + off, out->size);
	return true;
}

bool acpi_search_bios_areas(struct acpi_rsdp_found *out)
{
	uint64_t ebda;

	memset(out, 0, sizeof(*out));
	if (!low_memory_mapped(BDA_EBDA_SEGMENT, 2)) {
		kprintf("acpi: the BIOS data area is not mapped\n");
		return false;
	}
	ebda = (uint64_t) *
		       (const volatile uint16_t *)phys_to_virt(BDA_EBDA_SEGMENT)
	       << 4;
	/* Under UEFI there is no EBDA and the word is whatever was there. */
	if (ebda >= EBDA_LOWEST && ebda + EBDA_SCAN_LEN <= EBDA_HIGHEST &&
	    scan_area(ebda, EBDA_SCAN_LEN, "EBDA", out))
		return true;
	return scan_area(BIOS_AREA_START, BIOS_AREA_END - BIOS_AREA_START,
			 "BIOS area 0xe0000-0xfffff", out);
}

static bool find_rsdp(const struct boot_info *boot)
{
	if (boot->rsdp) {
		if (!acpi_rsdp_parse(boot->rsdp, boot->rsdp_size,
				     &rsdp_found.info, report, NULL)) {
			rsdp_found.phys = virt_to_phys(boot->rsdp);
			rsdp_found.source = boot->rsdp_is_v2
						    ? "multiboot2 ACPI 2.0 tag"
						    : "multiboot2 ACPI 1.0 tag";
			rsdp_found.size = MIN(boot->rsdp_size, ACPI_RSDP_COPY);
			memcpy(rsdp_found.bytes, boot->rsdp, rsdp_found.size);
			return true;
		}
		kprintf("acpi: the loader's RSDP copy is unusable; "
			"searching the BIOS areas\n");
	}
	return acpi_search_bios_areas(&rsdp_found);
}

/* --- Mapping and checking tables ------------------------------------------ */

static bool phys_range_ok(uint64_t phys, uint64_t len)
{
	uint64_t limit = 1ULL << boot_cpu.phys_addr_bits;

	return phys && phys < limit && len <= limit - phys;
}

/*
 * Maps the table at phys and checks it (signature when sig is not NULL,
 * length, checksum). Returns its mapping, or NULL after a message.
 */
static const void *map_table(uint64_t phys, const char *sig,
			     struct acpi_header *h)
{
	const void *virt;

	if (!phys_range_ok(phys, ACPI_HEADER_SIZE)) {
		kprintf("acpi: table address %#llx is outside physical memory: "
			"skipped\n",
			(unsigned long long)phys);
		return NULL;
	}
	virt = ioremap(phys, ACPI_HEADER_SIZE, PTE_CACHE_WB);
	acpi_header_read(virt, h);
	if (h->length < ACPI_HEADER_SIZE || h->length > ACPI_MAX_TABLE_LEN ||
	    !phys_range_ok(phys, h->length)) {
		kprintf("acpi: table %s at %#llx has length %u (allowed %d.."
			"%llu): skipped\n",
			h->signature, (unsigned long long)phys, h->length,
			ACPI_HEADER_SIZE,
			(unsigned long long)ACPI_MAX_TABLE_LEN);
		return NULL;
	}
	virt = ioremap(phys, h->length, PTE_CACHE_WB);
	if (acpi_table_check(virt, h->length, sig, report, &phys)) {
		kprintf("acpi: table %s at %#llx (%u bytes) skipped\n",
			h->signature, (unsigned long long)phys, h->length);
		return NULL;
	}
	return virt;
}

static void add_table(uint64_t phys, const void *virt,
		      const struct acpi_header *h)
{
	struct acpi_table *t;

	/* Listed twice (or the DSDT also in the root table): keep one. */
	for (size_t i = 0; i < table_count; i++) {
		if (tables[i].phys == phys)
			return;
	}
	if (table_count == ACPI_MAX_TABLES) {
		kprintf("acpi: more than %d tables: %s at %#llx ignored\n",
			ACPI_MAX_TABLES, h->signature,
			(unsigned long long)phys);
		return;
	}
	t = &tables[table_count++];
	memcpy(t->signature, h->signature, sizeof(t->signature));
	memcpy(t->oem_id, h->oem_id, sizeof(t->oem_id));
	t->revision = h->revision;
	t->length = h->length;
	t->phys = phys;
	t->virt = virt;
}

/* Maps and checks the XSDT (or RSDT); adds it to the list. */
static bool load_root(struct acpi_root *root, bool xsdt)
{
	uint64_t phys = xsdt ? rsdp_found.info.xsdt : rsdp_found.info.rsdt;
	struct acpi_header h;
	const void *virt = map_table(phys, xsdt ? "XSDT" : "RSDT", &h);

	if (!virt || acpi_root_init(root, virt, h.length, xsdt, report, &phys))
		return false;
	add_table(phys, virt, &h);
	return true;
}

static void load_tables(const struct acpi_root *root)
{
	size_t count = root->count;

	/* Real root tables list a few dozen; more is garbage, not tables. */
	if (count > ACPI_MAX_ROOT_ENTRIES) {
		kprintf("acpi: the root table lists %zu tables: reading the "
			"first %d\n",
			count, ACPI_MAX_ROOT_ENTRIES);
		count = ACPI_MAX_ROOT_ENTRIES;
	}
	for (size_t i = 0; i < count; i++) {
		uint64_t phys = acpi_root_entry(root, i);
		struct acpi_header h;
		const void *virt;

		if (!phys) {
			kprintf("acpi: root table entry %zu is 0: skipped\n",
				i);
			continue;
		}
		virt = map_table(phys, NULL, &h);
		if (virt)
			add_table(phys, virt, &h);
	}
}

/* The DSDT is not in the root table: the FADT points to it. */
static void load_dsdt(void)
{
	struct acpi_header h;
	const void *virt;

	if (!have_fadt || !fadt.dsdt)
		return;
	virt = map_table(fadt.dsdt, "DSDT", &h);
	if (virt)
		add_table(fadt.dsdt, virt, &h);
}

static void parse_tables(void)
{
	const void *t;
	size_t len;

	t = acpi_find_table("APIC", &len);
	have_madt = t && !madt_parse(t, len, &madt, report, NULL);
	t = acpi_find_table("FACP", &len);
	have_fadt = t && !fadt_parse(t, len, &fadt, report, NULL);
	t = acpi_find_table("HPET", &len);
	have_hpet = t && !hpet_parse(t, len, &hpet, report, NULL);
	t = acpi_find_table("DMAR", &len);
	have_dmar = t && !dmar_parse(t, len, &dmar, report, NULL);
}

int acpi_init(const struct boot_info *boot)
{
	struct acpi_root root;

	if (initialised)
		return init_result;
	initialised = true;

	have_rsdp = find_rsdp(boot);
	if (!have_rsdp) {
		kprintf("acpi: no RSDP found: no ACPI tables, so only the boot "
			"CPU will be used\n");
		return init_result = -ENOENT;
	}
	rsdp_found.using_xsdt = rsdp_found.info.xsdt && load_root(&root, true);
	if (!rsdp_found.using_xsdt) {
		if (rsdp_found.info.xsdt)
			kprintf("acpi: the XSDT is unusable: trying the "
				"RSDT\n");
		if (!rsdp_found.info.rsdt || !load_root(&root, false)) {
			kprintf("acpi: no usable RSDT or XSDT: no ACPI tables, "
				"so only the boot CPU will be used\n");
			return init_result = -ENOENT;
		}
	}
	load_tables(&root);
	parse_tables();
	load_dsdt();

	if (!have_madt) {
		kprintf("acpi: no usable MADT: the CPUs are unknown, so only "
			"the boot CPU will be used\n");
		return init_result = -ENOENT;
	}
	return init_result = 0;
}

/* --- Queries -------------------------------------------------------------- */

const void *acpi_find_table(const char *signature, size_t *length)
{
	for (size_t i = 0; i < table_count; i++) {
		if (!memcmp(tables[i].signature, signature, 4)) {
			if (length)
				*length = tables[i].length;
			return tables[i].virt;
		}
	}
	return NULL;
}

size_t acpi_table_count(void)
{
	return table_count;
}

const struct acpi_table *acpi_table_get(size_t i)
{
	return i < table_count ? &tables[i] : NULL;
}

const struct acpi_rsdp_found *acpi_rsdp(void)
{
	return have_rsdp ? &rsdp_found : NULL;
}

const struct madt_info *acpi_madt(void)
{
	return have_madt ? &madt : NULL;
}

bool acpi_pm_timer(uint16_t *port, bool *is_32bit)
{
	if (!have_fadt || !fadt.pm_timer)
		return false;
	*port = fadt.pm_timer_port;
	*is_32bit = fadt.pm_timer_32bit;
	return true;
}

const struct dmar_info *acpi_dmar(void)
{
	return have_dmar ? &dmar : NULL;
}

bool acpi_hpet_base(uint64_t *phys)
{
	if (!have_hpet)
		return false;
	*phys = hpet.base;
	return true;
}

/* --- The report ----------------------------------------------------------- */

static const char *cpu_state(const struct madt_cpu *c)
{
	if (c->enabled)
		return "enabled";
	return c->online_capable ? "online-capable" : "absent";
}

static void print_cpus(void)
{
	size_t absent = 0;

	for (size_t i = 0; i < madt.cpu_count; i++) {
		const struct madt_cpu *c = &madt.cpus[i];

		/* Firmware lists empty sockets by the dozen: counted. */
		if (!c->enabled && !c->online_capable) {
			absent++;
			continue;
		}
		kprintf("acpi:   cpu apic_id=%u uid=%u %s (%s entry)\n",
			c->apic_id, c->uid, cpu_state(c),
			c->x2apic_entry ? "x2APIC" : "local APIC");
	}
	if (absent)
		kprintf("acpi:   %zu more CPUs listed absent (neither enabled "
			"nor online-capable)\n",
			absent);
	if (madt.cpus_dropped || madt.cpus_duplicate || madt.cpus_invalid_id)
		kprintf("acpi:   CPU entries left out: %zu beyond MAX_CPUS, "
			"%zu duplicates, %zu placeholders (invalid IDs)\n",
			madt.cpus_dropped, madt.cpus_duplicate,
			madt.cpus_invalid_id);
}

static bool same_pin(const struct madt_lapic_nmi *a,
		     const struct madt_lapic_nmi *b)
{
	return a->lint == b->lint && a->flags == b->flags;
}

/*
 * Entries for all CPUs one per line; per-CPU entries (one per CPU on most
 * machines) one line per pin and flags, with how many CPUs use it.
 */
static void print_lapic_nmis(void)
{
	for (size_t i = 0; i < madt.lapic_nmi_count; i++) {
		const struct madt_lapic_nmi *n = &madt.lapic_nmis[i];
		size_t same = 0;
		bool first = true;

		if (n->uid == MADT_ALL_PROCESSORS) {
			kprintf("acpi:   lapic nmi uid=all lint=%u flags=%#x\n",
				n->lint, n->flags);
			continue;
		}
		for (size_t j = 0; j < madt.lapic_nmi_count; j++) {
			const struct madt_lapic_nmi *o = &madt.lapic_nmis[j];

			if (o->uid == MADT_ALL_PROCESSORS || !same_pin(n, o))
				continue;
			first &= j >= i;
			same++;
		}
		if (first)
			kprintf("acpi:   lapic nmi lint=%u flags=%#x for %zu "
				"CPUs (first uid=%u)\n",
				n->lint, n->flags, same, n->uid);
	}
}

static void print_madt(void)
{
	kprintf("acpi: MADT: local APIC at %#llx%s, %s; CPUs: %zu listed, %zu "
		"enabled\n",
		(unsigned long long)madt.lapic_address,
		madt.lapic_address_overridden ? " (64-bit override)" : "",
		madt.pcat_compat ? "8259 PICs present" : "no 8259 PICs",
		madt.cpu_count, madt.cpus_enabled);
	print_cpus();
	for (size_t i = 0; i < madt.ioapic_count; i++)
		kprintf("acpi:   ioapic id=%u at %#x gsi_base=%u\n",
			madt.ioapics[i].id, madt.ioapics[i].address,
			madt.ioapics[i].gsi_base);
	for (size_t i = 0; i < madt.override_count; i++)
		kprintf("acpi:   override bus=%u irq=%u -> gsi %u flags=%#x\n",
			madt.overrides[i].bus, madt.overrides[i].source,
			madt.overrides[i].gsi, madt.overrides[i].flags);
	print_lapic_nmis();
	for (size_t i = 0; i < madt.nmi_source_count; i++)
		kprintf("acpi:   nmi source gsi=%u flags=%#x\n",
			madt.nmi_sources[i].gsi, madt.nmi_sources[i].flags);
	if (madt.entries_dropped || madt.entries_unknown || madt.incomplete)
		kprintf("acpi:   %zu entries over a limit, %zu of other "
			"types%s\n",
			madt.entries_dropped, madt.entries_unknown,
			madt.incomplete ? "; walk ended at a bad entry" : "");
}

void acpi_print_tables(void)
{
	if (!have_rsdp) {
		kprintf("acpi: no tables\n");
		return;
	}
	kprintf("acpi: RSDP at %#llx (%s), revision %u, OEM \"%s\", using "
		"the %s\n",
		(unsigned long long)rsdp_found.phys, rsdp_found.source,
		rsdp_found.info.revision, rsdp_found.info.oem_id,
		table_count ? (rsdp_found.using_xsdt ? "XSDT" : "RSDT")
			    : "(none)");
	for (size_t i = 0; i < table_count; i++) {
		const struct acpi_table *t = &tables[i];

		kprintf("acpi: %s at 0x%012llx length %6u OEM \"%s\" "
			"revision %u\n",
			t->signature, (unsigned long long)t->phys, t->length,
			t->oem_id, t->revision);
	}
	if (have_madt)
		print_madt();
	if (have_fadt && fadt.pm_timer)
		kprintf("acpi: PM timer at port %#x, %s (from %s)\n",
			fadt.pm_timer_port,
			fadt.pm_timer_32bit ? "32-bit" : "24-bit",
			fadt.pm_timer_from_x ? "X_PM_TMR_BLK" : "PM_TMR_BLK");
	else if (have_fadt)
		kprintf("acpi: no PM timer%s\n",
			fadt.hw_reduced ? " (hardware-reduced ACPI)" : "");
	if (have_hpet)
		kprintf("acpi: HPET %u at %#llx\n", hpet.number,
			(unsigned long long)hpet.base);
	if (have_dmar)
		kprintf("acpi: DMAR: interrupt remapping %s, x2APIC opt-out "
			"%s\n",
			dmar.intr_remap ? "supported" : "absent",
			dmar.x2apic_opt_out ? "set" : "clear");
}
