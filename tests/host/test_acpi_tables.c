// SPDX-License-Identifier: MIT
/*
 * acpi/tables.c on crafted tables: RSDPs, root tables, MADTs, FADTs
 * and HPET tables, good and malformed. Every table is built in a staging
 * area, then copied to a heap block of exactly its size, so ASan sees any
 * read past its end. Every message is captured; tests check that problems
 * are reported with the words that make them useful.
 */
#include "acpi/tables.h"
#include "lib/errno.h"
#include "tests/host/host_test.h"

/* --- Messages ------------------------------------------------------------- */

struct messages {
	unsigned count;
	char text[8192]; /* all of them, one per line */
	size_t used;
};

static struct messages msgs;

static void collect(void *ctx, const char *fmt, ...)
{
	struct messages *m = ctx;
	va_list ap;
	int n;

	m->count++;
	if (m->used >= sizeof(m->text) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(m->text + m->used, sizeof(m->text) - m->used, fmt, ap);
	va_end(ap);
	if (n > 0)
		m->used = MIN(m->used + (size_t)n, sizeof(m->text) - 2);
	m->text[m->used++] = '\n';
	m->text[m->used] = '\0';
}

static struct messages *fresh(void)
{
	memset(&msgs, 0, sizeof(msgs));
	return &msgs;
}

static bool said(const char *words)
{
	return strstr(msgs.text, words) != NULL;
}

/* --- Building tables ------------------------------------------------------ */

static void set16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void set32(uint8_t *p, uint32_t v)
{
	set16(p, (uint16_t)v);
	set16(p + 2, (uint16_t)(v >> 16));
}

static void set64(uint8_t *p, uint64_t v)
{
	set32(p, (uint32_t)v);
	set32(p + 4, (uint32_t)(v >> 32));
}

/* Sets the byte at `at` so the first len bytes add up to 0. */
static void fix_checksum(uint8_t *t, size_t len, size_t at)
{
	uint8_t sum = 0;

	t[at] = 0;
	for (size_t i = 0; i < len; i++)
		sum = (uint8_t)(sum + t[i]);
	t[at] = (uint8_t)-sum;
}

/* An exactly-sized heap copy, so ASan guards its end. */
static uint8_t *exact(const uint8_t *bytes, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	if (!p)
		abort();
	memcpy(p, bytes, len);
	return p;
}

#define STAGE_MAX 16384
static uint8_t stage[STAGE_MAX];
static size_t stage_len;

/* Starts a table in the stage: a header with this signature. */
static void table_begin(const char *sig, uint8_t revision)
{
	memset(stage, 0, sizeof(stage));
	memcpy(stage, sig, 4);
	stage[8] = revision;
	memcpy(stage + 10, "SHOOTD", 6);
	memcpy(stage + 16, "TESTTABL", 8);
	stage_len = ACPI_HEADER_SIZE;
}

static void put(const void *bytes, size_t n)
{
	if (stage_len + n > STAGE_MAX)
		abort();
	memcpy(stage + stage_len, bytes, n);
	stage_len += n;
}

/* Fills in length (or length_field when nonzero) and checksum; copies. */
static uint8_t *table_end_as(uint32_t length_field, size_t *len)
{
	set32(stage + 4, length_field ? length_field : (uint32_t)stage_len);
	fix_checksum(stage, stage_len, 9);
	*len = stage_len;
	return exact(stage, stage_len);
}

static uint8_t *table_end(size_t *len)
{
	return table_end_as(0, len);
}

/* MADT: header, local APIC address, flags; then entries. */
static void madt_begin(uint8_t revision, uint32_t lapic, uint32_t flags)
{
	uint8_t fixed[8];

	table_begin("APIC", revision);
	set32(fixed, lapic);
	set32(fixed + 4, flags);
	put(fixed, sizeof(fixed));
}

static void madt_lapic(uint8_t uid, uint8_t apic_id, uint32_t flags)
{
	uint8_t e[8] = {0, 8, uid, apic_id};

	set32(e + 4, flags);
	put(e, sizeof(e));
}

static void madt_x2apic(uint32_t apic_id, uint32_t flags, uint32_t uid)
{
	uint8_t e[16] = {9, 16};

	set32(e + 4, apic_id);
	set32(e + 8, flags);
	set32(e + 12, uid);
	put(e, sizeof(e));
}

static void madt_ioapic(uint8_t id, uint32_t address, uint32_t gsi_base)
{
	uint8_t e[12] = {1, 12, id, 0};

	set32(e + 4, address);
	set32(e + 8, gsi_base);
	put(e, sizeof(e));
}

static void madt_override(uint8_t source, uint32_t gsi, uint16_t flags)
{
	uint8_t e[10] = {2, 10, 0, source};

	set32(e + 4, gsi);
	set16(e + 8, flags);
	put(e, sizeof(e));
}

static void madt_nmi_source(uint16_t flags, uint32_t gsi)
{
	uint8_t e[8] = {3, 8};

	set16(e + 2, flags);
	set32(e + 4, gsi);
	put(e, sizeof(e));
}

static void madt_lapic_nmi(uint8_t uid, uint16_t flags, uint8_t lint)
{
	uint8_t e[6] = {4, 6, uid};

	set16(e + 3, flags);
	e[5] = lint;
	put(e, sizeof(e));
}

static void madt_x2apic_nmi(uint16_t flags, uint32_t uid, uint8_t lint)
{
	uint8_t e[12] = {0xa, 12};

	set16(e + 2, flags);
	set32(e + 4, uid);
	e[8] = lint;
	put(e, sizeof(e));
}

static void madt_lapic_address(uint64_t address)
{
	uint8_t e[12] = {5, 12};

	set64(e + 4, address);
	put(e, sizeof(e));
}

#define EN  1 /* enabled */
#define ONL 2 /* online-capable */

static struct madt_info *info(void)
{
	static struct madt_info *out;

	if (!out)
		out = malloc(sizeof(*out));
	if (!out)
		abort();
	memset(out, 0xa5, sizeof(*out)); /* the parser must clear it */
	return out;
}

static const struct madt_cpu *cpu_with_id(const struct madt_info *m,
					  uint32_t apic_id)
{
	for (size_t i = 0; i < m->cpu_count; i++) {
		if (m->cpus[i].apic_id == apic_id)
			return &m->cpus[i];
	}
	return NULL;
}

/* --- Checksums and RSDPs -------------------------------------------------- */

HOST_TEST(checksum)
{
	uint8_t good[] = {1, 2, 3, 0xfa};
	uint8_t bad[] = {1, 2, 3, 0xfb};
	uint8_t *g = exact(good, sizeof(good)), *b = exact(bad, sizeof(bad));

	CHECK(acpi_checksum_ok(g, sizeof(good)), "sum 0 rejected");
	CHECK(!acpi_checksum_ok(b, sizeof(bad)), "sum 1 accepted");
	CHECK(acpi_checksum_ok(g, 0), "nothing adds up to 0");
	free(g);
	free(b);
}

/* An RSDP of len bytes (20 or 36 and more) with valid checksums. */
static uint8_t *rsdp(uint8_t revision, uint32_t rsdt, uint64_t xsdt, size_t len)
{
	uint8_t b[64] = {0};

	memcpy(b, "RSD PTR ", 8);
	memcpy(b + 9, "SHOOTD", 6);
	b[15] = revision;
	set32(b + 16, rsdt);
	/* The first checksum first: the extended one covers its byte. */
	fix_checksum(b, ACPI_RSDP_V1_SIZE, 8);
	if (len >= ACPI_RSDP_V2_SIZE) {
		set32(b + 20, (uint32_t)len);
		set64(b + 24, xsdt);
		fix_checksum(b, len, 32);
	}
	return exact(b, len);
}

HOST_TEST(rsdp_v1)
{
	struct acpi_rsdp_info r;
	uint8_t *p = rsdp(0, 0x7fe1000, 0, ACPI_RSDP_V1_SIZE);

	fresh();
	CHECK_EQ(acpi_rsdp_parse(p, ACPI_RSDP_V1_SIZE, &r, collect, &msgs), 0);
	CHECK_EQ(r.revision, 0);
	CHECK_EQ(r.rsdt, 0x7fe1000);
	CHECK_EQ(r.xsdt, 0);
	CHECK_EQ(r.length, ACPI_RSDP_V1_SIZE);
	CHECK_STR(r.oem_id, "SHOOTD");
	CHECK_EQ(msgs.count, 0);

	/* One byte short of the 20: refused without reading past it. */
	fresh();
	CHECK_EQ(acpi_rsdp_parse(p, ACPI_RSDP_V1_SIZE - 1, &r, collect, &msgs),
		 -EINVAL);
	CHECK(said("only 19 bytes"), "%s", msgs.text);

	p[19] ^= 1;
	fresh();
	CHECK_EQ(acpi_rsdp_parse(p, ACPI_RSDP_V1_SIZE, &r, collect, &msgs),
		 -EINVAL);
	CHECK(said("bad checksum"), "%s", msgs.text);

	p[19] ^= 1;
	p[0] = 'r';
	fresh();
	CHECK_EQ(acpi_rsdp_parse(p, ACPI_RSDP_V1_SIZE, &r, collect, &msgs),
		 -EINVAL);
	CHECK(said("signature"), "%s", msgs.text);
	free(p);

	/* Valid, but pointing nowhere. */
	p = rsdp(0, 0, 0, ACPI_RSDP_V1_SIZE);
	fresh();
	CHECK_EQ(acpi_rsdp_parse(p, ACPI_RSDP_V1_SIZE, &r, collect, &msgs),
		 -EINVAL);
	CHECK(said("neither"), "%s", msgs.text);
	free(p);
}

HOST_TEST(rsdp_v2)
{
	struct acpi_rsdp_info r;
	uint8_t *p = rsdp(2, 0x7fe1000, 0x1234567890ULL, ACPI_RSDP_V2_SIZE);

	fresh();
	CHECK_EQ(acpi_rsdp_parse(p, ACPI_RSDP_V2_SIZE, &r, collect, &msgs), 0);
	CHECK_EQ(r.revision, 2);
	CHECK_EQ(r.rsdt, 0x7fe1000);
	CHECK_EQ(r.xsdt, 0x1234567890ULL);
	CHECK_EQ(r.length, ACPI_RSDP_V2_SIZE);
	CHECK_EQ(msgs.count, 0);

	/* Only 20 bytes available: the RSDT is still usable. */
	fresh();
	CHECK_EQ(acpi_rsdp_parse(p, ACPI_RSDP_V1_SIZE, &r, collect, &msgs), 0);
	CHECK_EQ(r.xsdt, 0);
	CHECK_EQ(r.rsdt, 0x7fe1000);
	CHECK(said("RSDT only"), "%s", msgs.text);

	/* A bad extended checksum (the 20-byte one still good). */
	p[33] ^= 0x40;
	fresh();
	CHECK_EQ(acpi_rsdp_parse(p, ACPI_RSDP_V2_SIZE, &r, collect, &msgs), 0);
	CHECK_EQ(r.xsdt, 0);
	CHECK(said("extended checksum"), "%s", msgs.text);
	free(p);

	/* A length field past the buffer, and one below 36. */
	p = rsdp(2, 0x7fe1000, 0x7fe2000, ACPI_RSDP_V2_SIZE);
	set32(p + 20, 1000);
	fresh();
	CHECK_EQ(acpi_rsdp_parse(p, ACPI_RSDP_V2_SIZE, &r, collect, &msgs), 0);
	CHECK_EQ(r.xsdt, 0);
	CHECK(said("length 1000"), "%s", msgs.text);
	set32(p + 20, 20);
	fresh();
	CHECK_EQ(acpi_rsdp_parse(p, ACPI_RSDP_V2_SIZE, &r, collect, &msgs), 0);
	CHECK_EQ(r.xsdt, 0);
	CHECK(said("length 20"), "%s", msgs.text);
	free(p);

	/* XSDT only; and nothing usable at all. */
	p = rsdp(2, 0, 0x7fe2000, ACPI_RSDP_V2_SIZE);
	fresh();
	CHECK_EQ(acpi_rsdp_parse(p, ACPI_RSDP_V2_SIZE, &r, collect, &msgs), 0);
	CHECK_EQ(r.xsdt, 0x7fe2000);
	p[33] ^= 1;
	fresh();
	CHECK_EQ(acpi_rsdp_parse(p, ACPI_RSDP_V2_SIZE, &r, collect, &msgs),
		 -EINVAL);
	free(p);

	/* A longer RSDP (a future revision): checksummed over its length. */
	p = rsdp(3, 0x1000, 0x2000, 48);
	fresh();
	CHECK_EQ(acpi_rsdp_parse(p, 48, &r, collect, &msgs), 0);
	CHECK_EQ(r.length, 48);
	CHECK_EQ(r.xsdt, 0x2000);
	free(p);
}

HOST_TEST(rsdp_scan)
{
	const size_t len = 4096;
	uint8_t *area = calloc(1, len);
	uint8_t *good = rsdp(2, 0x1000, 0x2000, ACPI_RSDP_V2_SIZE);

	if (!area)
		abort();
	CHECK_EQ(acpi_rsdp_scan(area, len), -1);
	/* Off the 16-byte grid: not found. */
	memcpy(area + 0x108, good, ACPI_RSDP_V2_SIZE);
	CHECK_EQ(acpi_rsdp_scan(area, len), -1);
	/* Signature with a bad checksum first, then a good one. */
	memcpy(area + 0x100, "RSD PTR ", 8);
	memcpy(area + 0x230, good, ACPI_RSDP_V2_SIZE);
	CHECK_EQ(acpi_rsdp_scan(area, len), 0x230);
	/* A signature 16 bytes from the end cannot be a whole RSDP. */
	memset(area, 0, len);
	memcpy(area + len - 16, "RSD PTR ", 8);
	CHECK_EQ(acpi_rsdp_scan(area, len), -1);
	/* The last place a 20-byte RSDP fits. */
	memset(area, 0, len);
	memcpy(area + len - 32, good, 20);
	CHECK_EQ(acpi_rsdp_scan(area, len), (long)(len - 32));
	CHECK_EQ(acpi_rsdp_scan(area, 0), -1);
	CHECK_EQ(acpi_rsdp_scan(area, 19), -1);
	free(good);
	free(area);
}

/* --- Headers and root tables ---------------------------------------------- */

HOST_TEST(table_check)
{
	size_t len;
	uint8_t *t;
	struct acpi_header h;

	table_begin("SSDT", 2);
	put("\x01\x02\x03", 3);
	t = table_end(&len);
	acpi_header_read(t, &h);
	CHECK_STR(h.signature, "SSDT");
	CHECK_STR(h.oem_id, "SHOOTD");
	CHECK_STR(h.oem_table_id, "TESTTABL");
	CHECK_EQ(h.length, 39);
	CHECK_EQ(h.revision, 2);

	fresh();
	CHECK_EQ(acpi_table_check(t, len, "SSDT", collect, &msgs), 0);
	CHECK_EQ(acpi_table_check(t, len, NULL, collect, &msgs), 0);
	CHECK_EQ(msgs.count, 0);
	CHECK_EQ(acpi_table_check(t, len, "APIC", collect, &msgs), -EINVAL);
	CHECK(said("expected signature APIC"), "%s", msgs.text);
	/* The buffer shorter than the length field. */
	fresh();
	CHECK_EQ(acpi_table_check(t, len - 1, NULL, collect, &msgs), -EINVAL);
	CHECK(said("length 39"), "%s", msgs.text);
	/* Shorter than a header. */
	fresh();
	CHECK_EQ(acpi_table_check(t, 35, NULL, collect, &msgs), -EINVAL);
	CHECK(said("only 35 bytes"), "%s", msgs.text);
	/* A flipped byte. */
	t[37] ^= 0x10;
	fresh();
	CHECK_EQ(acpi_table_check(t, len, NULL, collect, &msgs), -EINVAL);
	CHECK(said("SSDT: bad checksum"), "%s", msgs.text);
	free(t);

	/* Length field below the header size. */
	table_begin("SSDT", 2);
	t = table_end_as(20, &len);
	fresh();
	CHECK_EQ(acpi_table_check(t, len, NULL, collect, &msgs), -EINVAL);
	CHECK(said("length 20"), "%s", msgs.text);
	free(t);

	/* Unprintable signature bytes are shown as '?'. */
	table_begin("A\x01\xff"
		    "B",
		    1);
	t = table_end(&len);
	acpi_header_read(t, &h);
	CHECK_STR(h.signature, "A??B");
	free(t);
}

HOST_TEST(root_tables)
{
	static const uint64_t x[] = {0x7fe1000, 0x123456789aULL,
				     0xfffffffffffff000ULL};
	struct acpi_root root;
	uint8_t e[8];
	size_t len;
	uint8_t *t;

	table_begin("XSDT", 1);
	for (size_t i = 0; i < ARRAY_SIZE(x); i++) {
		set64(e, x[i]);
		put(e, 8);
	}
	t = table_end(&len);
	fresh();
	CHECK_EQ(acpi_root_init(&root, t, len, true, collect, &msgs), 0);
	CHECK_EQ(root.count, 3);
	for (size_t i = 0; i < root.count && i < 3; i++)
		CHECK_EQ(acpi_root_entry(&root, i), x[i]);
	CHECK_EQ(msgs.count, 0);
	/* The same bytes are not an RSDT. */
	CHECK_EQ(acpi_root_init(&root, t, len, false, collect, &msgs), -EINVAL);
	CHECK_EQ(root.count, 0);
	free(t);

	table_begin("RSDT", 1);
	for (size_t i = 0; i < ARRAY_SIZE(x); i++) {
		set32(e, (uint32_t)x[i]);
		put(e, 4);
	}
	t = table_end(&len);
	fresh();
	CHECK_EQ(acpi_root_init(&root, t, len, false, collect, &msgs), 0);
	CHECK_EQ(root.count, 3);
	for (size_t i = 0; i < root.count && i < 3; i++)
		CHECK_EQ(acpi_root_entry(&root, i), (uint32_t)x[i]);
	free(t);

	/* Two XSDT entries and 4 stray bytes: two entries, one message. */
	table_begin("XSDT", 1);
	set64(e, 0x1000);
	put(e, 8);
	put(e, 8);
	put(e, 4);
	t = table_end(&len);
	fresh();
	CHECK_EQ(acpi_root_init(&root, t, len, true, collect, &msgs), 0);
	CHECK_EQ(root.count, 2);
	CHECK(said("4 stray bytes"), "%s", msgs.text);
	free(t);

	/* Empty, and with a bad checksum. */
	table_begin("XSDT", 1);
	t = table_end(&len);
	CHECK_EQ(acpi_root_init(&root, t, len, true, collect, &msgs), 0);
	CHECK_EQ(root.count, 0);
	t[20] ^= 1;
	fresh();
	CHECK_EQ(acpi_root_init(&root, t, len, true, collect, &msgs), -EINVAL);
	CHECK(said("bad checksum"), "%s", msgs.text);
	free(t);
}

/* --- MADT ----------------------------------------------------------------- */

HOST_TEST(madt_good)
{
	struct madt_info *m = info();
	size_t len;
	uint8_t *t;

	madt_begin(5, 0xfee00000, 1);
	madt_lapic(0, 0, EN);
	madt_lapic(1, 1, EN);
	madt_lapic(2, 2, EN);
	madt_x2apic(2, EN, 2); /* the same CPU again, as x2APIC */
	madt_x2apic(300, EN, 3);
	madt_ioapic(4, 0xfec00000, 0);
	madt_ioapic(5, 0xfec01000, 24);
	madt_override(0, 2, 0);
	madt_override(9, 9, 0xd);
	madt_nmi_source(0x5, 30);
	madt_lapic_nmi(0xff, 0x5, 1);
	madt_x2apic_nmi(0x5, 0xffffffffU, 1);
	madt_x2apic_nmi(0, 3, 0); /* by UID: the CPU with APIC ID 300 */
	t = table_end(&len);

	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
	CHECK_EQ(m->lapic_address, 0xfee00000);
	CHECK(!m->lapic_address_overridden, "no override entry");
	CHECK(m->pcat_compat, "PCAT_COMPAT flag lost");
	CHECK_EQ(m->cpu_count, 4);
	CHECK_EQ(m->cpus_enabled, 4);
	CHECK_EQ(m->cpus_duplicate, 1);
	CHECK(said("APIC ID 2 listed again"), "%s", msgs.text);
	for (uint32_t i = 0; i < 3 && i < m->cpu_count; i++) {
		CHECK_EQ(m->cpus[i].apic_id, i);
		CHECK_EQ(m->cpus[i].uid, i);
		CHECK(m->cpus[i].enabled && !m->cpus[i].x2apic_entry, "cpu %u",
		      i);
	}
	if (m->cpu_count == 4) {
		CHECK_EQ(m->cpus[3].apic_id, 300);
		CHECK_EQ(m->cpus[3].uid, 3);
		CHECK(m->cpus[3].x2apic_entry, "x2APIC entry not marked");
	}
	CHECK_EQ(m->ioapic_count, 2);
	CHECK_EQ(m->ioapics[1].id, 5);
	CHECK_EQ(m->ioapics[1].address, 0xfec01000);
	CHECK_EQ(m->ioapics[1].gsi_base, 24);
	CHECK_EQ(m->override_count, 2);
	CHECK_EQ(m->overrides[0].source, 0);
	CHECK_EQ(m->overrides[0].gsi, 2);
	CHECK_EQ(m->overrides[1].source, 9);
	CHECK_EQ(m->overrides[1].flags, 0xd);
	CHECK_EQ(m->nmi_source_count, 1);
	CHECK_EQ(m->nmi_sources[0].gsi, 30);
	CHECK_EQ(m->nmi_sources[0].flags, 5);
	CHECK_EQ(m->lapic_nmi_count, 3);
	CHECK_EQ(m->lapic_nmis[0].uid, MADT_ALL_PROCESSORS);
	CHECK_EQ(m->lapic_nmis[0].lint, 1);
	CHECK_EQ(m->lapic_nmis[0].flags, 5);
	CHECK_EQ(m->lapic_nmis[1].uid, MADT_ALL_PROCESSORS);
	CHECK_EQ(m->lapic_nmis[2].uid, 3);
	CHECK_EQ(m->lapic_nmis[2].lint, 0);
	CHECK(!m->incomplete, "walk ended early: %s", msgs.text);
	CHECK_EQ(m->entries_unknown, 0);
	CHECK_EQ(msgs.count, 1);
	free(t);
}

/* QEMU -smp 6,sockets=2,cores=3: each socket's IDs start at a power of 2. */
HOST_TEST(madt_gaps)
{
	static const uint8_t ids[] = {0, 1, 2, 4, 5, 6};
	struct madt_info *m = info();
	size_t len;
	uint8_t *t;

	madt_begin(1, 0xfee00000, 1);
	for (uint8_t i = 0; i < ARRAY_SIZE(ids); i++)
		madt_lapic(i, ids[i], EN);
	t = table_end(&len);
	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
	CHECK_EQ(m->cpu_count, 6);
	CHECK_EQ(m->cpus_enabled, 6);
	for (size_t i = 0; i < 6 && i < m->cpu_count; i++) {
		CHECK_EQ(m->cpus[i].apic_id, ids[i]);
		CHECK_EQ(m->cpus[i].uid, i);
	}
	CHECK(!cpu_with_id(m, 3), "APIC ID 3 invented");
	CHECK_EQ(msgs.count, 0);
	free(t);
}

HOST_TEST(madt_invalid_ids)
{
	struct madt_info *m = info();
	size_t len;
	uint8_t *t;

	madt_begin(1, 0xfee00000, 0);
	madt_lapic(0, 0, EN);
	madt_lapic(1, 0xff, EN);
	madt_x2apic(0xffffffffU, EN, 2);
	madt_x2apic(0xfe, EN, 3);
	t = table_end(&len);
	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
	CHECK_EQ(m->cpu_count, 2);
	CHECK_EQ(m->cpus_invalid_id, 2);
	/* Placeholders are normal: one line for all of them. */
	CHECK(said("2 placeholder processor entries (APIC ID 0xff or "
		   "0xffffffff) skipped"),
	      "%s", msgs.text);
	CHECK_EQ(msgs.count, 1);
	CHECK(!m->pcat_compat, "PCAT_COMPAT invented");
	CHECK(cpu_with_id(m, 0xfe), "x2APIC ID 0xfe is valid");
	free(t);
}

HOST_TEST(madt_cpu_flags)
{
	struct madt_info *m = info();
	const struct madt_cpu *c;
	size_t len;
	uint8_t *t;

	/* Revision 5 (ACPI 6.3): the online-capable bit means something. */
	madt_begin(5, 0xfee00000, 1);
	madt_lapic(0, 0, EN);
	madt_lapic(1, 1, ONL);
	madt_lapic(2, 2, 0);
	madt_lapic(3, 3, EN | ONL);
	madt_x2apic(4, ONL, 4);
	madt_x2apic(5, 0, 5);
	t = table_end(&len);
	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
	CHECK_EQ(m->cpu_count, 6);
	CHECK_EQ(m->cpus_enabled, 2);
	c = cpu_with_id(m, 1);
	CHECK(c && !c->enabled && c->online_capable, "online-capable");
	c = cpu_with_id(m, 2);
	CHECK(c && !c->enabled && !c->online_capable, "absent kept");
	c = cpu_with_id(m, 3);
	CHECK(c && c->enabled && !c->online_capable, "enabled wins");
	c = cpu_with_id(m, 4);
	CHECK(c && !c->enabled && c->online_capable, "x2APIC online-capable");
	c = cpu_with_id(m, 5);
	CHECK(c && !c->enabled && !c->online_capable, "x2APIC absent kept");
	free(t);

	/* Before revision 5 the bit is reserved: ignored. */
	madt_begin(4, 0xfee00000, 1);
	madt_lapic(0, 0, EN);
	madt_lapic(1, 1, ONL);
	t = table_end(&len);
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
	c = cpu_with_id(m, 1);
	CHECK(c && !c->enabled && !c->online_capable, "reserved bit used");
	free(t);
}

/* A CPU listed twice keeps its first place, and is enabled if either says. */
HOST_TEST(madt_duplicates)
{
	struct madt_info *m = info();
	size_t len;
	uint8_t *t;

	madt_begin(5, 0xfee00000, 1);
	madt_lapic(0, 0, EN);
	madt_lapic(1, 7, 0);
	madt_x2apic(7, EN, 1);
	madt_lapic(2, 8, 0);
	madt_x2apic(8, ONL, 2);
	madt_lapic(0, 0, EN);
	madt_lapic(0, 0, 0);
	for (int i = 0; i < 6; i++)
		madt_x2apic(0, EN, 0);
	t = table_end(&len);
	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
	CHECK_EQ(m->cpu_count, 3);
	CHECK_EQ(m->cpus_enabled, 2);
	CHECK_EQ(m->cpus_duplicate, 10);
	CHECK(m->cpu_count == 3 && m->cpus[1].apic_id == 7 &&
		      m->cpus[1].enabled && !m->cpus[1].x2apic_entry,
	      "CPU 7 merged wrongly");
	CHECK(m->cpu_count == 3 && m->cpus[2].apic_id == 8 &&
		      !m->cpus[2].enabled && m->cpus[2].online_capable,
	      "CPU 8 merged wrongly");
	CHECK(m->cpu_count && m->cpus[0].enabled, "a disabled copy won");
	/* Four reported one by one, then the total. */
	CHECK_EQ(msgs.count, 5);
	CHECK(said("10 entries repeated"), "%s", msgs.text);
	free(t);
}

HOST_TEST(madt_too_many_cpus)
{
	struct madt_info *m = info();
	size_t len;
	uint8_t *t;

	madt_begin(3, 0xfee00000, 0);
	for (uint32_t i = 0; i < 300; i++)
		madt_x2apic(i * 2, EN, i);
	madt_x2apic(0, EN, 0); /* a duplicate is not a dropped CPU */
	t = table_end(&len);
	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
	CHECK_EQ(m->cpu_count, MAX_CPUS);
	CHECK_EQ(m->cpus_enabled, MAX_CPUS);
	CHECK_EQ(m->cpus_dropped, 300 - MAX_CPUS);
	CHECK_EQ(m->cpus_duplicate, 1);
	CHECK_EQ(m->cpus[MAX_CPUS - 1].apic_id, (MAX_CPUS - 1) * 2);
	CHECK(said("44 more CPUs"), "%s", msgs.text);
	CHECK_EQ(msgs.count, 2);
	CHECK(!m->incomplete, "walk ended early");
	free(t);
}

/* Builds a MADT of CPUs 0 and 1, then `bad` (n bytes), then CPU 2. */
static uint8_t *madt_with_bad_entry(const uint8_t *bad, size_t n, size_t *len)
{
	madt_begin(1, 0xfee00000, 1);
	madt_lapic(0, 0, EN);
	madt_lapic(1, 1, EN);
	put(bad, n);
	madt_lapic(2, 2, EN);
	return table_end(len);
}

static void expect_stop_after_two(const uint8_t *bad, size_t n,
				  const char *words)
{
	struct madt_info *m = info();
	size_t len;
	uint8_t *t = madt_with_bad_entry(bad, n, &len);

	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
	CHECK(m->incomplete, "bad entry not noticed");
	CHECK_EQ(m->cpu_count, 2);
	CHECK_EQ(m->cpus_enabled, 2);
	CHECK(said(words), "want \"%s\" in: %s", words, msgs.text);
	CHECK(said("stopped reading at offset 60"), "%s", msgs.text);
	free(t);
}

HOST_TEST(madt_bad_entries)
{
	static const uint8_t len0[] = {0, 0, 0, 0};
	static const uint8_t len1[] = {9, 1, 0, 0};
	static const uint8_t short_x2apic[] = {9, 8, 0, 0, 3, 0, 0, 0};
	static const uint8_t short_ioapic[] = {1, 6, 0, 0, 0, 0};
	static const uint8_t short_lapic[] = {0, 4, 0, 3};
	static const uint8_t short_override[] = {2, 9, 0, 0, 0, 0, 0, 0, 0};
	static const uint8_t short_nmi[] = {4, 5, 0, 0, 0};
	static const uint8_t short_x2nmi[] = {0xa, 11, 0, 0, 0, 0,
					      0,   0,  0, 0, 0};

	expect_stop_after_two(len0, sizeof(len0), "has length 0");
	expect_stop_after_two(len1, sizeof(len1), "has length 1");
	expect_stop_after_two(short_x2apic, sizeof(short_x2apic),
			      "(type 9) has length 8, needs 16");
	expect_stop_after_two(short_ioapic, sizeof(short_ioapic),
			      "(type 1) has length 6, needs 12");
	expect_stop_after_two(short_lapic, sizeof(short_lapic),
			      "(type 0) has length 4, needs 8");
	expect_stop_after_two(short_override, sizeof(short_override),
			      "needs 10");
	expect_stop_after_two(short_nmi, sizeof(short_nmi), "needs 6");
	expect_stop_after_two(short_x2nmi, sizeof(short_x2nmi), "needs 12");
}

HOST_TEST(madt_entry_past_end)
{
	struct madt_info *m = info();
	uint8_t e[8] = {0, 8, 2, 2, 1, 0, 0, 0};
	size_t len;
	uint8_t *t;

	/* The last entry says 8 bytes, the table ends after 5. */
	madt_begin(1, 0xfee00000, 1);
	madt_lapic(0, 0, EN);
	madt_lapic(1, 1, EN);
	put(e, 5);
	t = table_end(&len);
	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
	CHECK(m->incomplete, "truncated entry not noticed");
	CHECK_EQ(m->cpu_count, 2);
	CHECK(said("runs past the table's end"), "%s", msgs.text);
	free(t);

	/* An entry longer than the rest of the table (length 200). */
	e[1] = 200;
	madt_begin(1, 0xfee00000, 1);
	madt_lapic(0, 0, EN);
	put(e, 8);
	madt_lapic(1, 1, EN);
	t = table_end(&len);
	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
	CHECK(m->incomplete, "long entry not noticed");
	CHECK_EQ(m->cpu_count, 1);
	CHECK(said("length 200"), "%s", msgs.text);
	free(t);

	/* One stray byte at the end. */
	madt_begin(1, 0xfee00000, 1);
	madt_lapic(0, 0, EN);
	put("\x00", 1);
	t = table_end(&len);
	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
	CHECK(m->incomplete, "stray byte not noticed");
	CHECK_EQ(m->cpu_count, 1);
	CHECK(said("1 stray byte"), "%s", msgs.text);
	free(t);

	/* The length field shorter than the buffer: entries past it unread. */
	madt_begin(1, 0xfee00000, 1);
	madt_lapic(0, 0, EN);
	madt_lapic(1, 1, EN);
	t = table_end_as(52, &len);
	fix_checksum(t, 52, 9);
	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
	CHECK(!m->incomplete, "%s", msgs.text);
	CHECK_EQ(m->cpu_count, 1);
	free(t);
}

HOST_TEST(madt_other_entries)
{
	struct madt_info *m = info();
	uint8_t unknown[] = {0x7f, 4, 1, 2};
	uint8_t gicc[] = {0xb, 3, 0};
	size_t len;
	uint8_t *t;

	madt_begin(1, 0xfee00000, 1);
	madt_lapic(0, 0, EN);
	put(unknown, sizeof(unknown));
	put(gicc, sizeof(gicc)); /* known elsewhere; only its length matters */
	madt_lapic_address(0x123fee00000ULL);
	madt_lapic(1, 1, EN);
	t = table_end(&len);
	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
	CHECK_EQ(m->entries_unknown, 2);
	CHECK_EQ(m->cpu_count, 2);
	CHECK(m->lapic_address_overridden, "override lost");
	CHECK_EQ(m->lapic_address, 0x123fee00000ULL);
	CHECK_EQ(msgs.count, 0);
	free(t);
}

HOST_TEST(madt_limits)
{
	struct madt_info *m = info();
	size_t len;
	uint8_t *t;

	madt_begin(1, 0xfee00000, 1);
	madt_lapic(0, 0, EN);
	for (uint8_t i = 0; i < MADT_MAX_IOAPICS + 1; i++)
		madt_ioapic(i, 0xfec00000 + i * 0x1000U, i * 24U);
	for (uint8_t i = 0; i < MADT_MAX_OVERRIDES + 2; i++)
		madt_override(i, i, 0);
	/* Only UIDs 0 and 1 belong to CPUs. */
	for (uint8_t i = 0; i < 17; i++)
		madt_lapic_nmi(i, 0, 1);
	for (uint8_t i = 0; i < MADT_MAX_NMI_SOURCES + 1; i++)
		madt_nmi_source(0, i);
	madt_lapic(1, 1, EN);
	t = table_end(&len);
	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
	CHECK_EQ(m->ioapic_count, MADT_MAX_IOAPICS);
	CHECK_EQ(m->override_count, MADT_MAX_OVERRIDES);
	CHECK_EQ(m->lapic_nmi_count, 2);
	CHECK_EQ(m->lapic_nmis_unmatched, 15);
	CHECK_EQ(m->nmi_source_count, MADT_MAX_NMI_SOURCES);
	CHECK_EQ(m->entries_dropped, 4);
	CHECK_EQ(m->ioapics_seen.listed, MADT_MAX_IOAPICS + 1);
	CHECK_EQ(m->ioapics_seen.over_limit, 1);
	CHECK_EQ(m->ioapics[MADT_MAX_IOAPICS - 1].id, MADT_MAX_IOAPICS - 1);
	CHECK_EQ(m->cpu_count, 2);
	/* One line per kind, never one per entry. */
	CHECK(said("9 IOAPICs, kept 8"), "%s", msgs.text);
	CHECK(said("18 interrupt source overrides, kept 16"), "%s", msgs.text);
	CHECK(said("9 NMI sources, kept 8"), "%s", msgs.text);
	CHECK(said("17 local-APIC NMI entries, kept 2: 15 name no CPU kept"),
	      "%s", msgs.text);
	CHECK_EQ(msgs.count, 4);
	free(t);
}

/*
 * The MADT of a typical AMD desktop: twice as many processor entries as
 * CPUs (the rest placeholders, with APIC ID 0xff or not enabled), one
 * local APIC NMI entry per UID (LINT1, flags 5: active high, edge), a few
 * IOAPICs and the usual ISA overrides.
 */
static uint8_t *amd_madt(unsigned enabled, unsigned ioapics, size_t *len)
{
	unsigned half = enabled / 2;

	madt_begin(4, 0xfee00000, 1);
	for (unsigned uid = 0; uid < enabled; uid++)
		madt_lapic((uint8_t)uid, (uint8_t)uid, EN);
	/* Half the placeholders have an ID but are not enabled (absent). */
	for (unsigned uid = enabled; uid < enabled + half; uid++)
		madt_lapic((uint8_t)uid, (uint8_t)uid, 0);
	for (unsigned uid = enabled + half; uid < 2 * enabled; uid++)
		madt_lapic((uint8_t)uid, 0xff, 0);
	for (unsigned i = 0; i < ioapics; i++)
		madt_ioapic((uint8_t)(2 * enabled + i),
			    0xfec00000 + i * 0x1000U, i * 24U);
	madt_override(0, 2, 0);
	madt_override(9, 9, 0xf);
	for (unsigned uid = 0; uid < 2 * enabled; uid++)
		madt_lapic_nmi((uint8_t)uid, 5, 1);
	return table_end(len);
}

HOST_TEST(madt_amd_shaped)
{
	static const struct {
		unsigned enabled, ioapics;
	} boards[] = {{16, 2}, {24, 3}};
	struct madt_info *m = info();
	size_t len;
	uint8_t *t;

	for (size_t b = 0; b < ARRAY_SIZE(boards); b++) {
		unsigned enabled = boards[b].enabled, half = enabled / 2;

		t = amd_madt(enabled, boards[b].ioapics, &len);
		fresh();
		CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
		CHECK_EQ(m->cpu_count, enabled + half);
		CHECK_EQ(m->cpus_enabled, enabled);
		CHECK_EQ(m->cpus_invalid_id, half);
		CHECK_EQ(m->ioapic_count, boards[b].ioapics);
		CHECK_EQ(m->override_count, 2);
		/* One NMI entry for each CPU kept, none for placeholders. */
		CHECK_EQ(m->lapic_nmi_count, enabled + half);
		CHECK_EQ(m->lapic_nmis_unmatched, half);
		for (size_t i = 0; i < m->lapic_nmi_count; i++) {
			CHECK_EQ(m->lapic_nmis[i].uid, i);
			CHECK_EQ(m->lapic_nmis[i].lint, 1);
			CHECK_EQ(m->lapic_nmis[i].flags, 5);
		}
		CHECK_EQ(m->entries_dropped, 0);
		CHECK(!m->incomplete, "walk ended early");
		/* A placeholder line and an NMI line: no flood. */
		CHECK(msgs.count <= 2, "%u lines:\n%s", msgs.count, msgs.text);
		CHECK(said("placeholder processor entries"), "%s", msgs.text);
		free(t);
	}
}

/* NMI entries before the processor entries still find their CPUs. */
HOST_TEST(madt_nmi_before_cpus)
{
	struct madt_info *m = info();
	size_t len;
	uint8_t *t;

	madt_begin(4, 0xfee00000, 1);
	madt_lapic_nmi(1, 5, 1);
	madt_x2apic_nmi(5, 700, 1);
	madt_lapic(0, 0, EN);
	madt_lapic(1, 1, EN);
	madt_x2apic(300, EN, 700);
	t = table_end(&len);
	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
	CHECK_EQ(m->lapic_nmi_count, 2);
	CHECK_EQ(m->lapic_nmis[0].uid, 1);
	CHECK_EQ(m->lapic_nmis[1].uid, 700);
	CHECK_EQ(m->cpu_count, 3);
	CHECK_EQ(m->cpus[2].apic_id, 300);
	CHECK_EQ(msgs.count, 0);
	free(t);
}

/*
 * A server's MADT with more of everything than the kernel keeps: 300
 * x2APIC CPUs, one x2APIC NMI entry each plus ten for all CPUs, 12 IOAPICs.
 */
HOST_TEST(madt_huge_server)
{
	struct madt_info *m = info();
	size_t len;
	uint8_t *t;

	madt_begin(5, 0xfee00000, 0);
	for (uint32_t i = 0; i < 300; i++)
		madt_x2apic(0x100 + i, EN, i);
	for (uint32_t i = 0; i < 12; i++)
		madt_ioapic((uint8_t)i, 0xfec00000 + i * 0x1000U, i * 32U);
	for (uint32_t i = 0; i < 300; i++)
		madt_x2apic_nmi(5, i, 1);
	for (int i = 0; i < 10; i++)
		madt_x2apic_nmi(5, 0xffffffffU, 1);
	t = table_end(&len);
	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
	CHECK_EQ(m->cpu_count, MAX_CPUS);
	CHECK_EQ(m->cpus_dropped, 300 - MAX_CPUS);
	CHECK_EQ(m->cpus[MAX_CPUS - 1].apic_id, 0x100 + MAX_CPUS - 1);
	CHECK_EQ(m->ioapic_count, MADT_MAX_IOAPICS);
	CHECK_EQ(m->ioapics_seen.listed, 12);
	/* 256 for kept CPUs and 10 for all: two over the table's size. */
	CHECK_EQ(m->lapic_nmi_count, MADT_MAX_LAPIC_NMIS);
	CHECK_EQ(m->lapic_nmis_unmatched, 300 - MAX_CPUS);
	CHECK_EQ(m->lapic_nmis_seen.over_limit,
		 MAX_CPUS + 10 - MADT_MAX_LAPIC_NMIS);
	CHECK(said("44 more CPUs than the kernel supports"), "%s", msgs.text);
	CHECK(said("12 IOAPICs, kept 8"), "%s", msgs.text);
	CHECK(said("310 local-APIC NMI entries, kept 264: 44 name no CPU "
		   "kept, 2 over the limit of 264"),
	      "%s", msgs.text);
	CHECK(msgs.count <= 3, "%u lines:\n%s", msgs.count, msgs.text);
	free(t);
}

static void count_ioapic(void *ctx, const struct madt_ioapic *ioapic)
{
	unsigned *seen = ctx;

	/* In table order: entry n has ID n. */
	CHECK_EQ(ioapic->id, *seen);
	CHECK_EQ(ioapic->address, 0xfec00000 + *seen * 0x1000U);
	(*seen)++;
}

/* Every IOAPIC is visited, the ones beyond the limit too, so all are
 * masked; the walk stops where madt_parse stops. */
HOST_TEST(madt_every_ioapic)
{
	uint8_t bad[] = {1, 1};
	unsigned seen = 0;
	size_t len;
	uint8_t *t;

	madt_begin(1, 0xfee00000, 1);
	madt_lapic(0, 0, EN);
	for (uint8_t i = 0; i < 12; i++) {
		madt_ioapic(i, 0xfec00000 + i * 0x1000U, i * 24U);
		madt_lapic_nmi(i, 5, 1);
	}
	t = table_end(&len);
	CHECK_EQ(madt_for_each_ioapic(t, len, count_ioapic, &seen), 12);
	CHECK_EQ(seen, 12);
	free(t);

	madt_begin(1, 0xfee00000, 1);
	madt_ioapic(0, 0xfec00000, 0);
	put(bad, sizeof(bad));
	madt_ioapic(1, 0xfec01000, 24);
	t = table_end(&len);
	seen = 0;
	CHECK_EQ(madt_for_each_ioapic(t, len, count_ioapic, &seen), 1);
	t[len - 1] ^= 1;
	CHECK_EQ(madt_for_each_ioapic(t, len, count_ioapic, &seen), 0);
	free(t);
}

HOST_TEST(madt_bad_tables)
{
	struct madt_info *m = info();
	size_t len;
	uint8_t *t;

	madt_begin(1, 0xfee00000, 1);
	madt_lapic(0, 0, EN);
	t = table_end(&len);
	t[len - 1] ^= 1;
	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), -EINVAL);
	CHECK_EQ(m->cpu_count, 0);
	CHECK_EQ(m->lapic_address, 0);
	CHECK(said("APIC: bad checksum"), "%s", msgs.text);
	t[len - 1] ^= 1;
	/* The buffer one byte short of the length field. */
	fresh();
	CHECK_EQ(madt_parse(t, len - 1, m, collect, &msgs), -EINVAL);
	CHECK(said("length 52"), "%s", msgs.text);
	free(t);

	/* Not a MADT. */
	table_begin("FACP", 1);
	put("\0\0\0\0\0\0\0\0", 8);
	t = table_end(&len);
	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), -EINVAL);
	CHECK(said("expected signature APIC"), "%s", msgs.text);
	free(t);

	/* A header, but no room for the two fixed fields. */
	table_begin("APIC", 1);
	put("\0\0\0\0", 4);
	t = table_end(&len);
	fresh();
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), -EINVAL);
	CHECK(said("shorter than its fixed fields"), "%s", msgs.text);
	free(t);

	/* No entries at all is a valid (if useless) MADT. */
	madt_begin(1, 0xfee00000, 0);
	t = table_end(&len);
	CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
	CHECK_EQ(m->cpu_count, 0);
	free(t);
}

