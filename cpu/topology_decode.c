// SPDX-License-Identifier: MIT
/*
 * CPU topology, decoded from CPUID: the leaves come from a reader, the
 * CPUID instruction on the CPU itself (cpu/topology.c) or crafted tables in
 * the host tests (tests/host/test_cpu_topology.c).
 *
 * Every method ends in the same three numbers. An APIC ID is a bit field:
 * its low smt_bits number the threads of a core, the bits up to
 * package_bits number the cores of a package, the rest the package. Two
 * CPUs are SMT siblings when only their low smt_bits differ. The methods,
 * best first (Intel SDM Vol. 3A, "Identifying Topology Levels"; AMD APM
 * Vol. 3, Appendix E.4):
 *   0x1F, 0xB  extended topology: one subleaf per level, each giving the
 *              shift to the next level and the full 32-bit x2APIC ID;
 *   AMD        0x8000001E: the extended APIC ID and threads per core, with
 *              0x80000008's APIC ID size of a package (Zen before leaf 0xB);
 *   legacy     leaf 1's 8-bit APIC ID and logical CPU count, and leaf 4's
 *              core count (Intel) or 0x80000008's (AMD).
 */
#include "cpu/topology.h"
#include "arch/x86.h"
#include "lib/string.h"

#define LEAF_VENDOR	  0x00000000U
#define LEAF_FEATURES	  0x00000001U
#define LEAF_CACHE_PARAMS 0x00000004U
#define LEAF_EXT7	  0x00000007U
#define LEAF_TOPOLOGY	  0x0000000bU
#define LEAF_HYBRID	  0x0000001aU
#define LEAF_TOPOLOGY_V2  0x0000001fU
#define LEAF_EXT_MAX	  0x80000000U
#define LEAF_EXT_FEATURES 0x80000001U
#define LEAF_ADDR_SIZES	  0x80000008U
#define LEAF_AMD_TOPOLOGY 0x8000001eU

#define F1_EBX_APIC_ID(ebx)	 ((ebx) >> 24)
#define F1_EBX_LOGICAL(ebx)	 (((ebx) >> 16) & 0xff)
#define F1_EDX_HTT		 (1U << 28)
#define F4_EAX_CORES(eax)	 ((((eax) >> 26) & 0x3f) + 1)
#define F7_EDX_HYBRID		 (1U << 15)
#define FX_ECX_TOPOEXT		 (1U << 22)
#define FA_ECX_THREADS(ecx)	 (((ecx)&0xff) + 1)
#define FA_ECX_APIC_ID_SIZE(ecx) (((ecx) >> 12) & 0xf)
#define FE_EBX_THREADS(ebx)	 ((((ebx) >> 8) & 0xff) + 1)

/* Leaves 0xB and 0x1F: each subleaf one level, until a level of type 0. */
#define TOPO_EAX_SHIFT(eax) ((eax)&0x1f)
#define TOPO_EBX_COUNT(ebx) ((ebx)&0xffff)
#define TOPO_ECX_TYPE(ecx)  (((ecx) >> 8) & 0xff)
#define TOPO_TYPE_INVALID   0
#define TOPO_TYPE_SMT	    1
#define TOPO_LEVELS_MAX	    8 /* SMT, core, module, tile, die, ... */

/* Leaf 0x1A's EAX[31:24] on a hybrid part. */
#define HYBRID_TYPE(eax) ((eax) >> 24)
#define HYBRID_TYPE_ATOM 0x20
#define HYBRID_TYPE_CORE 0x40

const char *const cpu_topology_source_names[CPU_TOPOLOGY_SOURCES] = {
	[CPU_TOPOLOGY_LEAF_1F] = "0x1f",
	[CPU_TOPOLOGY_LEAF_B] = "0xb",
	[CPU_TOPOLOGY_AMD] = "amd",
	[CPU_TOPOLOGY_LEGACY] = "legacy",
};

const char *const cpu_core_type_names[CPU_CORE_TYPES] = {
	[CPU_CORE_NONE] = "-",
	[CPU_CORE_PERFORMANCE] = "P",
	[CPU_CORE_EFFICIENT] = "E",
	[CPU_CORE_UNKNOWN] = "?",
};

/* The bits that number n things: 0 for one, 1 for two, 2 for three... */
static uint8_t bits_for(uint32_t n)
{
	uint8_t bits = 0;

	while (bits < 32 && (1ULL << bits) < n)
		bits++;
	return bits;
}

/*
 * Leaf 0xB or 0x1F. A leaf with no processors at its first level is not
 * implemented (SDM: "EBX[15:0] of subleaf 0 is 0"). The last level's shift
 * is the package's; the SMT level's, the threads'.
 */
static bool decode_extended(struct cpu_topology *t, cpuid_reader read,
			    uint32_t leaf)
{
	struct cpuid_regs r = read(leaf, 0);

	if (!TOPO_EBX_COUNT(r.ebx) || TOPO_ECX_TYPE(r.ecx) == TOPO_TYPE_INVALID)
		return false;
	t->apic_id = r.edx;
	for (uint32_t level = 0; level < TOPO_LEVELS_MAX; level++) {
		r = read(leaf, level);
		if (TOPO_ECX_TYPE(r.ecx) == TOPO_TYPE_INVALID)
			break;
		if (TOPO_ECX_TYPE(r.ecx) == TOPO_TYPE_SMT)
			t->smt_bits = TOPO_EAX_SHIFT(r.eax);
		t->package_bits = TOPO_EAX_SHIFT(r.eax);
	}
	t->source = leaf == LEAF_TOPOLOGY_V2 ? CPU_TOPOLOGY_LEAF_1F
					     : CPU_TOPOLOGY_LEAF_B;
	return true;
}

