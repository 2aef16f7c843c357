// SPDX-License-Identifier: MIT
/*
 * How fast the TSC runs.
 *
 * 1. CPUID. Leaf 0x15 gives the TSC as a ratio of the core crystal clock
 *    (TSC Hz = crystal Hz * EBX / EAX, SDM Vol. 3B, "Determining the
 *    Processor Base Frequency"); its ECX is the crystal's rate, or 0 when
 *    not enumerated. Then the base frequency of leaf 0x16 stands in: the
 *    TSC of these CPUs runs at the base frequency (the crystal is base *
 *    EAX / EBX). Leaf 0x16 alone (EAX[15:0], MHz) is the nominal rate, the
 *    TSC rate on CPUs with an invariant TSC.
 * 2. Calibration: count TSC cycles over ~10 ms of a clock whose rate is
 *    known, five times, and take the median (one run disturbed by an SMI or
 *    by the host descheduling an emulator does not move it). The clocks, in
 *    order of preference: the HPET (MMIO, rate in its capabilities
 *    register), the ACPI PM timer (an I/O port, 3.579545 MHz) and the PIT
 *    (8254 channel 2, 1.193182 MHz, always on a PC).
 *
 * CPUID numbers are what the CPU claims, not what the board delivers, and
 * emulators invent them (Bochs's TSC runs at its "ips" setting whatever its
 * CPU model states), so a CPUID rate is checked against the first clock
 * that calibrates and loses to it when the two disagree wildly.
 *
 * Every wait on a clock is bounded by the TSC and by a count of reads: a
 * clock that does not count is reported and skipped, never waited for.
 */
#include "apic/tsc.h"
#include "acpi/acpi.h"
#include "cpu/cpu.h"
#include "lib/format.h"
#include "console/kprintf.h"
#include "arch/extable.h"
#include "arch/x86.h"
#include "mm/kmap.h"
#include "mm/pagetable.h"

/*
 * CPUID leaves (SDM Vol. 2A, CPUID). 0x15: EAX denominator and EBX
 * numerator of the TSC/crystal ratio, ECX the crystal in Hz (0: not
 * enumerated). 0x16: EAX[15:0] the base frequency in MHz.
 */
#define CPUID_LEAF_TSC_RATIO 0x15
#define CPUID_LEAF_FREQUENCY 0x16
#define CPUID_BASE_MHZ_MASK  0xffffU
#define HZ_PER_MHZ	     1000000ULL
#define TENTHS		     10 /* the boot line prints MHz to 0.1 */
#define HZ_PER_TENTH_MHZ     (HZ_PER_MHZ / TENTHS)
#define PERCENT		     100

/*
 * Rates taken as plausible. The floor is below real CPUs (the slowest
 * x86-64 TSCs run at hundreds of MHz) because Bochs's TSC ticks once per
 * emulated instruction, at its "ips" setting (tools/run/boot.py: 50 MHz).
 */
#define TSC_MIN_HZ 10000000ULL	  /* 10 MHz */
#define TSC_MAX_HZ 10000000000ULL /* 10 GHz */

/* Calibration: runs of about this long, the median of this many. */
#define CALIBRATION_NS	 (10 * NSEC_PER_MSEC)
#define CALIBRATION_RUNS 5
/* Fewer good runs than this and the clock is not trusted. */
#define CALIBRATION_MIN_GOOD (CALIBRATION_RUNS / 2 + 1)
/*
 * A run gives up after this many TSC cycles (ten runs' worth at the
 * fastest plausible TSC) or this many clock reads (each is an I/O or
 * uncached access: a run takes some 10^4 of them on hardware, 10^5 in
 * Bochs): either means the clock stopped counting.
 */
#define RUN_MAX_TSC_CYCLES 1000000000ULL
#define RUN_MAX_READS	   10000000ULL
/*
 * A run whose reads were delayed past this many times its length is thrown
 * away (which also keeps the arithmetic in run_once in range).
 */
