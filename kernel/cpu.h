/* SPDX-License-Identifier: MIT */
/*
 * CPU features, probed with CPUID, never assumed: QEMU TCG lacks PCID,
 * INVPCID, x2APIC and TSC-deadline; Bochs has them; real CPUs and VMs vary.
 * Every hardware path in shootdown is chosen from this structure at run time.
 */
#ifndef KERNEL_CPU_H
#define KERNEL_CPU_H

#include "lib/types.h"

struct cpu_features {
	char vendor[13];
	char brand[49];
	char hypervisor[13]; /* CPUID 0x40000000 signature, "" if none */
	uint32_t family, model, stepping;
	uint32_t max_leaf, max_ext_leaf;
	uint8_t phys_addr_bits, virt_addr_bits;

	bool pge;	     /* global pages */
	bool pat;	     /* page attribute table */
	bool fxsr;	     /* FXSAVE/FXRSTOR */
	bool xsave;	     /* XSAVE family */
	bool pcid;	     /* process-context identifiers */
	bool invpcid;	     /* INVPCID instruction */
	bool x2apic;	     /* x2APIC mode */
	bool tsc_deadline;   /* local APIC TSC-deadline timer */
	bool smep;	     /* supervisor-mode execution prevention */
	bool smap;	     /* supervisor-mode access prevention */
	bool gbpages;	     /* 1 GiB pages */
	bool nx;	     /* execute-disable */
	bool rdtscp;	     /* RDTSCP instruction */
	bool invariant_tsc;  /* TSC rate constant across P/C-states */
	bool hypervisor_bit; /* CPUID.1:ECX[31]: running in a VM */
	bool fsgsbase;	     /* RDFSBASE and friends */
	bool avx;	     /* AVX state, saved by XSAVE when present */
	bool erms;	     /* fast REP MOVSB/STOSB */
};

/* The boot CPU's features; application processors must match them. */
extern struct cpu_features boot_cpu;

void cpu_probe(struct cpu_features *f);

/* Sets CR0, CR4, EFER and XCR0 on this CPU from the features. */
void cpu_enable_features(const struct cpu_features *f);

/* Prints what was found and which path each feature selects. */
void cpu_report(const struct cpu_features *f);

#endif
