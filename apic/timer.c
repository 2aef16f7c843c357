// SPDX-License-Identifier: MIT
/*
 * The local-APIC timer (SDM Vol. 3A, 11.5.4).
 *
 * Count mode: the timer decrements its current-count register from the
 * initial count at the APIC timer clock divided by the divide register, and
 * interrupts at zero: once (one-shot) or reloading (periodic). That clock
 * is not the TSC and no CPUID leaf states it reliably, so the boot CPU
 * counts how far the timer gets in ~10 ms of TSC time, several times, and
 * keeps the median. Every CPU is assumed to have the same APIC timer clock
 * (it comes from the bus or crystal clock all cores share), so the other
 * CPUs do not measure it again.
 *
 * TSC-deadline mode (CPUID.1:ECX[24]): the timer interrupts when this CPU's
 * TSC reaches the value written to IA32_TSC_DEADLINE, then disarms itself.
 * It has no periodic form, so periodic interrupts always count. Some
 * microcode has a broken one: cpu_tsc_deadline_usable says whether to use
 * it (docs/cpu-quirks.md, intel-tsc-deadline-microcode).
 */
#include "apic/timer.h"
#include "apic/lapic.h"
#include "apic/tsc.h"
#include "cpu/cpu.h"
#include "cpu/cpu_quirks.h"
#include "console/kprintf.h"
#include "trap/panic.h"
#include "arch/x86.h"

/* IA32_TSC_DEADLINE (SDM Vol. 4, table 2-2): 0 disarms. */
#define MSR_TSC_DEADLINE 0x000006e0U

/* Count-mode calibration: runs of this long against the TSC, median. */
#define CALIBRATION_NS	 (10 * NSEC_PER_MSEC)
#define CALIBRATION_RUNS 5
#define COUNT_MAX	 0xffffffffULL /* the 32-bit initial-count register */

/*
 * Plausible APIC timer clocks: real ones run at the bus or crystal clock
 * (19.2 MHz to a few hundred MHz), QEMU's at 1 GHz, Bochs's at its
 * emulated-instruction rate.
 */
#define APIC_TIMER_MIN_HZ 1000000ULL	 /* 1 MHz */
#define APIC_TIMER_MAX_HZ 10000000000ULL /* 10 GHz */
#define HZ_PER_MHZ	  1000000ULL
#define HZ_PER_KHZ	  1000ULL
#define KHZ_PER_MHZ	  1000ULL

/* A deadline far enough ahead never to fire while it is read back. */
#define PROBE_DEADLINE_AHEAD (1ULL << 62)

static bool initialized;
static bool use_deadline;
static uint64_t count_hz;

const char *apic_timer_mode_name(void)
{
	if (use_deadline)
		return "tsc-deadline";
	return count_hz ? "oneshot" : "none";
}

uint64_t apic_timer_hz(void)
{
	return count_hz;
}

static void mask_and_stop(void)
{
	/* Also leaves TSC-deadline mode, which disarms that timer. */
	lapic_write(LAPIC_LVT_TIMER,
		    LVT_MASKED | LVT_TIMER_ONESHOT | VECTOR_TIMER);
	lapic_write(LAPIC_TIMER_INITIAL, 0);
}

/*
 * The LVT write that selects TSC-deadline mode must reach the APIC before
 * the deadline MSR is written, or the write to the MSR may be dropped and
 * the timer never fire. SDM Vol. 3A, 11.5.4.1: "In xAPIC mode (in which
 * the local-APIC registers are memory-mapped), software must order the
 * memory-mapped write to the LVT entry that enables TSC-deadline mode and
 * any subsequent WRMSR to the IA32_TSC_DEADLINE MSR", with MFENCE after the
 * memory-mapped write; in x2APIC mode the LVT write is itself a WRMSR and
 * the processor keeps the two in order.
 */
static void enter_deadline_mode(uint32_t lvt)
{
	lapic_write(LAPIC_LVT_TIMER, lvt | LVT_TIMER_DEADLINE);
	if (lapic_mode() == LAPIC_XAPIC)
		mfence();
}

/*
 * The CPU claims TSC-deadline mode; check that the MSR takes a deadline
 * (it reads 0 when the mode is not in effect) before relying on it.
 */
static bool deadline_works(void)
{
	bool ok;

	enter_deadline_mode(LVT_MASKED | VECTOR_TIMER);
	wrmsr(MSR_TSC_DEADLINE, rdtsc() + PROBE_DEADLINE_AHEAD);
	ok = rdmsr(MSR_TSC_DEADLINE) != 0;
	wrmsr(MSR_TSC_DEADLINE, 0);
	mask_and_stop();
	return ok;
}

/* One run: timer counts per second over CALIBRATION_NS of TSC time. */
static uint64_t measure_count_rate(void)
{
	uint64_t tsc0, tsc1, ns;
	uint32_t count0, count1;

	lapic_write(LAPIC_TIMER_INITIAL, (uint32_t)COUNT_MAX);
	tsc0 = tsc_read_ordered();
	count0 = lapic_read(LAPIC_TIMER_CURRENT);
	tsc_delay_ns(CALIBRATION_NS);
	count1 = lapic_read(LAPIC_TIMER_CURRENT);
	tsc1 = tsc_read_ordered();
	lapic_write(LAPIC_TIMER_INITIAL, 0);

	ns = tsc_to_ns(tsc1 - tsc0);
	/* Not counting, or ran out (faster than 400 GHz): nonsense. */
	if (count1 >= count0 || count1 == 0 || ns == 0)
		return 0;
	/* Fewer than 2^32 counts: the product fits in 64 bits. */
	return (uint64_t)(count0 - count1) * NSEC_PER_SEC / ns;
}

