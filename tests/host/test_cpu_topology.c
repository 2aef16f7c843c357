// SPDX-License-Identifier: MIT
/*
 * cpu/topology_decode.c on crafted CPUID leaves: a hybrid Alder Lake-like
 * part (leaf 0x1F, P-cores with two threads, E-cores with one, leaf 0x1A's
 * core types), an AMD Zen part without leaf 0xB (0x8000001E), and CPUs
 * with no topology leaf at all (leaf 1 and leaf 4 only). The expected
 * numbers are worked out here from the APIC IDs, not from the decoder.
 */
#include "cpu/topology.h"
#include "arch/x86.h"
#include "tests/host/host_test.h"

/* One leaf and subleaf a crafted CPU answers; the rest read as zeros. */
struct leaf {
	uint32_t leaf, subleaf;
	struct cpuid_regs r;
};

#define LEAVES_MAX 16
static struct leaf leaves[LEAVES_MAX];
static size_t leaf_count;

static void answer(uint32_t leaf, uint32_t subleaf, uint32_t eax, uint32_t ebx,
		   uint32_t ecx, uint32_t edx)
{
	if (leaf_count == LEAVES_MAX) {
		fprintf(stderr, "test_cpu_topology: more than %d leaves\n",
			LEAVES_MAX);
		exit(1);
	}
	leaves[leaf_count++] =
		(struct leaf){leaf, subleaf, {eax, ebx, ecx, edx}};
}

static struct cpuid_regs fake_cpuid(uint32_t leaf, uint32_t subleaf)
{
	for (size_t i = 0; i < leaf_count; i++) {
		if (leaves[i].leaf == leaf && leaves[i].subleaf == subleaf)
			return leaves[i].r;
	}
	return (struct cpuid_regs){0};
}

/* Vendor strings as leaf 0's EBX, EDX, ECX. */
#define INTEL 0x756e6547U, 0x49656e69U, 0x6c65746eU
#define AMD   0x68747541U, 0x69746e65U, 0x444d4163U

static void vendor(uint32_t max_leaf, uint32_t ebx, uint32_t edx, uint32_t ecx,
		   uint32_t max_ext)
{
	leaf_count = 0;
	answer(0, 0, max_leaf, ebx, ecx, edx);
	answer(0x80000000U, 0, max_ext, 0, 0, 0);
}

#define LEVEL_SMT  (1U << 8)
#define LEVEL_CORE (2U << 8)
#define HYBRID	   (1U << 15)  /* leaf 7 EDX */
#define P_CORE	   0x40000001U /* leaf 0x1A EAX: "Core", native model 1 */
#define E_CORE	   0x20000001U /* "Atom" */

/*
 * An i9-12900K-like CPU: 8 P-cores of two threads (APIC IDs 0-15), 8
 * E-cores of one (APIC IDs 32, 34, ... 46: the SMT bit is still there),
 * one bit of thread and six of package in every APIC ID.
 */
static struct cpu_topology alder_lake(uint32_t apic_id, bool e_core)
{
	struct cpu_topology t;

	vendor(0x20, INTEL, 0x80000008U);
	answer(1, 0, 0x90672, (apic_id & 0xff) << 24 | 24 << 16, 0, 1U << 28);
	answer(7, 0, 0, 0, 0, HYBRID);
	answer(0x1a, 0, e_core ? E_CORE : P_CORE, 0, 0, 0);
	for (uint32_t leaf = 0xb; leaf <= 0x1f; leaf += 0x1f - 0xb) {
		answer(leaf, 0, 1, e_core ? 1 : 2, LEVEL_SMT | 0, apic_id);
		answer(leaf, 1, 6, 24, LEVEL_CORE | 1, apic_id);
		answer(leaf, 2, 0, 0, 2, apic_id);
	}
	cpu_topology_decode(&t, fake_cpuid);
	return t;
}

