// SPDX-License-Identifier: MIT
/*
 * The grade's record of how each AP was started (apic/startup_probe.h):
 * the injection kernel's alone. Only the boot CPU sends INIT and STARTUP,
 * and only while it starts the others, so the record needs no lock.
 */
#include "apic/startup_probe.h"
#include "apic/lapic.h"
#include "apic/tsc.h"
#include "console/kprintf.h"
#include "lib/format.h"
#include "sync/cpumask.h"

/* More IPIs than a start-up sends one CPU (INIT, two STARTUPs, INIT). */
#define PROBE_IPIS_MAX	6
#define PROBE_IPIS_TEXT 160

enum answer { ANSWER_UNKNOWN, ANSWER_YES, ANSWER_NO };

struct probe_ipi {
	bool startup; /* else INIT */
	uint64_t tsc; /* read after the ICR write */
};

struct probe_cpu {
	uint32_t apic_id;
	size_t count;
	bool overflow; /* more IPIs than PROBE_IPIS_MAX */
	enum answer answered;
	struct probe_ipi ipis[PROBE_IPIS_MAX];
};

static struct probe_cpu record[MAX_CPUS];
static size_t record_count;
/* The CPU that got the latest STARTUP, until the boot CPU moves on. */
static struct probe_cpu *started;

static struct probe_cpu *cpu_record(uint32_t apic_id)
{
	for (size_t i = 0; i < record_count; i++)
		if (record[i].apic_id == apic_id)
			return &record[i];
	if (record_count == MAX_CPUS)
		return NULL;
	record[record_count].apic_id = apic_id;
	return &record[record_count++];
}

void startup_probe_ipi(uint32_t destination, uint32_t command)
{
	uint32_t mode = command & ICR_DELIVERY_MODE;
	uint64_t now;
	struct probe_cpu *c;

	if (mode != ICR_INIT && mode != ICR_STARTUP)
		return;
	now = tsc_read_ordered();
	c = cpu_record(destination);
	if (!c)
		return;
	if (mode == ICR_STARTUP)
		started = c;
	if (c->count == PROBE_IPIS_MAX) {
		c->overflow = true;
		return;
	}
	c->ipis[c->count++] = (struct probe_ipi){mode == ICR_STARTUP, now};
}

void startup_probe_moved_on(bool answered)
{
	if (started && started->answered == ANSWER_UNKNOWN)
		started->answered = answered ? ANSWER_YES : ANSWER_NO;
	started = NULL;
}

/* How long the first STARTUP of c came after the INIT before it. */
static const char *init_wait(const struct probe_cpu *c, uint64_t wait_ns)
{
	const struct probe_ipi *init = NULL;

	for (size_t i = 0; i < c->count; i++) {
		if (!c->ipis[i].startup) {
			init = &c->ipis[i];
			continue;
		}
		if (!init)
			return "none";
		/* The ticks tsc_delay_ns(wait_ns) waits at least. */
		return c->ipis[i].tsc - init->tsc >= ns_to_tsc(wait_ns)
			       ? "ok"
			       : "short";
	}
	return "none";
}

/* Microseconds from IPI a to IPI b, for a reader of the line. */
static unsigned long long us_between(const struct probe_ipi *a,
				     const struct probe_ipi *b)
{
	return tsc_to_ns(b->tsc - a->tsc) / NSEC_PER_USEC;
}

/* c's IPIs as apic/startup_probe.h spells them. */
static void format_ipis(const struct probe_cpu *c, char *buf, size_t size)
{
	size_t at = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < c->count && at < size; i++) {
		const struct probe_ipi *p = &c->ipis[i];

		at += ksnprintf(buf + at, size - at, "%s%s", i ? "," : "",
				p->startup ? "STARTUP" : "INIT");
		if (i && at < size)
			at += ksnprintf(buf + at, size - at, "+%lluus",
					us_between(p - 1, p));
	}
	if (c->overflow && at < size)
		ksnprintf(buf + at, size - at, ",...");
}

void startup_probe_report(uint64_t init_wait_ns)
{
	static const char *const answers[] = {[ANSWER_UNKNOWN] = "-",
					      [ANSWER_YES] = "yes",
					      [ANSWER_NO] = "no"};
	char ipis[PROBE_IPIS_TEXT];

	for (size_t i = 0; i < record_count; i++) {
		const struct probe_cpu *c = &record[i];

		format_ipis(c, ipis, sizeof(ipis));
		kprintf("smp: probe apic_id=%u ipis=%s init_wait=%s "
			"answered=%s\n",
			c->apic_id, ipis, init_wait(c, init_wait_ns),
			answers[c->answered]);
	}
}
