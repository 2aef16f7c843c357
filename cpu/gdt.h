/* SPDX-License-Identifier: MIT */
/*
 * The GDT and TSS. Long mode ignores segment bases and limits for code and
 * data, but still needs descriptors for the privilege levels, a TSS for the
 * ring-0 stack and the IST stacks, and a layout SYSCALL/SYSRET accept:
 * SYSRET loads CS = STAR[63:48] + 16 and SS = STAR[63:48] + 8, so user data
 * sits just below user code (SDM Vol. 3A, 5.8.8).
 */
#ifndef CPU_GDT_H
#define CPU_GDT_H

#include "lib/types.h"
#include "arch/consts.h"

#define GDT_TSS	    0x30 /* 16 bytes: two slots */
#define GDT_ENTRIES 8

/* Interrupt stack table slots (1-based, as the IDT gate names them). */
#define IST_DOUBLE_FAULT  1
#define IST_NMI		  2
#define IST_MACHINE_CHECK 3
#define IST_STACKS	  3
#define IST_STACK_SIZE	  0x4000

struct tss {
	uint32_t reserved0;
	uint64_t rsp[3]; /* stack for entry from ring 3 (rsp[0]) */
	uint64_t reserved1;
	uint64_t ist[7];
	uint64_t reserved2;
	uint16_t reserved3;
	uint16_t iomap_base; /* beyond the limit: no I/O bitmap */
} __packed;

/* One CPU's descriptor tables and emergency stacks. */
struct cpu_tables {
	uint64_t gdt[GDT_ENTRIES];
	struct tss tss;
	uint8_t ist_stacks[IST_STACKS][IST_STACK_SIZE] __aligned(16);
};

/* Fills tables, loads the GDT, reloads the segment registers, loads TR. */
void gdt_load(struct cpu_tables *tables);

/* The boot CPU's tables. */
extern struct cpu_tables boot_cpu_tables;

#endif
