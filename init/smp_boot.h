/* SPDX-License-Identifier: MIT */
/*
 * Bringing up the other CPUs: every CPU the MADT lists as enabled is started
 * with INIT-SIPI-SIPI, one at a time. A CPU that does not answer in time is
 * reported and left out; boot goes on with the CPUs that came up.
 */
#ifndef INIT_SMP_BOOT_H
#define INIT_SMP_BOOT_H

#include "lib/types.h"

struct madt_info;

/* Why a CPU listed in the MADT is not online (for the boot report). */
enum cpu_state {
	CPU_ONLINE,
	CPU_ABSENT,	  /* MADT: not enabled (hot-pluggable or missing) */
	CPU_NO_ANSWER,	  /* did not reach C within the timeout */
	CPU_INCOMPATIBLE, /* lacks a feature the boot CPU uses */
	CPU_OVER_LIMIT,	  /* beyond MAX_CPUS */
};

/* Starts the APs the MADT lists (madt may be NULL: one CPU). */
void smp_boot_cpus(const struct madt_info *madt);

/* Prints the CPU table: index, APIC ID, state. */
void smp_report(void);

#endif
