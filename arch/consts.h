/* SPDX-License-Identifier: MIT */
/*
 * Constants shared with the assembly files. arch/consts.inc is this file's
 * twin for NASM; tools/check/consts.py checks that every name defined there
 * has the same value here.
 */
#ifndef ARCH_CONSTS_H
#define ARCH_CONSTS_H

/* Memory layout (docs/memory-layout.md) */
#define KERNEL_VMA	0xffffffff80000000ULL
#define KERNEL_PHYS	0x0000000000100000ULL
#define DIRECT_MAP_BASE 0xffff800000000000ULL
#define BOOT_STACK_SIZE 0x4000
#define PAGE_SIZE	0x1000ULL
#define TRAMPOLINE_PHYS 0x8000ULL

/* Multiboot2 (spec sections 3.1.2 and 3.2) */
#define MB2_HEADER_MAGIC 0xe85250d6U
#define MB2_BOOT_MAGIC	 0x36d76289U

/* Segment selectors (cpu/gdt.c builds the same layout) */
#define GDT_KERNEL_CODE 0x08
#define GDT_KERNEL_DATA 0x10
#define GDT_USER_CODE32 0x18 /* not present: the STAR[63:48] base for SYSRET */
#define GDT_USER_DATA	0x20
#define GDT_USER_CODE	0x28
#define SELECTOR_RPL3	3

/* struct percpu (cpu/percpu.h) fields read through %gs by assembly */
#define PERCPU_SYSCALL_RSP 0x08
#define PERCPU_USER_RSP	   0x10

/* The system calls the SYSCALL entry hands straight to the IPC fast path
 * (uapi/syscall.h numbers them; proc/syscall.c checks these) */
#define SYSCALL_FAST_FIRST 19 /* SYS_IPC_CALL */
#define SYSCALL_FAST_LAST  20 /* SYS_IPC_REPLY_RECV */

/* Control registers and EFER (Intel SDM Vol. 3A, 2.5 and 2.2.1) */
#define CR0_PE	    0x00000001ULL
#define CR0_WP	    0x00010000ULL
#define CR0_PG	    0x80000000ULL
#define CR4_PAE	    0x00000020ULL
#define MSR_EFER    0xc0000080U
#define MSR_GS_BASE 0xc0000101U
#define EFER_LME    0x00000100ULL
#define EFER_NXE    0x00000800ULL

/* Page-table entry bits (SDM Vol. 3A, 4.5) */
#define PTE_PRESENT 0x001ULL
#define PTE_WRITE   0x002ULL
#define PTE_HUGE    0x080ULL

/* CPUID (SDM Vol. 2A, CPUID) */
#define EFLAGS_ID	   0x00200000ULL
#define CPUID_EXT_MAX	   0x80000000U
#define CPUID_EXT_FEATURES 0x80000001U
#define CPUID_EXT_EDX_NX   0x00100000U
#define CPUID_EXT_EDX_LM   0x20000000U

/* 16550 UART on COM1 */
#define COM1_PORT 0x3f8

#endif
