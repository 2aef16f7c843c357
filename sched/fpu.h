/* SPDX-License-Identifier: MIT */
/*
 * Floating-point and SIMD state of threads. The kernel itself never touches
 * it (it is built with -mgeneral-regs-only), so only user threads' state
 * matters; it is saved and restored on every switch between threads
 * ("eager" switching: simpler than trapping the first use, and free of the
 * speculative-execution leak lazy switching had, CVE-2018-3665).
 * XSAVE where CPUID has it (all enabled components), FXSAVE otherwise.
 */
#ifndef SCHED_FPU_H
#define SCHED_FPU_H

#include "arch/x86.h"
#include "lib/types.h"

#define FPU_AREA_ALIGN 64

/* Sizes the save area and captures the clean initial state. */
void fpu_init(void);

/* Bytes of one save area (a multiple of FPU_AREA_ALIGN). */
size_t fpu_area_size(void);

/* Fills area with the initial state (for a new thread). */
void fpu_init_area(void *area);

/* XSAVE's components (XCR0), once fpu_init has read them; 0: no XSAVE. */
extern uint64_t fpu_xsave_components;

/* fpu_switch without XSAVE. */
void fpu_switch_fxsave(void *save, const void *restore);

/*
 * Saves this CPU's FPU state in save, then loads restore's (a switch).
 * Inline: every thread switch does it.
 */
static inline void fpu_switch(void *save, const void *restore)
{
	uint64_t components = fpu_xsave_components;

	if (likely(components)) {
		xsave64(save, components);
		xrstor64(restore, components);
	} else {
		fpu_switch_fxsave(save, restore);
	}
}

const char *fpu_method(void);

#endif