#define RUN_MAX_OVERSHOOT 4
/* Each clock/TSC sample keeps the tightest of this many tries. */
#define SAMPLE_TRIES 4
/* CPUID and a calibration further apart than this (percent): calibrate. */
#define CPUID_MAX_DISAGREEMENT_PCT 10

/* HPET registers (IA-PC HPET Specification 1.0a, 2.3). */
#define HPET_MMIO_SIZE	      1024
#define HPET_CAPABILITIES     0x000
#define HPET_CAP_REV_ID_MASK  0xffULL	   /* 0 is not a valid revision */
#define HPET_CAP_COUNTER_64   (1ULL << 13) /* COUNT_SIZE_CAP */
#define HPET_CAP_PERIOD_SHIFT 32	   /* COUNTER_CLK_PERIOD, in fs */
#define HPET_CONFIG	      0x010
#define HPET_CONFIG_ENABLE    0x1ULL /* ENABLE_CNF: main counter runs */
#define HPET_MAIN_COUNTER     0x0f0
/*
 * The specification's longest period is 100 ns (10 MHz); real HPETs run at
 * 14.318 to 25 MHz, QEMU's at 100 MHz: above 1 GHz is a bad read.
 */
#define HPET_MAX_PERIOD_FS 100000000ULL
#define HPET_MIN_PERIOD_FS 1000000ULL
#define FS_PER_SEC	   1000000000000000ULL

/* ACPI PM timer (ACPI 6.5, "Power Management Timer"): counts up. */
#define PM_TIMER_HZ	 3579545ULL
#define PM_TIMER_MASK_24 0x00ffffffULL
#define PM_TIMER_MASK_32 0xffffffffULL

/*
 * PIT (Intel 8254 datasheet). Channel 2 is the one whose gate software
 * controls (system control port B); its output only drives the speaker,
 * which stays off. Mode 2 with a count of 0 (65536) makes it a free-running
 * 16-bit down-counter that is read with a latch command and polled: no
 * interrupt is involved.
 */
#define PIT_HZ		     1193182ULL
#define PIT_CHANNEL2	     0x42
#define PIT_COMMAND	     0x43
#define PIT_SELECT_CHANNEL2  0x80
#define PIT_ACCESS_LATCH     0x00 /* latch the count for reading */
#define PIT_ACCESS_LOW_HIGH  0x30 /* low byte, then high byte */
#define PIT_MODE_RATE	     0x04 /* mode 2: rate generator */
#define PIT_COUNT_MAX	     0x00 /* reload value 0 means 65536 */
#define PIT_MASK	     0xffffULL
#define PORT_B		     0x61 /* system control port B */
#define PORT_B_TIMER2_GATE   0x01
#define PORT_B_SPEAKER_DATA  0x02
#define PORT_B_WRITABLE_BITS 0x0f /* bits 7:4 are read-only status */
#define BITS_PER_BYTE	     8

static uint64_t hz;
static const char *source = "none";

/* What each clock counts, once set up (clock_setup). */
struct clock_state {
	bool probed, usable;
	uint64_t hz;   /* ticks per second */
	uint64_t mask; /* the counter's width: it wraps at mask + 1 */
};

static struct clock_state clocks[TSC_CLOCK_COUNT];
static volatile uint8_t *hpet_regs;
static uint16_t pm_timer_port;
static uint8_t pit_saved_port_b;

static const char *const clock_names[TSC_CLOCK_COUNT] = {
	[TSC_CLOCK_HPET] = "hpet",
	[TSC_CLOCK_PMTIMER] = "pmtimer",
	[TSC_CLOCK_PIT] = "pit",
};

static const char *const clock_long_names[TSC_CLOCK_COUNT] = {
	[TSC_CLOCK_HPET] = "HPET",
	[TSC_CLOCK_PMTIMER] = "ACPI PM timer",
	[TSC_CLOCK_PIT] = "PIT",
};