HOST_TEST(alder_lake_p_core)
{
	struct cpu_topology t = alder_lake(3, false);

	CHECK_EQ(t.source, CPU_TOPOLOGY_LEAF_1F);
	CHECK_EQ(t.apic_id, 3);
	CHECK_EQ(t.smt_bits, 1);
	CHECK_EQ(t.package_bits, 6);
	CHECK_EQ(t.thread, 1);
	CHECK_EQ(t.core, 1);
	CHECK_EQ(t.package, 0);
	CHECK_EQ(t.type, CPU_CORE_PERFORMANCE);
	CHECK_STR(cpu_core_type_names[t.type], "P");
}

HOST_TEST(alder_lake_e_core)
{
	struct cpu_topology t = alder_lake(0x22, true);

	CHECK_EQ(t.apic_id, 0x22);
	CHECK_EQ(t.thread, 0);
	CHECK_EQ(t.core, 0x11);
	CHECK_EQ(t.type, CPU_CORE_EFFICIENT);
	CHECK_STR(cpu_core_type_names[t.type], "E");
}

HOST_TEST(alder_lake_siblings)
{
	struct cpu_topology p0 = alder_lake(2, false);
	struct cpu_topology p1 = alder_lake(3, false);
	struct cpu_topology other = alder_lake(4, false);
	struct cpu_topology e0 = alder_lake(0x20, true);
	struct cpu_topology e1 = alder_lake(0x22, true);

	CHECK(cpu_topology_siblings(&p0, &p1), "threads of one P-core");
	CHECK(cpu_topology_siblings(&p1, &p0), "siblings both ways");
	CHECK(!cpu_topology_siblings(&p0, &p0), "a CPU is not its sibling");
	CHECK(!cpu_topology_siblings(&p1, &other), "neighbouring P-cores");
	CHECK(!cpu_topology_siblings(&e0, &e1), "E-cores have no SMT");
	CHECK(!cpu_topology_siblings(&p0, &e0), "a P-core and an E-core");
}

/* Leaf 0xB alone, as before 0x1F (and as QEMU gives it). */
HOST_TEST(leaf_b_without_1f)
{
	struct cpu_topology t;

	vendor(0x16, INTEL, 0x80000008U);
	answer(0xb, 0, 1, 2, LEVEL_SMT | 0, 5);
	answer(0xb, 1, 2, 4, LEVEL_CORE | 1, 5);
	cpu_topology_decode(&t, fake_cpuid);
	CHECK_EQ(t.source, CPU_TOPOLOGY_LEAF_B);
	CHECK_EQ(t.apic_id, 5);
	CHECK_EQ(t.thread, 1);
	CHECK_EQ(t.core, 0);
	CHECK_EQ(t.package, 1);
	CHECK_EQ(t.type, CPU_CORE_NONE);
	CHECK_STR(cpu_core_type_names[t.type], "-");
}

/*
 * A Ryzen 7 1700-like CPU (Zen, family 0x17): 8 cores of two threads,
 * leaves up to 0xD (no 0xB), topology extensions on; APIC ID 5 is thread 1
 * of core 2, whose CPUID 0x8000001E EBX numbers it.
 */
static struct cpu_topology zen(uint32_t apic_id, bool topoext)
{
	struct cpu_topology t;

	vendor(0xd, AMD, 0x8000001fU);
	answer(1, 0, 0x800f11, apic_id << 24 | 16 << 16, 0, 1U << 28);
	answer(0x80000001U, 0, 0, 0, topoext ? 1U << 22 : 0, 0);
	answer(0x80000008U, 0, 0x3030, 0, 4U << 12 | 15, 0);
	answer(0x8000001eU, 0, apic_id, 1U << 8 | apic_id >> 1, 0, 0);
	cpu_topology_decode(&t, fake_cpuid);
	return t;
}

