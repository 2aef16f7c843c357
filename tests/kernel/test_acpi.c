// SPDX-License-Identifier: MIT
/* The ACPI tables the firmware gave this machine, as acpi_init found them. */
#include "tests/ktest.h"
#include "acpi/acpi.h"
#include "apic/lapic.h"
#include "cpu/cpu.h"
#include "lib/format.h"
#include "lib/string.h"
#include "arch/x86.h"

#define CPUID_TOPOLOGY	  0xb
#define APIC_BASE_ADDRESS 0xfffffffffffff000ULL /* MSR bits 12 and up */
#define PM_TIMER_TRIES	  1000000 /* reads; the timer ticks every 279 ns */

static void note(void *ctx, const char *fmt, ...)
{
	char line[160];
	va_list ap;

	(void)ctx;
	va_start(ap, fmt);
	/* ktest_note takes a format, not a va_list: format here first. */
	kvsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	ktest_note("%s", line);
}

/*
 * This CPU's initial APIC ID: the 32-bit x2APIC ID from the topology leaf
 * when the CPU has it (its EBX is 0 otherwise), else the 8-bit xAPIC ID.
 */
static uint32_t initial_apic_id(void)
{
	if (boot_cpu.max_leaf >= CPUID_TOPOLOGY) {
		struct cpuid_regs r = cpuid(CPUID_TOPOLOGY, 0);

		if (r.ebx & 0xffff)
			return r.edx;
	}
	return cpuid(1, 0).ebx >> 24;
}

static const struct madt_info *madt_or_fail(struct ktest_context *t)
{
	const struct madt_info *madt = acpi_madt();

	KEXPECT(madt, "acpi_init found no usable MADT");
	return madt;
}

KTEST(ACPI0001, acpi, "the RSDP was found and is valid")
{
	const struct acpi_rsdp_found *r = acpi_rsdp();
	const struct acpi_table *root = acpi_table_get(0);
	struct acpi_rsdp_info again;

	if (!KEXPECT(r, "no RSDP"))
		return;
	ktest_note("RSDP at %#llx from %s, revision %u",
		   (unsigned long long)r->phys, r->source, r->info.revision);
	KEXPECT(acpi_rsdp_parse(r->bytes, r->size, &again, note, NULL) == 0,
		"the saved copy of the RSDP does not validate");
	KEXPECT(again.rsdt == r->info.rsdt && again.xsdt == r->info.xsdt,
		"parsed again: RSDT %#llx XSDT %#llx",
		(unsigned long long)again.rsdt, (unsigned long long)again.xsdt);
	if (!KEXPECT(root, "no root table"))
		return;
	KEXPECT(!strcmp(root->signature, r->using_xsdt ? "XSDT" : "RSDT"),
		"first table is %s", root->signature);
	KEXPECT(root->phys == (r->using_xsdt ? r->info.xsdt : r->info.rsdt),
		"root table at %#llx", (unsigned long long)root->phys);
}

KTEST(ACPI0002, acpi, "every listed table passes its checksum")
{
	size_t n = acpi_table_count();

	KEXPECT(n >= 2, "only %zu tables (want a root table and a MADT)", n);
	for (size_t i = 0; i < n; i++) {
		const struct acpi_table *tbl = acpi_table_get(i);
		struct acpi_header h;

		acpi_header_read(tbl->virt, &h);
		KEXPECT(!strcmp(h.signature, tbl->signature) &&
				h.length == tbl->length,
			"table %zu changed: %s %u bytes, listed as %s %u", i,
			h.signature, h.length, tbl->signature, tbl->length);
		KEXPECT(acpi_checksum_ok(tbl->virt, tbl->length),
			"%s at %#llx: bad checksum", tbl->signature,
			(unsigned long long)tbl->phys);
	}
}

KTEST(ACPI0003, acpi, "the MADT lists this CPU, enabled")
{
	const struct madt_info *madt = madt_or_fail(t);
	uint32_t id = initial_apic_id();
	bool found = false;

	if (!madt)
		return;
	for (size_t i = 0; i < madt->cpu_count; i++) {
		if (madt->cpus[i].apic_id != id)
			continue;
		found = true;
		KEXPECT(madt->cpus[i].enabled, "APIC ID %u listed, not enabled",
			id);
	}
	KEXPECT(found, "APIC ID %u (this CPU) not in the MADT's %zu CPUs", id,
		madt->cpu_count);
	KEXPECT(madt->cpus_enabled >= 1, "no enabled CPU");
}

KTEST(ACPI0004, acpi, "the boot CPU appears once; APIC IDs are unique")
{
	const struct madt_info *madt = madt_or_fail(t);
	uint32_t id = initial_apic_id();
	size_t seen = 0;

	if (!madt)
		return;
	for (size_t i = 0; i < madt->cpu_count; i++) {
		seen += madt->cpus[i].apic_id == id;
		for (size_t j = 0; j < i; j++)
			KEXPECT(madt->cpus[i].apic_id != madt->cpus[j].apic_id,
				"APIC ID %u listed twice",
				madt->cpus[i].apic_id);
	}
	KEXPECT(seen == 1, "boot CPU (APIC ID %u) listed %zu times", id, seen);
}