const char *tsc_clock_name(enum tsc_clock clock)
{
	return clock < TSC_CLOCK_COUNT ? clock_names[clock] : "?";
}

uint64_t tsc_hz(void)
{
	return hz;
}

const char *tsc_source(void)
{
	return source;
}

/*
 * a * b / c, exactly, without a 128-bit division (freestanding code has no
 * libgcc for __udivti3): a = q * c + r, so the result is q * b + r * b / c,
 * and r * b < c * b. Callers keep c * b below 2^64 (every use here has
 * c, b <= 10^10 and 10^9, or bounds documented at the call). Saturates.
 */
static uint64_t mul_div(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t whole, part;

	if (__builtin_mul_overflow(a / c, b, &whole))
		return UINT64_MAX;
	part = (a % c) * b / c;
	if (__builtin_add_overflow(whole, part, &whole))
		return UINT64_MAX;
	return whole;
}

/* Before tsc_init, delays assume the fastest plausible TSC: longer, safe. */
static uint64_t hz_or_max(void)
{
	return hz ? hz : TSC_MAX_HZ;
}

uint64_t tsc_to_ns(uint64_t cycles)
{
	return mul_div(cycles, NSEC_PER_SEC, hz_or_max());
}

uint64_t ns_to_tsc(uint64_t ns)
{
	return mul_div(ns, hz_or_max(), NSEC_PER_SEC);
}

void tsc_delay_ns(uint64_t ns)
{
	uint64_t cycles = ns_to_tsc(ns);
	uint64_t start = tsc_read_ordered();

	/*
	 * Every pass takes more than one TSC cycle on any CPU, so this many
	 * passes cover the delay; the bound only matters if the TSC stopped.
	 */
	for (uint64_t pass = 0; pass <= cycles; pass++) {
		if (tsc_read_ordered() - start >= cycles)
			return;
		cpu_relax();
	}
}

static bool plausible(uint64_t rate)
{
	return rate >= TSC_MIN_HZ && rate <= TSC_MAX_HZ;
}

/* --- The clocks ---------------------------------------------------------- */

static uint64_t hpet_read64(uint32_t reg)
{
	return *(volatile uint64_t *)(hpet_regs + reg);
}

static void hpet_write64(uint32_t reg, uint64_t value)
{
	*(volatile uint64_t *)(hpet_regs + reg) = value;
}

static bool hpet_setup(struct clock_state *c)
{
	uint64_t phys, caps, period, config;

	if (!acpi_hpet_base(&phys))
		return false;
	if (!hpet_regs)
		hpet_regs = ioremap(phys, HPET_MMIO_SIZE, PTE_CACHE_UC);
	caps = hpet_read64(HPET_CAPABILITIES);
	period = caps >> HPET_CAP_PERIOD_SHIFT;
	if (!(caps & HPET_CAP_REV_ID_MASK) || period < HPET_MIN_PERIOD_FS ||
	    period > HPET_MAX_PERIOD_FS) {
		kprintf("tsc: warning: HPET at %#llx reports capabilities "
			"%#llx (period %llu fs, allowed %llu..%llu); not "
			"used\n",
			(unsigned long long)phys, (unsigned long long)caps,
			(unsigned long long)period, HPET_MIN_PERIOD_FS,
			HPET_MAX_PERIOD_FS);
		return false;
	}
	/* Firmware may leave the main counter halted. */
	config = hpet_read64(HPET_CONFIG);
	if (!(config & HPET_CONFIG_ENABLE))
		hpet_write64(HPET_CONFIG, config | HPET_CONFIG_ENABLE);
	c->hz = FS_PER_SEC / period;
	c->mask = (caps & HPET_CAP_COUNTER_64) ? UINT64_MAX : UINT32_MAX;
	return true;
}

static bool pm_timer_setup(struct clock_state *c)
{
	bool is_32bit;

	if (!acpi_pm_timer(&pm_timer_port, &is_32bit))
		return false;
	c->hz = PM_TIMER_HZ;
	c->mask = is_32bit ? PM_TIMER_MASK_32 : PM_TIMER_MASK_24;
	return true;
}