/* Random entries with random lengths: never a read out of bounds. */
HOST_TEST(madt_random)
{
	struct madt_info *m = info();
	size_t len;
	uint8_t *t;

	host_rand_seed(0xac91);
	for (int round = 0; round < 3000; round++) {
		size_t n = host_rand_below(600);

		madt_begin((uint8_t)host_rand_below(7), 0xfee00000, 1);
		for (size_t i = 0; i < n; i++) {
			uint8_t b = (uint8_t)host_rand();

			/* Mostly plausible types and lengths. */
			if (i % 16 == 0 && host_rand_below(4))
				b = (uint8_t)host_rand_below(12);
			else if (i % 16 == 1 && host_rand_below(4))
				b = (uint8_t)(host_rand_below(4) * 4 + 4);
			put(&b, 1);
		}
		t = table_end(&len);
		fresh();
		CHECK_EQ(madt_parse(t, len, m, collect, &msgs), 0);
		CHECK(m->cpu_count <= MAX_CPUS, "%zu CPUs", m->cpu_count);
		for (size_t i = 0; i < m->cpu_count; i++)
			for (size_t j = 0; j < i; j++)
				CHECK(m->cpus[i].apic_id != m->cpus[j].apic_id,
				      "APIC ID %u twice", m->cpus[i].apic_id);
		free(t);
	}
}

