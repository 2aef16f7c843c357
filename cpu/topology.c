// SPDX-License-Identifier: MIT
/*
 * Each CPU's topology, read by the CPU itself: CPUID answers for the CPU
 * that executes it, so the boot CPU cannot read the others' (cpu/
 * topology.h).
 */
#include "cpu/topology.h"
#include "arch/x86.h"
#include "sync/cpumask.h"

/* Each entry written once, by its own CPU, before it is online. */
static struct cpu_topology table[MAX_CPUS];

static struct cpuid_regs cpuid_instruction(uint32_t leaf, uint32_t subleaf)
{
	return cpuid(leaf, subleaf);
}

void cpu_topology_read_this_cpu(unsigned index)
{
	cpu_topology_decode(&table[index], cpuid_instruction);
}

const struct cpu_topology *cpu_topology_of(unsigned index)
{
	return &table[index];
}