/* Gate channel 2 on (speaker off) and start it counting from 65536. */
static void pit_start(void)
{
	uint8_t b = inb(PORT_B);

	pit_saved_port_b = b & PORT_B_WRITABLE_BITS;
	b = (b & PORT_B_WRITABLE_BITS & ~PORT_B_SPEAKER_DATA) |
	    PORT_B_TIMER2_GATE;
	outb(PORT_B, b);
	outb(PIT_COMMAND,
	     PIT_SELECT_CHANNEL2 | PIT_ACCESS_LOW_HIGH | PIT_MODE_RATE);
	outb(PIT_CHANNEL2, PIT_COUNT_MAX);
	outb(PIT_CHANNEL2, PIT_COUNT_MAX);
}

static void pit_stop(void)
{
	outb(PORT_B, pit_saved_port_b);
}

static bool pit_setup(struct clock_state *c)
{
	c->hz = PIT_HZ;
	c->mask = PIT_MASK;
	return true;
}

/* The clock's count, as an up-counter modulo its mask + 1. */
static uint64_t clock_read(enum tsc_clock clock)
{
	uint64_t count;

	switch (clock) {
	case TSC_CLOCK_HPET:
		if (clocks[clock].mask == UINT32_MAX)
			return *(volatile uint32_t *)(hpet_regs +
						      HPET_MAIN_COUNTER);
		return hpet_read64(HPET_MAIN_COUNTER);
	case TSC_CLOCK_PMTIMER:
		return inl(pm_timer_port) & clocks[clock].mask;
	case TSC_CLOCK_PIT:
		outb(PIT_COMMAND, PIT_SELECT_CHANNEL2 | PIT_ACCESS_LATCH);
		count = inb(PIT_CHANNEL2);
		count |= (uint64_t)inb(PIT_CHANNEL2) << BITS_PER_BYTE;
		/* Counting down from 65536: negate to count up. */
		return -count & PIT_MASK;
	default:
		return 0;
	}
}

static bool clock_setup(enum tsc_clock clock)
{
	struct clock_state *c = &clocks[clock];

	if (c->probed)
		return c->usable;
	c->probed = true;
	switch (clock) {
	case TSC_CLOCK_HPET:
		c->usable = hpet_setup(c);
		break;
	case TSC_CLOCK_PMTIMER:
		c->usable = pm_timer_setup(c);
		break;
	case TSC_CLOCK_PIT:
		c->usable = pit_setup(c);
		break;
	default:
		break;
	}
	return c->usable;
}

/* --- Calibration ---------------------------------------------------------- */

/*
 * A clock reading and the TSC at that moment: the clock is read between
 * two TSC reads and the midpoint taken; of a few tries the tightest pair
 * is kept, so an interruption in between (SMI, emulator exit) is left out.
 */
static void sample(enum tsc_clock clock, uint64_t *tsc, uint64_t *count)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < SAMPLE_TRIES; i++) {
		uint64_t before = tsc_read_ordered();
		uint64_t value = clock_read(clock);
		uint64_t after = tsc_read_ordered();

		if (after - before < best) {
			best = after - before;
			*tsc = before + best / 2;
			*count = value;
		}
	}
}

enum run_result { RUN_OK, RUN_DISTURBED, RUN_STUCK };

/* One run: the TSC rate measured over CALIBRATION_NS of the clock. */
static enum run_result run_once(enum tsc_clock clock, uint64_t *rate)
{
	const struct clock_state *c = &clocks[clock];
	uint64_t target = mul_div(c->hz, CALIBRATION_NS, NSEC_PER_SEC);
	uint64_t tsc0, tsc1, count0, count1, prev, now, ticks = 0;
	uint64_t reads;