static uint64_t calibrate_count_rate(void)
{
	uint64_t rates[CALIBRATION_RUNS];
	uint64_t flags = irq_save(); /* handlers would only add noise */
	int good = 0;

	for (int i = 0; i < CALIBRATION_RUNS; i++) {
		uint64_t rate = measure_count_rate();

		if (rate >= APIC_TIMER_MIN_HZ && rate <= APIC_TIMER_MAX_HZ)
			rates[good++] = rate;
	}
	irq_restore(flags);
	if (good <= CALIBRATION_RUNS / 2)
		return 0;
	return calibration_median(rates, good);
}

static void choose_modes(void)
{
	count_hz = calibrate_count_rate();
	if (!count_hz)
		kprintf("apic: warning: the local APIC timer does not count "
			"at a plausible rate; no periodic timer%s\n",
			boot_cpu.tsc_deadline ? "" : " and no one-shots");

	/* A quirk takes it away on microcode with a broken deadline timer
	 * (cpu/cpu_quirks.c, intel-tsc-deadline-microcode); the census says
	 * which and why. */
	use_deadline = cpu_tsc_deadline_usable(&boot_cpu);
	if (boot_cpu.tsc_deadline && !use_deadline)
		kprintf("apic: TSC-deadline mode not used: quirk %s "
			"(see the cpu: quirk lines)\n",
			cpu_quirk_taking(&boot_cpu, CPU_QUIRK_NO_TSC_DEADLINE));
	if (use_deadline && !deadline_works()) {
		kprintf("apic: warning: CPUID offers TSC-deadline mode but "
			"IA32_TSC_DEADLINE does not hold a deadline; "
			"counting instead\n");
		use_deadline = false;
	}
	kprintf("apic: timer: %s; count rate %llu.%03llu MHz (divide by 1, "
		"measured against the TSC from %s)\n",
		use_deadline ? "one-shots in TSC-deadline mode, periodic "
			       "counting"
			     : "one-shots and periodic counting",
		(unsigned long long)(count_hz / HZ_PER_MHZ),
		(unsigned long long)(count_hz / HZ_PER_KHZ % KHZ_PER_MHZ),
		tsc_source());
}

void apic_timer_init_this_cpu(void)
{
	mask_and_stop();
	lapic_write(LAPIC_TIMER_DIVIDE, LAPIC_TIMER_DIVIDE_1);
	if (!initialized) {
		KASSERT(tsc_hz(), "tsc_init runs before the APIC timer");
		choose_modes();
		initialized = true;
	}
}

/* ns in timer counts, within the 32-bit initial count, at least 1. */
static uint32_t ns_to_counts(uint64_t ns)
{
	/* Split at whole seconds so that no product can pass 2^64. */
	uint64_t seconds = ns / NSEC_PER_SEC, counts;

	if (seconds > COUNT_MAX / count_hz)
		return (uint32_t)COUNT_MAX;
	counts = seconds * count_hz +
		 ns % NSEC_PER_SEC * count_hz / NSEC_PER_SEC;
	if (counts > COUNT_MAX)
		return (uint32_t)COUNT_MAX;
	return counts ? (uint32_t)counts : 1;
}

static bool count_mode_usable(void)
{
	static bool warned;

	if (count_hz)
		return true;
	/* Once: a scheduler asking on every tick would flood the console. */
	if (!__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
		kprintf("apic: warning: a counting timer was requested, but "
			"the APIC timer rate is unknown; ignored\n");
	return false;
}

static void start_counting(uint32_t lvt_mode, uint64_t ns)
{
	/* No interrupt handler may re-arm the timer between the writes. */
	uint64_t flags = irq_save();

	lapic_write(LAPIC_LVT_TIMER, lvt_mode | VECTOR_TIMER);
	lapic_write(LAPIC_TIMER_INITIAL, ns_to_counts(ns));
	irq_restore(flags);
}

void apic_timer_oneshot_ns(uint64_t ns)
{
	uint64_t flags, deadline;

	KASSERT(initialized, "apic_timer_init_this_cpu runs first");
	if (!use_deadline) {
		if (count_mode_usable())
			start_counting(LVT_TIMER_ONESHOT, ns);
		return;
	}
	flags = irq_save();
	enter_deadline_mode(VECTOR_TIMER);
	/* Saturate rather than wrap into the past (which fires at once). */
	if (__builtin_add_overflow(rdtsc(), ns_to_tsc(ns), &deadline))
		deadline = UINT64_MAX;
	/* Writing 0 would disarm instead: a deadline is never 0. */
	wrmsr(MSR_TSC_DEADLINE, deadline ? deadline : 1);
	irq_restore(flags);
}

void apic_timer_periodic_ns(uint64_t ns)
{
	KASSERT(initialized, "apic_timer_init_this_cpu runs first");
	if (count_mode_usable())
		start_counting(LVT_TIMER_PERIODIC, ns);
}

void apic_timer_stop(void)
{
	uint64_t flags = irq_save();

	mask_and_stop();
	irq_restore(flags);
}