KTEST(ACPI0005, acpi, "the MADT lists an IOAPIC")
{
	const struct madt_info *madt = madt_or_fail(t);

	if (!madt)
		return;
	if (!madt->ioapic_count) {
		ktest_skip(t, "the MADT lists no IOAPIC");
		return;
	}
	for (size_t i = 0; i < madt->ioapic_count; i++)
		KEXPECT(madt->ioapics[i].address &&
				IS_ALIGNED(madt->ioapics[i].address, 16),
			"IOAPIC %u at %#x", madt->ioapics[i].id,
			madt->ioapics[i].address);
}

KTEST(ACPI0006, acpi, "the MADT's local APIC address is IA32_APIC_BASE's")
{
	const struct madt_info *madt = madt_or_fail(t);
	uint64_t mask =
		APIC_BASE_ADDRESS & ((1ULL << boot_cpu.phys_addr_bits) - 1);
	uint64_t msr = rdmsr(MSR_APIC_BASE) & mask;

	if (!madt)
		return;
	KEXPECT(madt->lapic_address == msr, "MADT %#llx, MSR %#llx",
		(unsigned long long)madt->lapic_address,
		(unsigned long long)msr);
}

KTEST(ACPI0007, acpi, "the ACPI PM timer counts")
{
	uint16_t port;
	bool wide;
	uint32_t mask, first, now = 0;
	long tries;

	if (!acpi_pm_timer(&port, &wide)) {
		ktest_skip(t, "the FADT names no PM timer");
		return;
	}
	mask = wide ? 0xffffffffU : 0xffffffU;
	first = inl(port) & mask;
	for (tries = 0; tries < PM_TIMER_TRIES; tries++) {
		now = inl(port) & mask;
		if (now != first)
			break;
	}
	KEXPECT(now != first, "port %#x stuck at %#x after %d reads", port,
		first, PM_TIMER_TRIES);
}

KTEST(ACPI0008, acpi, "acpi_find_table: first match, NULL for unknown")
{
	size_t len = 0;
	const void *p = acpi_find_table("APIC", &len);
	const struct acpi_table *first = NULL;

	for (size_t i = 0; i < acpi_table_count() && !first; i++) {
		if (!strcmp(acpi_table_get(i)->signature, "APIC"))
			first = acpi_table_get(i);
	}
	if (KEXPECT(p && first, "no MADT"))
		KEXPECT(p == first->virt && len == first->length,
			"found %p (%zu bytes), listed %p (%u bytes)", p, len,
			first->virt, first->length);
	KEXPECT(!acpi_find_table("ZZZZ", &len), "found a ZZZZ table");
}

KTEST(ACPI0009, acpi, "a search of the BIOS areas finds the same RSDP")
{
	static struct acpi_rsdp_found found; /* 100+ bytes: off the stack */
	const struct acpi_rsdp_found *r = acpi_rsdp();

	if (!acpi_search_bios_areas(&found)) {
		ktest_skip(t, "no RSDP in the BIOS areas (UEFI firmware?)");
		return;
	}
	ktest_note("RSDP at %#llx in the %s", (unsigned long long)found.phys,
		   found.source);
	if (!KEXPECT(r, "acpi_init found no RSDP, the search did"))
		return;
	KEXPECT(found.info.rsdt == r->info.rsdt,
		"search: RSDT %#llx; acpi_init: %#llx",
		(unsigned long long)found.info.rsdt,
		(unsigned long long)r->info.rsdt);
	KEXPECT(!found.info.xsdt || !r->info.xsdt ||
			found.info.xsdt == r->info.xsdt,
		"search: XSDT %#llx; acpi_init: %#llx",
		(unsigned long long)found.info.xsdt,
		(unsigned long long)r->info.xsdt);
}

/*
 * The APIC mode for each combination that matters: the DMAR's opt-out
 * keeps xAPIC, unless the firmware already left x2APIC on. Pure, so it
 * runs on every machine; emulators here have no DMAR that opts out.
 */
KTEST(ACPI0010, acpi, "the APIC mode honours the DMAR's x2APIC opt-out")
{
	static const struct {
		struct lapic_mode_facts facts;
		enum lapic_mode mode;
		const char *why; /* words the reason must hold */
	} cases[] = {
		{{.cpu_x2apic = true, .allow_x2apic = true},
		 LAPIC_X2APIC,
		 "has"},
		{{.cpu_x2apic = true,
		  .allow_x2apic = true,
		  .dmar_opt_out = true},
		 LAPIC_XAPIC,
		 "DMAR"},
		{{.cpu_x2apic = true,
		  .firmware_x2apic = true,
		  .allow_x2apic = true,
		  .dmar_opt_out = true},
		 LAPIC_X2APIC,
		 "cannot be honoured"},
		{{.cpu_x2apic = true, .firmware_x2apic = true},
		 LAPIC_X2APIC,
		 "x2apic=off cannot"},
		{{.cpu_x2apic = true}, LAPIC_XAPIC, "x2apic=off"},
		{{.allow_x2apic = true, .dmar_opt_out = true},
		 LAPIC_XAPIC,
		 "no x2APIC"},
	};
	const struct dmar_info *dmar = acpi_dmar();

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		enum lapic_mode mode;
		const char *why = lapic_choose_mode(&cases[i].facts, &mode);

		KEXPECT(mode == cases[i].mode && strstr(why, cases[i].why),
			"case %zu: mode %d, \"%s\"", i, mode, why);
	}
	if (dmar)
		ktest_note("this machine's DMAR: x2APIC opt-out %s; mode %s",
			   dmar->x2apic_opt_out ? "set" : "clear",
			   lapic_mode_name());
}
