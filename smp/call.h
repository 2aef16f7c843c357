/* SPDX-License-Identifier: MIT */
/*
 * Cross-CPU function calls: the one way the kernel makes other CPUs do
 * work (TLB shootdowns included).
 */
#ifndef SMP_CALL_H
#define SMP_CALL_H

#include "lib/types.h"
#include "sync/cpumask.h"

struct percpu;

typedef void (*smp_call_fn)(void *arg);

enum smp_call_wait {
	SMP_CALL_NO_WAIT, /* return once every request is queued */
	SMP_CALL_WAIT,	  /* return once every target has run fn */
};

/*
 * Runs fn(arg) on every online CPU in mask, this one included when it is in
 * the mask (here directly, with interrupts off). Safe with interrupts on or
 * off, and from fn itself; while it waits, this CPU keeps running requests
 * sent to it, so two CPUs calling each other at once cannot deadlock. fn
 * runs with interrupts off (in the IPI handler on the targets): keep it
 * short.
 */
void smp_call_function_many(const struct cpumask *mask, smp_call_fn fn,
			    void *arg, enum smp_call_wait wait);

/* One CPU, or all online CPUs. */
void smp_call_function_single(unsigned cpu, smp_call_fn fn, void *arg,
			      enum smp_call_wait wait);
void smp_call_function_all(smp_call_fn fn, void *arg, enum smp_call_wait wait);

/*
 * A bare IPI with vector to every online CPU in mask (this one included if
 * it is in the mask). No request, no waiting: the handler installed for
 * vector does the work.
 */
void smp_send_ipi_mask(const struct cpumask *mask, uint8_t vector);

/* Sets up p's request slots (before the CPU starts) and the IPI handler. */
void smp_call_init_cpu(struct percpu *p);

#endif
