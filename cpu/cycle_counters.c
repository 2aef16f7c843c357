// SPDX-License-Identifier: MIT
/*
 * APERF, MPERF and the SMI count (cpu/cycle_counters.h). Both clocks count
 * only while the CPU runs (C0): MPERF at a fixed rate, the TSC's on every
 * CPU that has an invariant TSC, APERF at the core's actual one, so their
 * ratio is how far turbo raised, or throttling lowered, the clock (Intel
 * SDM Vol. 3B, "P-State Hardware Coordination"; AMD APM Vol. 2, "Effective
 * Frequency Interface").
 */
#include "cpu/cycle_counters.h"
#include "cpu/cpu.h"
#include "arch/extable.h"
#include "arch/x86.h"
#include "lib/string.h"

#define LEAF_POWER_MGMT	  0x00000006U
#define F6_ECX_APERFMPERF (1U << 0)
#define MSR_MPERF	  0x000000e7U
#define MSR_APERF	  0x000000e8U
#define MSR_SMI_COUNT	  0x00000034U /* Intel: SMIs since reset, 32 bits */
#define SMI_COUNT_MASK	  0xffffffffULL
#define HZ_PER_KHZ	  1000

/* Set once on the boot CPU before any other CPU starts; read-only after. */
static bool aperf_mperf;
static bool smi_count;

void cpu_cycle_counters_probe(void)
{
	uint64_t value;

	/* An emulator may list the leaf and still fault on the MSRs. */
	aperf_mperf = boot_cpu.max_leaf >= LEAF_POWER_MGMT &&
		      cpuid(LEAF_POWER_MGMT, 0).ecx & F6_ECX_APERFMPERF &&
		      !probe_rdmsr(MSR_APERF, &value) &&
		      !probe_rdmsr(MSR_MPERF, &value);
	/* MSR 0x34 is Intel's; on AMD the number means something else. */
	smi_count = !strcmp(boot_cpu.vendor, "GenuineIntel") &&
		    !probe_rdmsr(MSR_SMI_COUNT, &value);
}

bool cpu_has_aperf_mperf(void)
{
	return aperf_mperf;
}

bool cpu_has_smi_count(void)
{
	return smi_count;
}

void cpu_cycle_counters_read(struct cpu_cycle_counters *c)
{
	*c = (struct cpu_cycle_counters){0};
	/* MPERF first, APERF last: the pair brackets the same interval the
	 * caller's other pair does, to within two reads. */
	if (aperf_mperf)
		c->clock_known = !probe_rdmsr(MSR_MPERF, &c->mperf) &&
				 !probe_rdmsr(MSR_APERF, &c->aperf);
	if (smi_count) {
		c->smi_known = !probe_rdmsr(MSR_SMI_COUNT, &c->smi);
		c->smi &= SMI_COUNT_MASK;
	}
}

bool cpu_smis_between(const struct cpu_cycle_counters *before,
		      const struct cpu_cycle_counters *after, uint64_t *smis)
{
	if (!before->smi_known || !after->smi_known)
		return false;
	*smis = (after->smi - before->smi) & SMI_COUNT_MASK;
	return true;
}

bool cpu_effective_khz(const struct cpu_cycle_counters *before,
		       const struct cpu_cycle_counters *after, uint64_t tsc_hz,
		       uint64_t *khz)
{
	uint64_t aperf = after->aperf - before->aperf;
	uint64_t mperf = after->mperf - before->mperf;
	uint64_t tsc_khz = tsc_hz / HZ_PER_KHZ;

	if (!before->clock_known || !after->clock_known || !tsc_khz)
		return false;
	/* Halving both keeps the ratio and the product within 64 bits. */
	while (aperf > UINT64_MAX / tsc_khz) {
		aperf >>= 1;
		mperf >>= 1;
	}
	if (!mperf)
		return false;
	*khz = tsc_khz * aperf / mperf;
	return true;
}
