/* SPDX-License-Identifier: MIT */
/*
 * Where each CPU sits: its APIC ID, the package, core and SMT thread it is,
 * and on a hybrid Intel part whether it is a performance or an efficient
 * core. Shootdown targets are CPU indices; this says what an index is, so
 * that a benchmark can pick a target on another core (SMT siblings share
 * one TLB) and its results can name the cores they ran on (docs/bench.md).
 */
#ifndef CPU_TOPOLOGY_H
#define CPU_TOPOLOGY_H

#include "cpu/cpu.h"
#include "lib/types.h"

/* Where the decoding found the topology. */
enum cpu_topology_source {
	CPU_TOPOLOGY_LEAF_1F, /* Intel V2 extended topology */
	CPU_TOPOLOGY_LEAF_B,  /* extended topology (Intel, recent AMD) */
	CPU_TOPOLOGY_AMD,     /* AMD 0x8000001E with 0x80000008 */
	CPU_TOPOLOGY_LEGACY,  /* leaf 1's APIC ID, leaf 4's core count */
	CPU_TOPOLOGY_SOURCES,
};

/* A hybrid part's core type (CPUID 0x1A); NONE on every other CPU. */
enum cpu_core_type {
	CPU_CORE_NONE,
	CPU_CORE_PERFORMANCE, /* "Core" in Intel's words: a P-core */
	CPU_CORE_EFFICIENT,   /* "Atom": an E-core */
	CPU_CORE_UNKNOWN,     /* hybrid, a type this code does not know */
	CPU_CORE_TYPES,
};

struct cpu_topology {
	uint32_t apic_id;     /* the x2APIC ID where a topology leaf has one */
	uint32_t package;     /* the APIC ID above the package shift */
	uint32_t core;	      /* the core within its package */
	uint32_t thread;      /* the SMT thread within its core */
	uint8_t smt_bits;     /* APIC ID bits that number a core's threads */
	uint8_t package_bits; /* bits that number a package's threads */
	enum cpu_topology_source source;
	enum cpu_core_type type;
};

/* "0x1f", "0xb", "amd", "legacy"; "P", "E", "-" (not hybrid), "?". */
extern const char *const cpu_topology_source_names[CPU_TOPOLOGY_SOURCES];
extern const char *const cpu_core_type_names[CPU_CORE_TYPES];

/*
 * Decodes the topology of the CPU whose CPUID `read` answers for (cpu/
 * topology_decode.c): pure logic, so host tests feed it crafted leaves.
 */
void cpu_topology_decode(struct cpu_topology *t, cpuid_reader read);

/* Whether a and b are two threads of one core (never a CPU with itself). */
bool cpu_topology_siblings(const struct cpu_topology *a,
			   const struct cpu_topology *b);

/*
 * Reads this CPU's topology into the table under its index: each CPU once,
 * at bring-up, before it announces that it is online (the announcement's
 * release publishes the entry to whoever reads it after seeing the CPU
 * online).
 */
void cpu_topology_read_this_cpu(unsigned index);

/* CPU index's topology, as it read it (index < cpu_count). */
const struct cpu_topology *cpu_topology_of(unsigned index);

#endif
