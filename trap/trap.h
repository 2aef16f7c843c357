/* SPDX-License-Identifier: MIT */
/* Exceptions and interrupts: the saved state and the dispatcher. */
#ifndef TRAP_TRAP_H
#define TRAP_TRAP_H

#include "lib/types.h"

/* Layout fixed by trap/isr.asm: general registers, then the CPU's frame. */
struct trap_frame {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector;
	uint64_t error_code; /* 0 for vectors without one */
	uint64_t rip, cs, rflags, rsp, ss;
};

_Static_assert(sizeof(struct trap_frame) == 22 * 8,
	       "trap/isr.asm pushes 22 words");

/* Exception vectors (SDM Vol. 3A, table 6-1). */
#define VEC_NMI		    2
#define VEC_BREAKPOINT	    3
#define VEC_DOUBLE_FAULT    8
#define VEC_GENERAL_PROTECT 13
#define VEC_PAGE_FAULT	    14
#define VEC_MACHINE_CHECK   18
#define VEC_FIRST_IRQ	    32

/* Page-fault error code bits (SDM Vol. 3A, 4.7). */
#define PF_PRESENT 0x01
#define PF_WRITE   0x02
#define PF_USER	   0x04
#define PF_RSVD	   0x08
#define PF_FETCH   0x10
#define PF_PK	   0x20

void trap_dispatch(struct trap_frame *frame);

typedef void (*interrupt_handler)(struct trap_frame *frame);

/*
 * Installs the handler for an interrupt vector (VEC_FIRST_IRQ..255) and
 * returns the previous one (NULL if none). Handlers run with interrupts
 * off; the dispatcher signals the end of interrupt to the local APIC after
 * the handler returns.
 */
interrupt_handler trap_set_handler(unsigned vector, interrupt_handler handler);

/*
 * Vectors whose interrupts are spurious (the local APIC's spurious vector,
 * the 8259's IRQ 7 and 15): counted, passed to handler (may be NULL), and
 * given no end of interrupt, which the SDM forbids for the APIC's (Vol. 3A
 * 11.9) and which the 8259 does not take from the local APIC. Installed by
 * the driver that owns the vector (apic/lapic.c, apic/pic.c).
 */
void trap_set_spurious(unsigned vector, interrupt_handler handler);

/*
 * Provided by the layers above (the `provide` lines of
 * docs/architecture.layers): the trap path calls them without including
 * their headers. Each is part of what a trap means, so it is a plain
 * function, not a pointer filled at init.
 *  - lapic_eoi: the end of interrupt, sent after each handler returns
 *    (apic/lapic.c; no interrupt is unmasked before the local APIC is set
 *    up, and spurious vectors get none).
 *  - task_user_page_retry: a page fault on a user address, from ring 3 or
 *    from a user copy (an exception-table entry); true when the page tables
 *    allow the access, so the CPU faulted on a stale entry and the access
 *    runs again (proc/task.c, mm/fault.c). Asked before task_user_fault
 *    and before the exception table.
 *  - task_user_fault: a fault in ring 3; reports it and ends the task
 *    (proc/task.c).
 *  - task_check_killed: on the way back to ring 3 from an interrupt or a
 *    retried fault, a killed task's thread ends (proc/task.c).
 *  - kmap_is_stack_guard: whether an address lies in a stack's guard page,
 *    for fault reports (mm/kmap.c).
 */
void lapic_eoi(void);
bool task_user_page_retry(struct trap_frame *frame, uint64_t cr2);
__noreturn void task_user_fault(struct trap_frame *frame, uint64_t cr2);
void task_check_killed(void);
bool kmap_is_stack_guard(uint64_t va);

/* Room for one exception's description (trap_describe). */
#define TRAP_REPORT_SIZE 512

/* The entry point of each vector (trap/isr.asm), for the IDT. */
extern const uint64_t isr_stub_table[256];

/*
 * Writes the exception's description: name, vector, error code decoded,
 * RIP with its symbol, CR2 for page faults. Returns the length.
 */
size_t trap_describe(const struct trap_frame *frame, uint64_t cr2, char *buf,
		     size_t size);

/* Prints the general registers of frame. */
void trap_print_registers(const struct trap_frame *frame);

/*
 * Faults recovered through the exception table: how many, and the
 * description of the last one (tests read it to check the report).
 */
uint64_t trap_recovered_count(void);
const char *trap_last_recovered(void);

/* NMIs this kernel handled and returned from (not those of a panic). */
uint64_t trap_nmi_count(void);

/* Fills frame with the caller's registers (trap/isr.asm). */
void capture_registers(struct trap_frame *frame);

#endif
