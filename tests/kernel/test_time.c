// SPDX-License-Identifier: MIT
/*
 * The TSC rate, the conversions, busy-waits and the local-APIC timer.
 *
 * Emulators keep time badly: QEMU TCG's clocks follow the host, which can
 * deschedule it at any moment. So rates are compared as ratios with a
 * margin, repeated before a mismatch counts, and waits only ever check
 * lower bounds or generous ranges; every wait is bounded by the TSC.
 */
#include "tests/ktest.h"
#include "apic/lapic.h"
#include "apic/timer.h"
#include "sched/sched.h"
#include "cpu/percpu.h"
#include "apic/tsc.h"
#include "lib/string.h"
#include "trap/trap.h"
#include "arch/x86.h"

#define MIN_TSC_HZ	     10000000ULL    /* tsc.c's floor (Bochs: 50 MHz) */
#define MAX_TSC_HZ	     10000000000ULL /* 10 GHz */
#define AGREEMENT_PCT	     2		    /* a second clock within 2 % */
#define AGREEMENT_TRIES	     3		    /* measurements before failing */
#define PERCENT		     100
#define TEN_YEARS_S	     315360000ULL
#define WAIT_LIMIT_NS	     NSEC_PER_SEC /* a timer that has not fired */
#define ONESHOT_NS	     NSEC_PER_MSEC
#define ONESHOT_MIN_NS	     (NSEC_PER_MSEC / 2) /* calibration is rough */
#define AFTER_ONESHOT_NS     (20 * NSEC_PER_MSEC)
#define PERIOD_NS	     NSEC_PER_MSEC	/* 1 kHz */
#define PERIODIC_WAIT_NS     (5 * NSEC_PER_SEC) /* ample for 5 ticks */
#define PERIODIC_MIN_TICKS   5
#define AFTER_STOP_NS	     (20 * NSEC_PER_MSEC)
#define MAX_TICKS_AFTER_STOP 1 /* one may have been pending at the stop */
#define APIC_TIMER_MIN_HZ    1000000ULL
#define APIC_TIMER_MAX_HZ    10000000000ULL

/*
 * Until init/main.c starts the time sources after acpi_init, the suite
 * starts them itself. tsc_init runs once; apic_timer_init_this_cpu again
 * only masks and stops this CPU's timer.
 */
static void start_time_sources(void)
{
	if (!tsc_hz())
		tsc_init();
	apic_timer_init_this_cpu();
}

/* True when a is within pct percent of b (integer ratio test). */
static bool within_pct(uint64_t a, uint64_t b, uint64_t pct)
{
	uint64_t diff = a > b ? a - b : b - a;

	return diff * PERCENT <= b * pct;
}

KTEST(TIME0001, time, "the TSC rate is plausible and agrees with a clock")
{
	uint64_t hz, other = 0;
	enum tsc_clock clock;

	start_time_sources();
	hz = tsc_hz();
	ktest_note("tsc: %llu Hz from %s", (unsigned long long)hz,
		   tsc_source());
	KEXPECT(hz >= MIN_TSC_HZ && hz <= MAX_TSC_HZ, "%llu Hz",
		(unsigned long long)hz);
	KEXPECT(strcmp(tsc_source(), "guess") && strcmp(tsc_source(), "none"),
		"no source gave a rate (%s)", tsc_source());

	/* The first clock that did not give tsc_hz itself. */
	for (clock = 0; clock < TSC_CLOCK_COUNT; clock++) {
		if (!strcmp(tsc_clock_name(clock), tsc_source()))
			continue;
		other = tsc_calibrate(clock);
		if (other)
			break;
	}
	if (!other) {
		ktest_skip(t, "no second clock to compare with");
		return;
	}
	for (int i = 0; i < AGREEMENT_TRIES; i++) {
		ktest_note("%s measures %llu Hz", tsc_clock_name(clock),
			   (unsigned long long)other);
		if (within_pct(other, hz, AGREEMENT_PCT))
			return;
		other = tsc_calibrate(clock);
	}
	KEXPECT(within_pct(other, hz, AGREEMENT_PCT),
		"%s: %llu Hz, %s: %llu Hz (more than %d%% apart %d times)",
		tsc_source(), (unsigned long long)hz, tsc_clock_name(clock),
		(unsigned long long)other, AGREEMENT_PCT, AGREEMENT_TRIES);
}