HOST_TEST(zen_smt)
{
	struct cpu_topology t = zen(5, true);
	struct cpu_topology sibling = zen(4, true);
	struct cpu_topology other = zen(6, true);

	CHECK_EQ(t.source, CPU_TOPOLOGY_AMD);
	CHECK_EQ(t.apic_id, 5);
	CHECK_EQ(t.smt_bits, 1);
	CHECK_EQ(t.package_bits, 4);
	CHECK_EQ(t.thread, 1);
	CHECK_EQ(t.core, 2);
	CHECK_EQ(t.package, 0);
	CHECK_EQ(t.type, CPU_CORE_NONE);
	CHECK(cpu_topology_siblings(&t, &sibling), "APIC 4 and 5 share core 2");
	CHECK(!cpu_topology_siblings(&t, &other), "APIC 6 is core 3");
}

/* Without topology extensions AMD's cores count as one thread each. */
HOST_TEST(amd_without_topoext)
{
	struct cpu_topology t = zen(5, false);

	CHECK_EQ(t.source, CPU_TOPOLOGY_LEGACY);
	CHECK_EQ(t.apic_id, 5);
	CHECK_EQ(t.smt_bits, 0);
	CHECK_EQ(t.core, 5);
}

/* A Core 2 Duo-like CPU: leaves up to 0xA, two cores of one thread. */
HOST_TEST(no_topology_leaf_two_cores)
{
	struct cpu_topology t;

	vendor(0xa, INTEL, 0x80000008U);
	answer(1, 0, 0x6fb, 1U << 24 | 2 << 16, 0, 1U << 28);
	answer(4, 0, 1U << 26 | 0x121, 0, 0, 0);
	cpu_topology_decode(&t, fake_cpuid);
	CHECK_EQ(t.source, CPU_TOPOLOGY_LEGACY);
	CHECK_EQ(t.apic_id, 1);
	CHECK_EQ(t.smt_bits, 0);
	CHECK_EQ(t.package_bits, 1);
	CHECK_EQ(t.core, 1);
	CHECK_EQ(t.thread, 0);
}

/* A Pentium 4 with Hyper-Threading: no leaf 4, two threads, one core. */
static struct cpu_topology pentium4(uint32_t apic_id)
{
	struct cpu_topology t;

	vendor(0x2, INTEL, 0x80000004U);
	answer(1, 0, 0xf29, apic_id << 24 | 2 << 16, 0, 1U << 28);
	cpu_topology_decode(&t, fake_cpuid);
	return t;
}

HOST_TEST(no_topology_leaf_hyperthreading)
{
	struct cpu_topology t = pentium4(1), sibling = pentium4(0);

	CHECK_EQ(t.source, CPU_TOPOLOGY_LEGACY);
	CHECK_EQ(t.smt_bits, 1);
	CHECK_EQ(t.thread, 1);
	CHECK_EQ(t.core, 0);
	CHECK(cpu_topology_siblings(&t, &sibling), "two threads of one core");
}

/*
 * Leaf 0xB listed but empty (some hypervisors) falls back to leaf 1; a
 * single CPU without HTT is core 0, thread 0, and leaf 0x1A is not read
 * unless leaf 7 says the part is hybrid.
 */
HOST_TEST(empty_leaf_b_falls_back)
{
	struct cpu_topology t;

	vendor(0x1a, INTEL, 0x80000008U);
	answer(1, 0, 0x306a9, 0, 0, 0);
	answer(0x1a, 0, P_CORE, 0, 0, 0);
	cpu_topology_decode(&t, fake_cpuid);
	CHECK_EQ(t.source, CPU_TOPOLOGY_LEGACY);
	CHECK_EQ(t.apic_id, 0);
	CHECK_EQ(t.package_bits, 0);
	CHECK_EQ(t.core, 0);
	CHECK_EQ(t.type, CPU_CORE_NONE);
}

/* A hybrid part with a core type this code does not name. */
HOST_TEST(unknown_core_type)
{
	struct cpu_topology t;

	vendor(0x20, INTEL, 0x80000008U);
	answer(7, 0, 0, 0, 0, HYBRID);
	answer(0x1a, 0, 0x10000001U, 0, 0, 0);
	cpu_topology_decode(&t, fake_cpuid);
	CHECK_EQ(t.type, CPU_CORE_UNKNOWN);
	CHECK_STR(cpu_core_type_names[t.type], "?");
}
