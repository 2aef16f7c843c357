// SPDX-License-Identifier: MIT
/*
 * Faults taken on purpose through the exception table (arch/probe.asm):
 * the kernel survives them and describes them correctly.
 */
#include "tests/ktest.h"
#include "arch/extable.h"
#include "lib/string.h"
#include "trap/trap.h"
#include "mm/kmap.h"

extern char kernel_text_start[];

static bool report_has(const char *needle)
{
	return strstr(trap_last_recovered(), needle) != NULL;
}

KTEST(TRAP0001, trap, "a page fault is reported with vector, CR2 and RIP")
{
	/* Unmapped: user half, and the kernel page tables map no user pages. */
	uint64_t *bad = (uint64_t *)0x0000000000dead000ULL;
	uint64_t before = trap_recovered_count(), value = 0;
	int err = probe_read_u64(bad, &value);

	if (!KEXPECT(err == -14, "probe_read_u64 returned %d", err))
		return;
	KEXPECT(trap_recovered_count() == before + 1, "fault not counted");
	ktest_note("report: %s", trap_last_recovered());
	KEXPECT(report_has("#PF page fault (vector 14)"), "no vector");
	KEXPECT(report_has("cr2=0xdead000"), "wrong or missing CR2");
	KEXPECT(report_has("read of a page not present in kernel mode"),
		"error code not decoded");
	KEXPECT(report_has("<probe_read_u64+0"), "RIP symbol missing");
}

KTEST(TRAP0002, trap,
      "a non-canonical address raises a general-protection fault")
{
	uint64_t value;
	int err = probe_read_u64((void *)0x8000000000000000ULL, &value);

	KEXPECT(err == -14, "probe_read_u64 returned %d", err);
	KEXPECT(report_has("#GP general protection (vector 13)"), "report: %s",
		trap_last_recovered());
}

KTEST(TRAP0003, trap, "writing kernel text faults (CR0.WP, read-only text)")
{
	int err = probe_write_u64(kernel_text_start, 0);

	KEXPECT(err == -14, "a write to text succeeded (returned %d)", err);
	KEXPECT(report_has("write violating page protection in kernel mode"),
		"report: %s", trap_last_recovered());
}

KTEST(TRAP0004, trap, "touching the boot stack guard page faults")
{
	uint64_t value;
	int err = probe_read_u64((void *)kmap_boot_stack_guard(), &value);

	KEXPECT(err == -14, "the guard page is readable (returned %d)", err);
	KEXPECT(report_has("#PF"), "report: %s", trap_last_recovered());
}