/* 0x80000008's bits of a package: its APIC ID size, else its count. */
static uint8_t amd_package_bits(cpuid_reader read, uint32_t max_ext)
{
	struct cpuid_regs r;

	if (max_ext < LEAF_ADDR_SIZES)
		return 0;
	r = read(LEAF_ADDR_SIZES, 0);
	if (FA_ECX_APIC_ID_SIZE(r.ecx))
		return (uint8_t)FA_ECX_APIC_ID_SIZE(r.ecx);
	return bits_for(FA_ECX_THREADS(r.ecx));
}

/* AMD's topology extensions (CPUID 0x80000001 ECX[22] says they exist). */
static bool decode_amd(struct cpu_topology *t, cpuid_reader read,
		       uint32_t max_ext)
{
	struct cpuid_regs r;

	if (max_ext < LEAF_AMD_TOPOLOGY ||
	    !(read(LEAF_EXT_FEATURES, 0).ecx & FX_ECX_TOPOEXT))
		return false;
	r = read(LEAF_AMD_TOPOLOGY, 0);
	t->apic_id = r.eax;
	t->smt_bits = bits_for(FE_EBX_THREADS(r.ebx));
	t->package_bits = amd_package_bits(read, max_ext);
	t->source = CPU_TOPOLOGY_AMD;
	return true;
}

/*
 * Leaf 1's logical CPUs per package (with HTT), split into cores by leaf 4
 * (Intel) or taken as one thread per core (AMD without topology
 * extensions, whose 0x80000008 counts the cores).
 */
static void decode_legacy(struct cpu_topology *t, cpuid_reader read, bool amd,
			  uint32_t max_leaf, uint32_t max_ext)
{
	struct cpuid_regs r = read(LEAF_FEATURES, 0);
	uint32_t logical = r.edx & F1_EDX_HTT ? F1_EBX_LOGICAL(r.ebx) : 1;
	uint32_t cores = 1;

	t->apic_id = F1_EBX_APIC_ID(r.ebx);
	t->source = CPU_TOPOLOGY_LEGACY;
	if (amd) {
		t->package_bits = amd_package_bits(read, max_ext);
		return;
	}
	if (max_leaf >= LEAF_CACHE_PARAMS)
		cores = F4_EAX_CORES(read(LEAF_CACHE_PARAMS, 0).eax);
	t->package_bits = bits_for(logical);
	if (logical > cores)
		t->smt_bits = bits_for(logical / cores);
}

/* Leaf 0x1A, read only on a part that says it is hybrid (leaf 7 EDX). */
static enum cpu_core_type decode_core_type(cpuid_reader read, uint32_t max_leaf)
{
	if (max_leaf < LEAF_HYBRID || !(read(LEAF_EXT7, 0).edx & F7_EDX_HYBRID))
		return CPU_CORE_NONE;
	switch (HYBRID_TYPE(read(LEAF_HYBRID, 0).eax)) {
	case HYBRID_TYPE_ATOM:
		return CPU_CORE_EFFICIENT;
	case HYBRID_TYPE_CORE:
		return CPU_CORE_PERFORMANCE;
	default:
		return CPU_CORE_UNKNOWN;
	}
}

void cpu_topology_decode(struct cpu_topology *t, cpuid_reader read)
{
	struct cpuid_regs r = read(LEAF_VENDOR, 0);
	uint32_t max_leaf = r.eax;
	uint32_t max_ext = read(LEAF_EXT_MAX, 0).eax;
	/* "AuthenticAMD" and Hygon's "HygonGenuine" (EBX, EDX, ECX). */
	bool amd = (r.ebx == 0x68747541U && r.edx == 0x69746e65U) ||
		   (r.ebx == 0x6f677948U && r.edx == 0x6e65476eU);

	memset(t, 0, sizeof(*t));
	if (max_ext < LEAF_EXT_MAX)
		max_ext = 0; /* no extended leaves: EAX echoes something else */
	if (!(max_leaf >= LEAF_TOPOLOGY_V2 &&
	      decode_extended(t, read, LEAF_TOPOLOGY_V2)) &&
	    !(max_leaf >= LEAF_TOPOLOGY &&
	      decode_extended(t, read, LEAF_TOPOLOGY)) &&
	    !(amd && decode_amd(t, read, max_ext)))
		decode_legacy(t, read, amd, max_leaf, max_ext);
	/* A package is never narrower than its cores. */
	if (t->package_bits < t->smt_bits)
		t->package_bits = t->smt_bits;
	/* Shifts are at most 31 (a 5-bit field) and AMD's sizes smaller. */
	t->thread = t->apic_id & ((1U << t->smt_bits) - 1);
	t->core = (t->apic_id & ((1U << t->package_bits) - 1)) >> t->smt_bits;
	t->package = t->apic_id >> t->package_bits;
	t->type = decode_core_type(read, max_leaf);
}

bool cpu_topology_siblings(const struct cpu_topology *a,
			   const struct cpu_topology *b)
{
	return a->apic_id != b->apic_id && a->package == b->package &&
	       a->core == b->core;
}
