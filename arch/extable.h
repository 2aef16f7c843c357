/* SPDX-License-Identifier: MIT */
/*
 * The exception table: instructions allowed to fault, each with the address
 * to resume at. An entry is placed in section .extable next to the
 * instruction it covers (see arch/probe.asm).
 */
#ifndef ARCH_EXTABLE_H
#define ARCH_EXTABLE_H

#include "lib/types.h"

struct extable_entry {
	uint64_t fault_rip;
	uint64_t fixup_rip;
};

/* The fixup for a fault at rip, or 0 when that instruction has none. */
uint64_t extable_fixup(uint64_t rip);

/* Fault-tolerant accesses: 0, or -EFAULT when the access faulted. */
int probe_read_u64(const void *addr, uint64_t *out);
int probe_write_u64(void *addr, uint64_t value);

/* MSR accesses that survive a #GP: 0, or -EFAULT when the access faulted. */
int probe_rdmsr(uint32_t msr, uint64_t *out);
int probe_wrmsr(uint32_t msr, uint64_t value);

#endif