/* --- FADT and HPET -------------------------------------------------------- */

#define FADT_V1_LEN 116
#define FADT_V6_LEN 276

/* A FADT of len bytes; x_space 0xff leaves X_PM_TMR_BLK empty. */
static uint8_t *fadt(size_t len, uint32_t pm_tmr_blk, uint8_t pm_tmr_len,
		     uint32_t flags, uint8_t x_space, uint64_t x_address,
		     size_t *out_len)
{
	uint8_t body[FADT_V6_LEN] = {0};

	table_begin("FACP", len >= FADT_V6_LEN ? 6 : 1);
	set32(body + 40, 0x7fe0000); /* DSDT */
	set32(body + 76, pm_tmr_blk);
	body[91] = pm_tmr_len;
	set32(body + 112, flags);
	if (len >= FADT_V6_LEN) {
		set64(body + 140, 0x17fe0000ULL); /* X_DSDT */
		if (x_space != 0xff) {
			body[208] = x_space;
			body[209] = 32;
			body[211] = 3;
			set64(body + 212, x_address);
		}
	}
	put(body + ACPI_HEADER_SIZE, len - ACPI_HEADER_SIZE);
	return table_end(out_len);
}

#define TMR_VAL_EXT (1U << 8)
#define HW_REDUCED  (1U << 20)

