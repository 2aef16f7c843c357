/* SPDX-License-Identifier: MIT */
/*
 * The local APIC: one interface, two back ends.
 *
 * xAPIC: registers are 32-bit MMIO at the APIC base (0xfee00000 unless the
 * MADT or IA32_APIC_BASE say otherwise), 16 bytes apart, mapped uncached.
 * x2APIC: the same registers as MSRs 0x800 + offset/16, with 32-bit APIC
 * IDs and a single 64-bit ICR (Intel SDM Vol. 3A, 11.12).
 *
 * Callers use the xAPIC register offsets below with lapic_read/lapic_write;
 * the back end translates. The mode is chosen once at boot: x2APIC whenever
 * CPUID has it, unless `x2apic=off` or the DMAR table's x2APIC opt-out
 * (and the firmware has not locked x2APIC on, in which case we stay in it
 * and say so). The boot report line gives the reason.
 */
#ifndef APIC_LAPIC_H
#define APIC_LAPIC_H

#include "lib/types.h"

/* Register offsets (SDM Vol. 3A, table 11-1), bit fields under each. */
#define LAPIC_ID	      0x020
#define LAPIC_VERSION	      0x030
#define LAPIC_TPR	      0x080 /* task priority: 0 accepts every vector */
#define LAPIC_EOI	      0x0b0
#define LAPIC_SPURIOUS	      0x0f0
#define LAPIC_SPURIOUS_ENABLE 0x100 /* APIC software enable */
#define LAPIC_ESR	      0x280 /* error status: write, then read */
#define LAPIC_ICR_LOW	      0x300
#define ICR_DELIVERY_MODE     0x00700 /* bits 10:8: one of the four below */
#define ICR_FIXED	      0x00000
#define ICR_NMI		      0x00400
#define ICR_INIT	      0x00500
#define ICR_STARTUP	      0x00600
#define ICR_DELIVERY_PENDING  0x01000 /* xAPIC only */
#define ICR_LEVEL_ASSERT      0x04000
#define ICR_DEST_ALL_BUT_SELF 0xc0000
#define LAPIC_ICR_HIGH	      0x310 /* xAPIC: destination in bits 31:24 */
#define LAPIC_LVT_TIMER	      0x320
#define LVT_MASKED	      0x10000
#define LVT_TIMER_ONESHOT     0x00000
#define LVT_TIMER_PERIODIC    0x20000
#define LVT_TIMER_DEADLINE    0x40000
#define LAPIC_LVT_LINT0	      0x350
#define LAPIC_LVT_LINT1	      0x360
#define LVT_DELIVERY_MODE     0x00700 /* bits 10:8 */
#define LVT_DELIVERY_NMI      0x00400
#define LAPIC_LVT_ERROR	      0x370
#define LAPIC_TIMER_INITIAL   0x380
#define LAPIC_TIMER_CURRENT   0x390
#define LAPIC_TIMER_DIVIDE    0x3e0
#define LAPIC_TIMER_DIVIDE_1  0xb

/* Interrupt vectors the kernel owns (0-31 are exceptions). */
#define VECTOR_TIMER	     0x20
#define VECTOR_CALL_FUNCTION 0xf0 /* smp_call_function_many requests */
#define VECTOR_APIC_ERROR    0xfe
#define VECTOR_SPURIOUS	     0xff

enum lapic_mode {
	LAPIC_XAPIC,
	LAPIC_X2APIC,
};

/* What the APIC mode is chosen from. */
struct lapic_mode_facts {
	bool cpu_x2apic;      /* CPUID has x2APIC */
	bool firmware_x2apic; /* IA32_APIC_BASE: x2APIC already enabled */
	bool allow_x2apic;    /* x2apic=on */
	bool dmar_opt_out;    /* the DMAR table's X2APIC_OPT_OUT flag */
};

/*
 * x2APIC when the CPU has it, unless x2apic=off or the DMAR table's x2APIC
 * opt-out says otherwise. The opt-out asks the OS to stay in xAPIC mode
 * unless it remaps interrupts, which this kernel never does. Firmware that
 * already enabled x2APIC wins over both: leaving x2APIC for xAPIC needs the
 * APIC disabled in between (SDM Vol. 3A, 11.12.5), losing its state while
 * the firmware may rely on it. Pure; sets *out and returns why, for the
 * boot report.
 */
const char *lapic_choose_mode(const struct lapic_mode_facts *f,
			      enum lapic_mode *out);

/*
 * Chooses the mode (from CPUID, `x2apic=`, the DMAR's x2APIC opt-out and
 * the firmware's state), maps the xAPIC page if needed and enables this
 * (the boot) CPU's APIC.
 * lapic_phys: the APIC base from the MADT (0: use IA32_APIC_BASE).
 */
void lapic_init_boot_cpu(uint64_t lapic_phys);

/* Enables the APIC of an application processor in the boot CPU's mode. */
void lapic_init_this_cpu(void);

enum lapic_mode lapic_mode(void);
const char *lapic_mode_name(void);

/* This CPU's APIC ID (32 bits in x2APIC mode, 8 in xAPIC mode). */
uint32_t lapic_id(void);

uint32_t lapic_read(uint32_t reg);
void lapic_write(uint32_t reg, uint32_t value);
void lapic_eoi(void);

/*
 * Sends an IPI. The ICR_* delivery mode and shorthand bits go in command;
 * destination is an APIC ID (ignored with a shorthand). Waits, in xAPIC
 * mode, until the APIC has accepted the previous IPI.
 */
void lapic_send_ipi(uint32_t destination, uint32_t command);

/* Vector + fixed delivery to one CPU. */
static inline void lapic_send_fixed(uint32_t apic_id, uint8_t vector)
{
	lapic_send_ipi(apic_id, ICR_FIXED | vector);
}

/* Vector + fixed delivery to every CPU but this one (one ICR write). */
static inline void lapic_send_all_but_self(uint8_t vector)
{
	lapic_send_ipi(0, ICR_FIXED | ICR_DEST_ALL_BUT_SELF | vector);
}

/* Errors the APIC latched since the last call (ESR), for reports. */
uint32_t lapic_read_errors(void);

#endif