KTEST(TIME0002, time, "cycles and nanoseconds convert both ways, no overflow")
{
	static const uint64_t values[] = {
		0,
		1,
		999,
		NSEC_PER_USEC,
		NSEC_PER_MSEC,
		123456789,
		NSEC_PER_SEC,
		1ULL << 40,
		1ULL << 52,
	};
	uint64_t hz, ns_per_cycle, cycles_per_ns;

	start_time_sources();
	hz = tsc_hz();
	/* One unit of the other side, rounded up: what flooring can lose. */
	ns_per_cycle = NSEC_PER_SEC / hz + 1;
	cycles_per_ns = hz / NSEC_PER_SEC + 1;

	KEXPECT(tsc_to_ns(hz) == NSEC_PER_SEC,
		"one second of cycles is %llu ns",
		(unsigned long long)tsc_to_ns(hz));
	KEXPECT(ns_to_tsc(NSEC_PER_SEC) == hz, "one second is %llu cycles",
		(unsigned long long)ns_to_tsc(NSEC_PER_SEC));
	for (size_t i = 0; i < ARRAY_SIZE(values); i++) {
		uint64_t v = values[i];
		uint64_t c = ns_to_tsc(tsc_to_ns(v));
		uint64_t n = tsc_to_ns(ns_to_tsc(v));

		KEXPECT(c <= v && v - c <= cycles_per_ns,
			"%llu cycles -> %llu ns -> %llu cycles",
			(unsigned long long)v, (unsigned long long)tsc_to_ns(v),
			(unsigned long long)c);
		KEXPECT(n <= v && v - n <= ns_per_cycle,
			"%llu ns -> %llu cycles -> %llu ns",
			(unsigned long long)v, (unsigned long long)ns_to_tsc(v),
			(unsigned long long)n);
	}
	/* Ten years of cycles: far beyond 2^64 / 10^9, still exact. */
	KEXPECT(tsc_to_ns(hz * TEN_YEARS_S) == TEN_YEARS_S * NSEC_PER_SEC,
		"ten years is %llu ns",
		(unsigned long long)tsc_to_ns(hz * TEN_YEARS_S));
	KEXPECT(ns_to_tsc(TEN_YEARS_S * NSEC_PER_SEC) == hz * TEN_YEARS_S,
		"ten years is %llu cycles",
		(unsigned long long)ns_to_tsc(TEN_YEARS_S * NSEC_PER_SEC));
	/* The largest inputs saturate or stay ordered; they never wrap. */
	KEXPECT(tsc_to_ns(UINT64_MAX) >= tsc_to_ns(UINT64_MAX / 2),
		"tsc_to_ns wrapped");
	KEXPECT(ns_to_tsc(UINT64_MAX) >= ns_to_tsc(UINT64_MAX / 2),
		"ns_to_tsc wrapped");
}

KTEST(TIME0003, time, "tsc_delay_ns lasts at least as long as asked")
{
	static const uint64_t delays[] = {200 * NSEC_PER_USEC, NSEC_PER_MSEC};

	start_time_sources();
	for (size_t i = 0; i < ARRAY_SIZE(delays); i++) {
		uint64_t start = tsc_read_ordered(), elapsed;

		tsc_delay_ns(delays[i]);
		elapsed = tsc_to_ns(tsc_read_ordered() - start);
		ktest_note("delay of %llu ns took %llu ns",
			   (unsigned long long)delays[i],
			   (unsigned long long)elapsed);
		KEXPECT(elapsed >= delays[i], "%llu ns for %llu",
			(unsigned long long)elapsed,
			(unsigned long long)delays[i]);
	}
}

static uint64_t ticks;
static uint64_t first_tick_tsc;
static uint64_t last_tick_tsc;
/* The handler is every CPU's: only the testing CPU's timer is counted, the
 * others' ticks go on to the scheduler. */
static unsigned counting_cpu;
static interrupt_handler others;

static void count_tick(struct trap_frame *frame)
{
	if (this_cpu_index() != counting_cpu) {
		if (others)
			others(frame);
		return;
	}
	if (__atomic_fetch_add(&ticks, 1, __ATOMIC_RELAXED) == 0)
		first_tick_tsc = tsc_read_ordered();
	last_tick_tsc = tsc_read_ordered();
}

static uint64_t tick_count(void)
{
	return __atomic_load_n(&ticks, __ATOMIC_RELAXED);
}

/* Interrupts on for ns of TSC time, or until want ticks (0: all of it). */
static void wait_with_interrupts(uint64_t ns, uint64_t want)
{
	uint64_t start = tsc_read_ordered();

	sti();
	while (tsc_to_ns(tsc_read_ordered() - start) < ns) {
		if (want && tick_count() >= want)
			break;
		cpu_relax();
	}
	cli();
}

