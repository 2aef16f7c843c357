/* SPDX-License-Identifier: MIT */
/*
 * Per-CPU data, reached through the GS base: each CPU's IA32_GS_BASE points
 * at its own struct percpu, whose first field points at itself, so
 * this_cpu() is one load from %gs:0 and needs no CPU number first.
 */
#ifndef SMP_PERCPU_H
#define SMP_PERCPU_H

#include "kernel/gdt.h"
#include "kernel/types.h"
#include "smp/cpumask.h"

struct percpu {
	struct percpu *self; /* must stay first: this_cpu() reads %gs:0 */
	/* Written once at bring-up, read by anyone. */
	unsigned index;	  /* 0 .. cpu_count-1; 0 is the boot CPU */
	uint32_t apic_id; /* as the MADT lists it */
	uint64_t stack_top;
	struct cpu_tables *tables; /* GDT, TSS, IST stacks */
	/* Written only by this CPU. */
	uint64_t interrupts; /* interrupts taken, any vector */
};

static inline struct percpu *this_cpu(void)
{
	struct percpu *p;

	__asm__ volatile("movq %%gs:0, %0" : "=r"(p));
	return p;
}

static inline unsigned this_cpu_index(void)
{
	return this_cpu()->index;
}

/* Every CPU the MADT lists and we started, by index (NULL beyond count). */
extern struct percpu *cpus[MAX_CPUS];
extern unsigned cpu_count; /* CPUs that came online */
extern struct cpumask cpu_online_mask;

/* Points this CPU's GS base at p (after gdt_load, which resets GS). */
void percpu_install(struct percpu *p);

/*
 * The boot CPU's per-CPU data, installed right after its GDT; its APIC ID
 * is filled in once the local APIC is up.
 */
void percpu_init_boot_cpu(void);

#endif
