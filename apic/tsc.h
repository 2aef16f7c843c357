/* SPDX-License-Identifier: MIT */
/*
 * The time-stamp counter as the kernel's clock.
 *
 * tsc_init (boot CPU, after acpi_init) finds how fast the TSC runs: from
 * CPUID leaves 0x15/0x16 when the CPU states it, otherwise by counting TSC
 * cycles against a clock of known rate: the HPET, the ACPI PM timer, then
 * the PIT, whichever is present and gives a plausible answer first. Every
 * CPU's TSC is assumed to run at the boot CPU's rate.
 *
 * Without an invariant TSC (CPUID 0x80000007:EDX[8]) the rate may follow
 * the core clock on old CPUs; the boot line says which it is.
 */
#ifndef APIC_TSC_H
#define APIC_TSC_H

#include "lib/types.h"
#include "arch/x86.h"

#define NSEC_PER_SEC  1000000000ULL
#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_USEC 1000ULL

/* Clocks the TSC can be calibrated against, in the order tsc_init tries. */
enum tsc_clock {
	TSC_CLOCK_HPET,
	TSC_CLOCK_PMTIMER,
	TSC_CLOCK_PIT,
	TSC_CLOCK_COUNT,
};

/*
 * Determines the TSC rate and prints one line saying how (boot CPU), after
 * tsc_adjust_reset_this_cpu(0) (one line more).
 */
void tsc_init(void);

/*
 * Sets this CPU's IA32_TSC_ADJUST to 0 where CPUID has it, and says so
 * when it was not ("tsc: TSC_ADJUST was X on CPU n, reset"); the boot CPU
 * (cpu 0) also says when it was 0 or the MSR is absent. Before anything
 * on this CPU measures with the TSC: the reset moves it.
 */
void tsc_adjust_reset_this_cpu(unsigned cpu);

/* TSC cycles per second; 0 before tsc_init. */
uint64_t tsc_hz(void);

/*
 * Where tsc_hz came from: cpuid, hpet, pmtimer, pit; "guess" when nothing
 * gave a plausible rate; "none" before tsc_init.
 */
const char *tsc_source(void);

/* Conversions at tsc_hz, exact to the unit; they saturate, never wrap. */
uint64_t tsc_to_ns(uint64_t cycles);
uint64_t ns_to_tsc(uint64_t ns);

/*
 * RDTSC ordered against the instructions around it. RDTSC is not
 * serializing: it may read the counter before earlier instructions have
 * finished, and later instructions may start before it has read it, which
 * makes short measurements wrong in both directions. LFENCE before it waits
 * until every earlier instruction has completed; LFENCE after it keeps
 * later ones from starting until RDTSC has (SDM Vol. 2B, RDTSC). On AMD,
 * LFENCE is dispatch-serializing like this on Zen and later (earlier parts
 * need an MSR bit the firmware usually sets). Inline, so that benchmarks
 * (user/bench.c too) pay no call around it.
 */
static inline uint64_t tsc_read_ordered(void)
{
	uint64_t t;

	lfence();
	t = rdtsc();
	lfence();
	return t;
}

/* Busy-waits at least ns nanoseconds (before tsc_init too: longer then). */
void tsc_delay_ns(uint64_t ns);

/*
 * Measures the TSC against one clock now (a median of several ~10 ms
 * runs, interrupts off). Returns the rate in Hz, or 0 when that clock is
 * absent, does not count or gives an implausible rate. For tests and
 * cross-checks, one caller at a time: it changes nothing tsc_hz reports.
 */
uint64_t tsc_calibrate(enum tsc_clock clock);

/* hpet, pmtimer, pit. */
const char *tsc_clock_name(enum tsc_clock clock);

/*
 * The median of n calibration runs (sorts v in place: an insertion sort, for
 * the handful of runs the TSC and APIC timer calibrations take).
 */
uint64_t calibration_median(uint64_t *v, int n);

#endif