/* Installs count_tick with interrupts off; returns the flags to restore. */
static uint64_t begin_counting(interrupt_handler *previous)
{
	uint64_t flags = irq_save();

	/* This CPU's timer is under test: stay on it. */
	preempt_disable();
	start_time_sources();
	apic_timer_stop();
	__atomic_store_n(&ticks, 0, __ATOMIC_RELAXED);
	first_tick_tsc = 0;
	counting_cpu = this_cpu_index();
	others = trap_set_handler(VECTOR_TIMER, count_tick);
	*previous = others;
	return flags;
}

static void end_counting(uint64_t flags, interrupt_handler previous)
{
	apic_timer_stop();
	trap_set_handler(VECTOR_TIMER, previous);
	/* The scheduler owns the timer: give it its tick back. */
	sched_tick_restart();
	preempt_enable();
	irq_restore(flags);
}

KTEST(TIME0004, time, "the APIC timer's rate and mode are plausible")
{
	const char *mode;
	uint64_t rate;

	start_time_sources();
	mode = apic_timer_mode_name();
	rate = apic_timer_hz();
	ktest_note("apic timer: one-shots by %s, count rate %llu Hz (%s)", mode,
		   (unsigned long long)rate, lapic_mode_name());
	KEXPECT(!strcmp(mode, "tsc-deadline") || !strcmp(mode, "oneshot"),
		"mode %s", mode);
	KEXPECT(rate >= APIC_TIMER_MIN_HZ && rate <= APIC_TIMER_MAX_HZ,
		"%llu Hz", (unsigned long long)rate);
}

KTEST(TIME0005, time, "a 1 ms one-shot fires exactly once, not early")
{
	interrupt_handler previous;
	uint64_t flags = begin_counting(&previous), start, latency;

	start = tsc_read_ordered();
	apic_timer_oneshot_ns(ONESHOT_NS);
	wait_with_interrupts(WAIT_LIMIT_NS, 1);
	/* Long enough for a second interrupt, if one were coming. */
	wait_with_interrupts(AFTER_ONESHOT_NS, 0);
	end_counting(flags, previous);

	if (!KEXPECT(tick_count() == 1, "%llu interrupts (%s)",
		     (unsigned long long)tick_count(), apic_timer_mode_name()))
		return;
	latency = tsc_to_ns(first_tick_tsc - start);
	ktest_note("fired after %llu ns (%s)", (unsigned long long)latency,
		   apic_timer_mode_name());
	KEXPECT(latency >= ONESHOT_MIN_NS, "fired after %llu ns",
		(unsigned long long)latency);
}

/*
 * Not a timing assertion: a loaded host can only delay ticks, so the test
 * waits as long as it takes (bounded) for several ticks, and checks only
 * that they did not come faster than the period allows.
 */
KTEST(TIME0006, time, "a periodic timer keeps firing, never faster than asked")
{
	interrupt_handler previous;
	uint64_t flags = begin_counting(&previous), n, spread_ns;

	apic_timer_periodic_ns(PERIOD_NS);
	wait_with_interrupts(PERIODIC_WAIT_NS, PERIODIC_MIN_TICKS);
	end_counting(flags, previous);
	n = tick_count();
	if (!KEXPECT(n >= PERIODIC_MIN_TICKS, "only %llu ticks in %llu ms",
		     (unsigned long long)n,
		     (unsigned long long)(PERIODIC_WAIT_NS / NSEC_PER_MSEC)))
		return;
	spread_ns = tsc_to_ns(last_tick_tsc - first_tick_tsc);
	ktest_note("%llu ticks %llu us apart on average", (unsigned long long)n,
		   (unsigned long long)(spread_ns / (n - 1) / 1000));
	/* Half the period: calibration and TSC reads are not exact. */
	KEXPECT(spread_ns >= (n - 1) * PERIOD_NS / 2,
		"%llu ticks within %llu ns: faster than one per %llu ns",
		(unsigned long long)n, (unsigned long long)spread_ns,
		(unsigned long long)PERIOD_NS);
}

KTEST(TIME0007, time, "apic_timer_stop stops a periodic timer")
{
	interrupt_handler previous;
	uint64_t flags = begin_counting(&previous), at_stop, after;

	apic_timer_periodic_ns(PERIOD_NS);
	wait_with_interrupts(WAIT_LIMIT_NS, PERIODIC_MIN_TICKS);
	apic_timer_stop();
	at_stop = tick_count();
	wait_with_interrupts(AFTER_STOP_NS, 0);
	after = tick_count();
	end_counting(flags, previous);

	KEXPECT(at_stop >= PERIODIC_MIN_TICKS, "only %llu ticks before stop",
		(unsigned long long)at_stop);
	KEXPECT(after - at_stop <= MAX_TICKS_AFTER_STOP,
		"%llu ticks after the stop",
		(unsigned long long)(after - at_stop));
}
