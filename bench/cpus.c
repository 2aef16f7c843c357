// SPDX-License-Identifier: MIT
/*
 * Which CPUs the benchmarks use (bench/cpus.h), from the topology each CPU
 * read at bring-up (cpu/topology.h).
 */
#include "bench/cpus.h"
#include "bench/fixture.h"
#include "console/kprintf.h"
#include "cpu/percpu.h"
#include "cpu/topology.h"
#include "lib/format.h"
#include "lib/string.h"
#include "trap/panic.h"

/* Every CPU but the measuring one, other cores first; set per run. */
static unsigned order[MAX_CPUS];
static unsigned order_count;

static bool siblings(unsigned a, unsigned b)
{
	return cpu_topology_siblings(cpu_topology_of(a), cpu_topology_of(b));
}

void bench_cpus_choose(void)
{
	order_count = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned cpu = 0; cpu < cpu_count; cpu++) {
			bool sibling = siblings(cpu, MEASURING_CPU);

			if (cpu != MEASURING_CPU && sibling == (pass == 1))
				order[order_count++] = cpu;
		}
	}
}

unsigned bench_other_cpu(void)
{
	/* With one CPU no benchmark starts anything on another. */
	return order_count ? order[0] : MEASURING_CPU;
}

enum bench_other_kind bench_other_kind(void)
{
	if (!order_count)
		return BENCH_OTHER_NONE;
	return siblings(order[0], MEASURING_CPU) ? BENCH_OTHER_SIBLING
						 : BENCH_OTHER_CORE;
}

unsigned bench_target_cpu(unsigned i)
{
	KASSERT(i < order_count, "target %u of %u", i, order_count);
	return order[i];
}

const char *bench_other_describe(char *buf)
{
	unsigned cpu = bench_other_cpu();

	if (bench_other_kind() == BENCH_OTHER_NONE) {
		strlcpy(buf, "no other CPU", BENCH_OTHER_TEXT_MAX);
		return buf;
	}
	ksnprintf(buf, BENCH_OTHER_TEXT_MAX, "CPU %u (APIC %u, %s)", cpu,
		  cpu_topology_of(cpu)->apic_id,
		  bench_other_kind() == BENCH_OTHER_CORE
			  ? "other core"
			  : "SMT sibling, no other core");
	return buf;
}

/* --- Text ----------------------------------------------------------------------- */

/* Text appended to a buffer, cut at its end (as ksnprintf cuts). */
struct text {
	char *buf;
	size_t size, used;
};

static void __printf(2, 3) append(struct text *t, const char *fmt, ...)
{
	va_list ap;
	size_t at = MIN(t->used, t->size - 1);

	va_start(ap, fmt);
	t->used = at + (size_t)kvsnprintf(t->buf + at, t->size - at, fmt, ap);
	va_end(ap);
}

/*
 * A list of numbers, runs of consecutive ones as `a-b`: "0,2-5". The
 * values come from value(list[i]) for i < n.
 */
static void append_list(struct text *t, const unsigned *list, size_t n,
			uint32_t (*value)(unsigned))
{
	for (size_t i = 0; i < n;) {
		size_t j = i;

		while (j + 1 < n && value(list[j + 1]) == value(list[j]) + 1)
			j++;
		append(t, "%s%u", i ? "," : "", value(list[i]));
		if (j > i)
			append(t, "-%u", value(list[j]));
		i = j + 1;
	}
}

static uint32_t index_of(unsigned cpu)
{
	return cpu;
}

static uint32_t apic_of(unsigned cpu)
{
	return cpu_topology_of(cpu)->apic_id;
}

static bool machine_hybrid(void)
{
	for (unsigned cpu = 0; cpu < cpu_count; cpu++) {
		if (cpu_topology_of(cpu)->type != CPU_CORE_NONE)
			return true;
	}
	return false;
}

static bool machine_smt(void)
{
	for (unsigned a = 0; a < cpu_count; a++) {
		for (unsigned b = a + 1; b < cpu_count; b++) {
			if (siblings(a, b))
				return true;
		}
	}
	return false;
}

/*
 * The cores of the listed CPUs that more than one of them shares: each as
 * its CPUs joined with `+`, "0+1,4+5"; "none" when every one has its own.
 */
static void append_shared(struct text *t, const unsigned *list, size_t n)
{
	bool any = false;

	for (size_t i = 0; i < n; i++) {
		bool first_of_core = true, shared = false;

		for (size_t j = 0; j < n; j++) {
			if (j < i && siblings(list[j], list[i]))
				first_of_core = false;
			if (j != i && siblings(list[j], list[i]))
				shared = true;
		}
		if (!first_of_core || !shared)
			continue;
		append(t, "%s%u", any ? "," : "", list[i]);
		for (size_t j = i + 1; j < n; j++) {
			if (siblings(list[j], list[i]))
				append(t, "+%u", list[j]);
		}
		any = true;
	}
	if (!any)
		append(t, "none");
}

void bench_cpus_format(unsigned first, const struct cpumask *others, char *buf,
		       size_t size)
{
	static unsigned list[MAX_CPUS];
	struct text t = {buf, size, 0};
	size_t n = 0;

	list[n++] = first;
	for (unsigned cpu = 0; others && cpu < cpu_count; cpu++) {
		if (cpu != first && cpumask_test(others, cpu))
			list[n++] = cpu;
	}
	append(&t, "cpus=");
	append_list(&t, list, n, index_of);
	append(&t, " apic=");
	append_list(&t, list, n, apic_of);
	append(&t, " types=");
	if (!machine_hybrid())
		append(&t, "-");
	for (size_t i = 0; i < n && machine_hybrid(); i++)
		append(&t, "%s",
		       cpu_core_type_names[cpu_topology_of(list[i])->type]);
	append(&t, " smt=");
	append_shared(&t, list, n);
}

void bench_cpus_env(char *buf, size_t size)
{
	static const char *const kinds[] = {
		[BENCH_OTHER_CORE] = "other",
		[BENCH_OTHER_SIBLING] = "sibling",
		[BENCH_OTHER_NONE] = "none",
	};
	struct text t = {buf, size, 0};

	append(&t, "smt=%s hybrid=%s", machine_smt() ? "on" : "off",
	       machine_hybrid() ? "on" : "off");
	if (bench_other_kind() == BENCH_OTHER_NONE)
		append(&t, " target_cpu=- target_apic=-");
	else
		append(&t, " target_cpu=%u target_apic=%u", bench_other_cpu(),
		       apic_of(bench_other_cpu()));
	append(&t, " target_core=%s", kinds[bench_other_kind()]);
}

void bench_cpus_report(void)
{
	static char line[BENCH_CPU_FIELDS_MAX];

	for (unsigned cpu = 0; cpu < cpu_count; cpu++) {
		const struct cpu_topology *c = cpu_topology_of(cpu);
		struct text t = {line, sizeof(line), 0};
		bool any = false;

		for (unsigned other = 0; other < cpu_count; other++) {
			if (siblings(cpu, other)) {
				append(&t, "%s%u", any ? "," : "", other);
				any = true;
			}
		}
		kprintf("bench: cpu %u apic=%u package=%u core=%u thread=%u "
			"type=%s siblings=%s topology=%s\n",
			cpu, c->apic_id, c->package, c->core, c->thread,
			cpu_core_type_names[c->type], any ? line : "-",
			cpu_topology_source_names[c->source]);
	}
}