	sample(clock, &tsc0, &count0);
	prev = count0;
	for (reads = 0; reads < RUN_MAX_READS; reads++) {
		now = clock_read(clock);
		/* Masked differences survive the counter wrapping. */
		ticks += (now - prev) & c->mask;
		prev = now;
		if (ticks >= target)
			break;
		if (rdtsc() - tsc0 > RUN_MAX_TSC_CYCLES)
			return RUN_STUCK;
	}
	if (ticks < target)
		return RUN_STUCK;
	sample(clock, &tsc1, &count1);
	ticks += (count1 - prev) & c->mask;
	/* ticks * c->hz stays below 2^64: ticks <= 4 * hz / 100, hz <= 1e9. */
	if (ticks > RUN_MAX_OVERSHOOT * target)
		return RUN_DISTURBED;
	*rate = mul_div(tsc1 - tsc0, c->hz, ticks);
	return plausible(*rate) ? RUN_OK : RUN_DISTURBED;
}

uint64_t calibration_median(uint64_t *v, int n)
{
	for (int i = 1; i < n; i++) {
		uint64_t x = v[i];
		int j = i;

		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
	return v[n / 2];
}

uint64_t tsc_calibrate(enum tsc_clock clock)
{
	uint64_t rates[CALIBRATION_RUNS], flags;
	int good = 0, stuck = 0;

	if (clock >= TSC_CLOCK_COUNT || !clock_setup(clock))
		return 0;
	/* An interrupt handler inside a run would only add noise. */
	flags = irq_save();
	if (clock == TSC_CLOCK_PIT)
		pit_start();
	for (int i = 0; i < CALIBRATION_RUNS && !stuck; i++) {
		switch (run_once(clock, &rates[good])) {
		case RUN_OK:
			good++;
			break;
		case RUN_STUCK:
			stuck++;
			break;
		default:
			break;
		}
	}
	if (clock == TSC_CLOCK_PIT)
		pit_stop();
	irq_restore(flags);
	if (stuck) {
		/* Said once: later calls find the clock unusable. */
		clocks[clock].usable = false;
		kprintf("tsc: warning: the %s does not count; not used\n",
			clock_long_names[clock]);
		return 0;
	}
	if (good < CALIBRATION_MIN_GOOD) {
		kprintf("tsc: warning: the %s gave %d plausible TSC rates of "
			"%d; not used\n",
			clock_long_names[clock], good, CALIBRATION_RUNS);
		return 0;
	}
	return calibration_median(rates, good);
}

/* --- Boot ------------------------------------------------------------------ */

/* The rate CPUID states, or 0; *how names the leaf for the boot line. */
static uint64_t cpuid_rate(const char **how)
{
	uint32_t base_mhz = 0;

	if (boot_cpu.max_leaf >= CPUID_LEAF_FREQUENCY)
		base_mhz = cpuid(CPUID_LEAF_FREQUENCY, 0).eax &
			   CPUID_BASE_MHZ_MASK;
	if (boot_cpu.max_leaf >= CPUID_LEAF_TSC_RATIO) {
		struct cpuid_regs r = cpuid(CPUID_LEAF_TSC_RATIO, 0);

		/* Two 32-bit factors: the product fits in 64 bits. */
		if (r.eax && r.ebx && r.ecx) {
			*how = "CPUID leaf 0x15";
			return (uint64_t)r.ecx * r.ebx / r.eax;
		}
		/* Crystal not stated: the TSC runs at the base frequency. */
		if (r.eax && r.ebx && base_mhz) {
			*how = "CPUID leaves 0x15 and 0x16";
			return base_mhz * HZ_PER_MHZ;
		}
	}
	if (base_mhz) {
		*how = "CPUID leaf 0x16";
		return base_mhz * HZ_PER_MHZ;
	}
	return 0;
}

static bool far_apart(uint64_t a, uint64_t b)
{
	uint64_t diff = a > b ? a - b : b - a;

	return diff * PERCENT > MIN(a, b) * CPUID_MAX_DISAGREEMENT_PCT;
}

/* In tenths of a MHz, rounded: the kernel prints no floating point. */
static void print_rate(const char *how)
{
	uint64_t tenths = (hz + HZ_PER_TENTH_MHZ / 2) / HZ_PER_TENTH_MHZ;

	kprintf("tsc: %llu.%llu MHz from %s (invariant: %s)\n",
		(unsigned long long)(tenths / TENTHS),
		(unsigned long long)(tenths % TENTHS), how,
		boot_cpu.invariant_tsc ? "yes" : "no");
}

/*
 * IA32_TSC_ADJUST (SDM Vol. 3B, "Time-Stamp Counter"): every read of the
 * TSC adds it, and a write changes the TSC by as much as the MSR changes.
 * Firmware sometimes leaves a different value on each CPU, and then their
 * TSCs disagree by as much; the kernel compares TSCs across CPUs (wait
 * deadlines, the benchmarks' cross-CPU timings). Linux resets the boot
 * CPU's to 0 and sets each AP's to the boot CPU's value, which is then 0
 * too (arch/x86/kernel/tsc_sync.c): so does this.
 */
void tsc_adjust_reset_this_cpu(unsigned cpu)
{
	uint64_t value;

	if (!boot_cpu.tsc_adjust) {
		if (cpu == 0)
			kprintf("tsc: TSC_ADJUST: n/a (CPUID.7:EBX[1] "
				"clear)\n");
		return;
	}
	if (probe_rdmsr(MSR_TSC_ADJUST, &value)) {
		kprintf("tsc: warning: CPUID has TSC_ADJUST, but reading it "
			"on CPU %u raised #GP\n",
			cpu);
		return;
	}
	if (!value) {
		if (cpu == 0)
			kprintf("tsc: TSC_ADJUST 0 on the boot CPU; each other "
				"CPU says so only if its was not\n");
		return;
	}
	if (probe_wrmsr(MSR_TSC_ADJUST, 0)) {
		kprintf("tsc: warning: TSC_ADJUST is %lld on CPU %u and "
			"writing 0 raised #GP\n",
			(long long)value, cpu);
		return;
	}
	kprintf("tsc: TSC_ADJUST was %lld on CPU %u, reset\n", (long long)value,
		cpu);
}

void tsc_init(void)
{
	const char *how = NULL;
	uint64_t stated, measured = 0;
	enum tsc_clock clock;
	static char detail[64];

	/* First: the reset moves this CPU's TSC, and the rate is measured
	 * on it. */
	tsc_adjust_reset_this_cpu(0);
	stated = cpuid_rate(&how);

	if (stated && !plausible(stated)) {
		kprintf("tsc: warning: %s states %llu Hz; ignored\n", how,
			(unsigned long long)stated);
		stated = 0;
	}
	for (clock = 0; clock < TSC_CLOCK_COUNT; clock++) {
		measured = tsc_calibrate(clock);
		if (measured)
			break;
	}
	if (stated && measured && far_apart(stated, measured)) {
		kprintf("tsc: warning: %s: %llu Hz, but the %s measures "
			"%llu Hz; using the measurement\n",
			how, (unsigned long long)stated,
			clock_long_names[clock], (unsigned long long)measured);
		stated = 0;
	}
	if (stated) {
		hz = stated;
		source = "cpuid";
		if (measured) {
			ksnprintf(detail, sizeof(detail), "%s (the %s agrees)",
				  how, clock_long_names[clock]);
			how = detail;
		}
	} else if (measured) {
		hz = measured;
		source = clock_names[clock];
		ksnprintf(detail, sizeof(detail), "%s calibration",
			  clock_long_names[clock]);
		how = detail;
	} else {
		/* Too fast a guess only makes delays longer: the safe side. */
		hz = TSC_MAX_HZ;
		source = "guess";
		how = "a guess: no clock gave a plausible rate";
		kprintf("tsc: warning: no CPUID rate and no usable HPET, PM "
			"timer or PIT; delays will be long\n");
	}
	print_rate(how);
}