HOST_TEST(fadt_pm_timer)
{
	struct fadt_info f;
	size_t len;
	uint8_t *t;

	/* ACPI 1.0: only PM_TMR_BLK. */
	t = fadt(FADT_V1_LEN, 0x608, 4, TMR_VAL_EXT, 0xff, 0, &len);
	fresh();
	CHECK_EQ(fadt_parse(t, len, &f, collect, &msgs), 0);
	CHECK(f.pm_timer, "no timer");
	CHECK_EQ(f.pm_timer_port, 0x608);
	CHECK(f.pm_timer_32bit, "TMR_VAL_EXT lost");
	CHECK(!f.pm_timer_from_x, "no X field in 1.0");
	CHECK_EQ(f.dsdt, 0x7fe0000);
	CHECK_EQ(msgs.count, 0);
	free(t);

	/* ACPI 6: X_PM_TMR_BLK in I/O space wins. */
	t = fadt(FADT_V6_LEN, 0x608, 4, 0, 1, 0xb008, &len);
	fresh();
	CHECK_EQ(fadt_parse(t, len, &f, collect, &msgs), 0);
	CHECK(f.pm_timer && f.pm_timer_from_x, "X_PM_TMR_BLK not used");
	CHECK_EQ(f.pm_timer_port, 0xb008);
	CHECK(!f.pm_timer_32bit, "24-bit timer taken as 32-bit");
	CHECK_EQ(f.dsdt, 0x17fe0000ULL);
	CHECK_EQ(msgs.count, 0);
	free(t);

	/* ACPI 6 with X_PM_TMR_BLK empty: PM_TMR_BLK. */
	t = fadt(FADT_V6_LEN, 0x608, 4, 0, 0xff, 0, &len);
	CHECK_EQ(fadt_parse(t, len, &f, collect, &msgs), 0);
	CHECK(f.pm_timer && !f.pm_timer_from_x, "PM_TMR_BLK not used");
	CHECK_EQ(f.pm_timer_port, 0x608);
	free(t);

	/* X_PM_TMR_BLK in memory space: reported, PM_TMR_BLK used. */
	t = fadt(FADT_V6_LEN, 0x608, 4, 0, 0, 0xfed80000, &len);
	fresh();
	CHECK_EQ(fadt_parse(t, len, &f, collect, &msgs), 0);
	CHECK(f.pm_timer && !f.pm_timer_from_x, "memory-space timer used");
	CHECK_EQ(f.pm_timer_port, 0x608);
	CHECK(said("address space 0"), "%s", msgs.text);
	free(t);

	/* An I/O "port" above 0xffff is no port. */
	t = fadt(FADT_V6_LEN, 0, 4, 0, 1, 0x10000, &len);
	fresh();
	CHECK_EQ(fadt_parse(t, len, &f, collect, &msgs), 0);
	CHECK(!f.pm_timer, "port 0x10000 accepted");
	free(t);
}

