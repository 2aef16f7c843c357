/* SPDX-License-Identifier: MIT */
/*
 * The grade's record of how the boot CPU started each AP, built into the
 * injection kernel alone (lib/inject.h): the default kernel starts its
 * CPUs without it.
 *
 * lapic_send_ipi notes every INIT and STARTUP it sends, with the TSC read
 * after the ICR write. init/smp_boot.c notes, each time the boot CPU moves
 * on from a CPU it sent a STARTUP (to start the next one, or past the
 * last), whether that CPU had announced itself by then. After the census
 * it prints one line per CPU that got an INIT or a STARTUP:
 *
 *	smp: probe apic_id=A ipis=I init_wait=W answered=Y
 *
 * I lists the IPIs in order, each but the first with the microseconds
 * since the one before it: "INIT,STARTUP+10012us,STARTUP+203us" ("..."
 * after the last one the record holds). W is `ok` when the
 * first STARTUP came at least the given wait after the INIT before it, by
 * the TSC ticks that tsc_delay_ns counts, `short` when sooner, `none` with
 * no INIT before a STARTUP. Y is `yes` or `no`, or `-` when no STARTUP
 * was sent. The grade reads it (tools/labs/lab_checks.py); the microseconds
 * are for a reader, and no check compares them with a threshold.
 */
#ifndef APIC_STARTUP_PROBE_H
#define APIC_STARTUP_PROBE_H

#include "lib/inject.h"
#include "lib/types.h"

/* lapic_send_ipi sent command to destination (it keeps INIT and STARTUP). */
void startup_probe_ipi(uint32_t destination, uint32_t command);

/* The boot CPU moves on from the last CPU it sent a STARTUP; answered:
 * that CPU had announced itself. Only the first note per CPU counts. */
void startup_probe_moved_on(bool answered);

/* Prints the record; init_wait_ns: the wait after INIT the line judges. */
void startup_probe_report(uint64_t init_wait_ns);

#endif
