/* SPDX-License-Identifier: MIT */
/*
 * What a CPU did while a benchmark measured, beyond the TSC's ticks: how
 * fast its core really ran (APERF/MPERF) and how often firmware took it
 * away (the SMI count). Either may be absent: `known` says which were read.
 */
#ifndef CPU_CYCLE_COUNTERS_H
#define CPU_CYCLE_COUNTERS_H

#include "lib/types.h"

struct cpu_cycle_counters {
	bool clock_known; /* APERF and MPERF were read */
	bool smi_known;	  /* the SMI count was read */
	uint64_t aperf;	  /* cycles at the core's actual clock, in C0 */
	uint64_t mperf;	  /* cycles at its fixed reference clock, in C0 */
	uint64_t smi;	  /* system-management interrupts since reset */
};

/*
 * Finds out once, on the boot CPU, which counters exist: APERF/MPERF where
 * CPUID 6 ECX[0] says so, the SMI count on Intel where reading MSR 0x34
 * does not fault. Needs the IDT (the probe may fault).
 */
void cpu_cycle_counters_probe(void);

bool cpu_has_aperf_mperf(void);
bool cpu_has_smi_count(void);

/* This CPU's counters now; what does not exist is left unknown. */
void cpu_cycle_counters_read(struct cpu_cycle_counters *c);

/*
 * The effective clock in kHz between two readings of one CPU: the TSC's
 * rate times APERF's share of MPERF. False when unknown or when MPERF did
 * not move (the CPU slept throughout).
 */
bool cpu_effective_khz(const struct cpu_cycle_counters *before,
		       const struct cpu_cycle_counters *after, uint64_t tsc_hz,
		       uint64_t *khz);

/*
 * The SMIs between two readings, the 32-bit counter's wrap taken into
 * account. False when either reading lacks the count.
 */
bool cpu_smis_between(const struct cpu_cycle_counters *before,
		      const struct cpu_cycle_counters *after, uint64_t *smis);

#endif