HOST_TEST(fadt_no_pm_timer)
{
	struct fadt_info f;
	size_t len;
	uint8_t *t;

	t = fadt(FADT_V1_LEN, 0, 0, 0, 0xff, 0, &len);
	fresh();
	CHECK_EQ(fadt_parse(t, len, &f, collect, &msgs), 0);
	CHECK(!f.pm_timer, "timer at port 0");
	CHECK_EQ(msgs.count, 0);
	free(t);

	/* Hardware-reduced ACPI: the fields are ignored. */
	t = fadt(FADT_V6_LEN, 0x608, 4, HW_REDUCED, 1, 0xb008, &len);
	CHECK_EQ(fadt_parse(t, len, &f, collect, &msgs), 0);
	CHECK(!f.pm_timer && f.hw_reduced, "timer on reduced hardware");
	free(t);

	/* PM_TMR_LEN must be 4. */
	t = fadt(FADT_V1_LEN, 0x608, 3, 0, 0xff, 0, &len);
	fresh();
	CHECK_EQ(fadt_parse(t, len, &f, collect, &msgs), 0);
	CHECK(!f.pm_timer, "PM_TMR_LEN 3 accepted");
	CHECK(said("PM_TMR_LEN is 3"), "%s", msgs.text);
	free(t);

	/* A FADT cut before PM_TMR_BLK. */
	t = fadt(60, 0x608, 4, 0, 0xff, 0, &len);
	fresh();
	CHECK_EQ(fadt_parse(t, len, &f, collect, &msgs), 0);
	CHECK(!f.pm_timer, "timer read past the table");
	CHECK_EQ(f.dsdt, 0x7fe0000);
	free(t);

	/* A bad checksum. */
	t = fadt(FADT_V1_LEN, 0x608, 4, 0, 0xff, 0, &len);
	t[100] ^= 1;
	fresh();
	CHECK_EQ(fadt_parse(t, len, &f, collect, &msgs), -EINVAL);
	CHECK(!f.pm_timer, "timer from a bad table");
	CHECK(said("FACP: bad checksum"), "%s", msgs.text);
	free(t);
}

static uint8_t *hpet(size_t len, uint8_t space, uint64_t base, size_t *out)
{
	uint8_t body[56] = {0};

	table_begin("HPET", 1);
	set32(body + 36, 0x8086a201);
	body[40] = space;
	body[41] = 64;
	set64(body + 44, base);
	body[52] = 0;
	set16(body + 53, 128);
	put(body + ACPI_HEADER_SIZE, len - ACPI_HEADER_SIZE);
	return table_end(out);
}

HOST_TEST(hpet_table)
{
	struct hpet_info h;
	size_t len;
	uint8_t *t;

	t = hpet(56, 0, 0xfed00000, &len);
	fresh();
	CHECK_EQ(hpet_parse(t, len, &h, collect, &msgs), 0);
	CHECK_EQ(h.base, 0xfed00000);
	CHECK_EQ(h.block_id, 0x8086a201);
	CHECK_EQ(h.min_tick, 128);
	CHECK_EQ(msgs.count, 0);
	free(t);

	/* Registers in I/O space: rejected. */
	t = hpet(56, 1, 0xfed00000, &len);
	fresh();
	CHECK_EQ(hpet_parse(t, len, &h, collect, &msgs), -EINVAL);
	CHECK_EQ(h.base, 0);
	CHECK(said("address space 1, not memory"), "%s", msgs.text);
	free(t);

	t = hpet(56, 0, 0, &len);
	fresh();
	CHECK_EQ(hpet_parse(t, len, &h, collect, &msgs), -EINVAL);
	CHECK(said("base address 0"), "%s", msgs.text);
	free(t);

	/* Too short for the base address. */
	t = hpet(50, 0, 0xfed00000, &len);
	fresh();
	CHECK_EQ(hpet_parse(t, len, &h, collect, &msgs), -EINVAL);
	CHECK(said("needs 56"), "%s", msgs.text);
	free(t);
}

/* --- DMAR ----------------------------------------------------------------- */

/* A DMAR of len bytes (48 for the fixed part) with these flags and one
 * DRHD remapping unit after the fixed part when len allows. */
static uint8_t *dmar(size_t len, uint8_t flags, size_t *out)
{
	uint8_t body[64] = {0};

	table_begin("DMAR", 1);
	body[36] = 38; /* 39-bit DMA addresses */
	body[37] = flags;
	set16(body + 48, 0);  /* DRHD */
	set16(body + 50, 16); /* its length */
	set64(body + 56, 0xfed90000);
	put(body + ACPI_HEADER_SIZE, len - ACPI_HEADER_SIZE);
	return table_end(out);
}

HOST_TEST(dmar_flags)
{
	struct dmar_info d;
	size_t len;
	uint8_t *t;

	/* Opt-out with interrupt remapping, as firmware sets it. */
	t = dmar(64, 0x3, &len);
	fresh();
	CHECK_EQ(dmar_parse(t, len, &d, collect, &msgs), 0);
	CHECK(d.x2apic_opt_out, "X2APIC_OPT_OUT lost");
	CHECK(d.intr_remap, "INTR_REMAP lost");
	CHECK(!d.dma_ctrl_opt_in, "DMA_CTRL_PLATFORM_OPT_IN invented");
	CHECK_EQ(d.host_address_width, 38);
	CHECK_EQ(msgs.count, 0);
	free(t);

	/* Each flag alone. */
	t = dmar(64, 0x2, &len);
	CHECK_EQ(dmar_parse(t, len, &d, collect, &msgs), 0);
	CHECK(d.x2apic_opt_out && !d.intr_remap, "opt-out alone");
	free(t);
	t = dmar(64, 0x1, &len);
	CHECK_EQ(dmar_parse(t, len, &d, collect, &msgs), 0);
	CHECK(!d.x2apic_opt_out && d.intr_remap, "remapping alone");
	free(t);

	/* Flags clear; only the fixed part. */
	t = dmar(DMAR_MIN_SIZE, 0x4, &len);
	CHECK_EQ(dmar_parse(t, len, &d, collect, &msgs), 0);
	CHECK(!d.x2apic_opt_out && !d.intr_remap, "flags invented");
	CHECK(d.dma_ctrl_opt_in, "DMA_CTRL_PLATFORM_OPT_IN lost");
	free(t);

	/* A bad checksum: the opt-out is not believed. */
	t = dmar(64, 0x2, &len);
	t[40] ^= 1;
	fresh();
	CHECK_EQ(dmar_parse(t, len, &d, collect, &msgs), -EINVAL);
	CHECK(!d.x2apic_opt_out, "opt-out from a bad table");
	CHECK(said("DMAR: bad checksum"), "%s", msgs.text);
	free(t);

	/* Too short to hold the flags. */
	t = dmar(37, 0, &len);
	fresh();
	CHECK_EQ(dmar_parse(t, len, &d, collect, &msgs), -EINVAL);
	CHECK(said("DMAR: length 37, needs 48"), "%s", msgs.text);
	free(t);

	/* A length field past the buffer. */
	t = dmar(64, 0x2, &len);
	fresh();
	CHECK_EQ(dmar_parse(t, len - 8, &d, collect, &msgs), -EINVAL);
	CHECK(!d.x2apic_opt_out, "opt-out read past the buffer");
	CHECK(said("length 64"), "%s", msgs.text);
	free(t);
}
