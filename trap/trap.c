// SPDX-License-Identifier: MIT
/*
 * What happens on an exception:
 *  1. a page fault on a user address, in ring 3 or at an instruction listed
 *     in the exception table, that the page tables allow (a stale TLB entry:
 *     mm/fault.c decides, through task_user_page_retry) returns to the
 *     faulting instruction, which runs again;
 *  2. any other fault in ring 3 ends its task (task_user_fault);
 *  3. a fault at an instruction listed in the exception table resumes at its
 *     fixup (the description is kept for tests, nothing is printed);
 *  4. anything else in the kernel is fatal: the description, the registers
 *     and a backtrace are printed by panic_with_frame.
 * Interrupts (vectors 32 and up) go to the handler installed for them, then
 * the local APIC gets its end-of-interrupt. Two kinds get no EOI: the APIC's
 * spurious vector (the SDM says not to, Vol. 3A 11.9) and spurious 8259
 * interrupts (the 8259 is not the local APIC).
 */
#include "trap/trap.h"
#include "cpu/cpu.h"
#include "arch/extable.h"
#include "lib/format.h"
#include "console/kprintf.h"
#include "trap/panic.h"
#include "trap/symbols.h"
#include "arch/x86.h"
#include "cpu/platform.h"
#include "cpu/percpu.h"

#define REPORT_SIZE TRAP_REPORT_SIZE

static const char *const exception_names[32] = {
	[0] = "#DE divide error",
	[1] = "#DB debug",
	[2] = "NMI",
	[3] = "#BP breakpoint",
	[4] = "#OF overflow",
	[5] = "#BR bound range",
	[6] = "#UD invalid opcode",
	[7] = "#NM device not available",
	[8] = "#DF double fault",
	[9] = "coprocessor segment overrun",
	[10] = "#TS invalid TSS",
	[11] = "#NP segment not present",
	[12] = "#SS stack fault",
	[13] = "#GP general protection",
	[14] = "#PF page fault",
	[16] = "#MF x87 floating point",
	[17] = "#AC alignment check",
	[18] = "#MC machine check",
	[19] = "#XM SIMD floating point",
	[20] = "#VE virtualization",
	[21] = "#CP control protection",
	[28] = "#HV hypervisor injection",
	[29] = "#VC VMM communication",
	[30] = "#SX security",
};

static interrupt_handler handlers[256];
static bool spurious[256];
static uint64_t recovered_count;
static uint64_t nmi_count;
static char last_recovered[REPORT_SIZE];

static const char *vector_name(uint64_t vector)
{
	if (vector < 32)
		return exception_names[vector] ? exception_names[vector]
					       : "reserved exception";
	return "interrupt";
}

size_t trap_describe(const struct trap_frame *f, uint64_t cr2, char *buf,
		     size_t size)
{
	char symbol[96];
	int n;

	symbol_format(f->rip, symbol, sizeof(symbol));
	n = ksnprintf(buf, size,
		      "exception %s (vector %llu) error=%#llx rip=%#llx %s",
		      vector_name(f->vector), (unsigned long long)f->vector,
		      (unsigned long long)f->error_code,
		      (unsigned long long)f->rip, symbol);
	if (f->vector == VEC_PAGE_FAULT && (size_t)n < size) {
		uint64_t e = f->error_code;

		n += ksnprintf(buf + n, size - (size_t)n,
			       "\n  cr2=%#llx: %s %s in %s mode%s%s",
			       (unsigned long long)cr2,
			       e & PF_FETCH   ? "instruction fetch"
			       : e & PF_WRITE ? "write"
					      : "read",
			       e & PF_PRESENT ? "violating page protection"
					      : "of a page not present",
			       e & PF_USER ? "user" : "kernel",
			       e & PF_RSVD ? ", reserved bit set" : "",
			       e & PF_PK ? ", protection key" : "");
	}
	if ((f->vector == VEC_PAGE_FAULT || f->vector == VEC_DOUBLE_FAULT) &&
	    (size_t)n < size &&
	    (kmap_is_stack_guard(cr2) || kmap_is_stack_guard(f->rsp - 8)))
		n += ksnprintf(buf + n, size - (size_t)n,
			       "\n  stack overflow: rsp=%#llx reached the "
			       "stack's guard page",
			       (unsigned long long)f->rsp);
	return (size_t)n < size ? (size_t)n : size - 1;
}

void trap_print_registers(const struct trap_frame *f)
{
	kprintf("  rax=%016llx rbx=%016llx rcx=%016llx\n"
		"  rdx=%016llx rsi=%016llx rdi=%016llx\n"
		"  rbp=%016llx rsp=%016llx r8 =%016llx\n"
		"  r9 =%016llx r10=%016llx r11=%016llx\n"
		"  r12=%016llx r13=%016llx r14=%016llx\n"
		"  r15=%016llx rip=%016llx rflags=%08llx\n"
		"  cs=%04llx ss=%04llx cr0=%08llx cr2=%016llx\n"
		"  cr3=%016llx cr4=%08llx\n",
		(unsigned long long)f->rax, (unsigned long long)f->rbx,
		(unsigned long long)f->rcx, (unsigned long long)f->rdx,
		(unsigned long long)f->rsi, (unsigned long long)f->rdi,
		(unsigned long long)f->rbp, (unsigned long long)f->rsp,
		(unsigned long long)f->r8, (unsigned long long)f->r9,
		(unsigned long long)f->r10, (unsigned long long)f->r11,
		(unsigned long long)f->r12, (unsigned long long)f->r13,
		(unsigned long long)f->r14, (unsigned long long)f->r15,
		(unsigned long long)f->rip, (unsigned long long)f->rflags,
		(unsigned long long)f->cs, (unsigned long long)f->ss,
		(unsigned long long)read_cr0(), (unsigned long long)read_cr2(),
		(unsigned long long)read_cr3(), (unsigned long long)read_cr4());
}

interrupt_handler trap_set_handler(unsigned vector, interrupt_handler handler)
{
	KASSERT(vector >= VEC_FIRST_IRQ && vector < 256,
		"vector %u is an exception, not an interrupt", vector);
	return __atomic_exchange_n(&handlers[vector], handler,
				   __ATOMIC_SEQ_CST);
}

void trap_set_spurious(unsigned vector, interrupt_handler handler)
{
	KASSERT(vector >= VEC_FIRST_IRQ && vector < 256,
		"vector %u is an exception, not an interrupt", vector);
	__atomic_store_n(&handlers[vector], handler, __ATOMIC_RELEASE);
	__atomic_store_n(&spurious[vector], true, __ATOMIC_RELEASE);
}

static void dispatch_interrupt(struct trap_frame *f)
{
	unsigned vector = (unsigned)f->vector;
	interrupt_handler handler;
	bool is_spurious;

	/* The flag first: its acquire pairs with the release that
	 * trap_set_spurious stores it with, after the handler. */
	is_spurious = __atomic_load_n(&spurious[vector], __ATOMIC_ACQUIRE);
	handler = __atomic_load_n(&handlers[vector], __ATOMIC_ACQUIRE);
	if (is_spurious) {
		if (handler)
			handler(f);
		return;
	}
	if (handler)
		handler(f);
	else
		kprintf("trap: interrupt on vector %u with no handler "
			"(ignored)\n",
			vector);
	lapic_eoi();
	/* The way out of an interrupt is where preemption happens (the
	 * scheduler's callback, declared with preempt_enable). */
	sched_preempt_point();
	/* Back to user mode: a killed task's thread ends here. */
	if (f->cs & SELECTOR_RPL3)
		task_check_killed();
}

/*
 * A spurious page fault on a user address (trap.h, task_user_page_retry):
 * the access runs again when this returns true. Only faults that may touch
 * user memory at all are asked about: ring 3's, and the kernel's at an
 * instruction of the exception table (the user copies). Any other kernel
 * fault is a bug whatever the tables say. Back to ring 3, a killed task's
 * thread ends here, as on the way out of an interrupt.
 */
static bool user_page_retried(struct trap_frame *f, uint64_t cr2)
{
	if (f->vector != VEC_PAGE_FAULT)
		return false;
	if (!(f->cs & SELECTOR_RPL3) && !extable_fixup(f->rip))
		return false;
	if (!task_user_page_retry(f, cr2))
		return false;
	if (f->cs & SELECTOR_RPL3)
		task_check_killed();
	return true;
}

void trap_dispatch(struct trap_frame *f)
{
	/* CR2 first: a fault while handling this one would overwrite it. */
	uint64_t cr2 = read_cr2();
	char report[REPORT_SIZE];
	uint64_t fixup;

	/* trap/isr.asm cleared AC on the way in, or SMAP would be off
	 * for every handler entered from code that had it set. */
	KASSERT(!entry_clac || !(read_rflags() & RFLAGS_AC),
		"RFLAGS.AC set in the kernel: vector %llu from rip %#llx",
		(unsigned long long)f->vector, (unsigned long long)f->rip);
	if (f->vector >= VEC_FIRST_IRQ) {
		dispatch_interrupt(f);
		return;
	}
	if (f->vector == VEC_NMI) {
		/* Another CPU panicked and wants this one quiet. */
		if (panic_stopping_others())
			halt_forever();
		/* The NMI may have come while this CPU held the console lock:
		 * the emergency path does not wait for it forever. */
		kprintf_emergency("trap: NMI on CPU %u (ignored)\n",
				  this_cpu_index());
		__atomic_fetch_add(&nmi_count, 1, __ATOMIC_RELEASE);
		return;
	}
	if (user_page_retried(f, cr2))
		return;
	if (f->cs & SELECTOR_RPL3)
		task_user_fault(f, cr2);
	fixup = extable_fixup(f->rip);
	if (fixup &&
	    (f->vector == VEC_PAGE_FAULT || f->vector == VEC_GENERAL_PROTECT)) {
		trap_describe(f, cr2, last_recovered, sizeof(last_recovered));
		__atomic_fetch_add(&recovered_count, 1, __ATOMIC_RELAXED);
		f->rip = fixup;
		return;
	}
	trap_describe(f, cr2, report, sizeof(report));
	panic_with_frame(f, "%s", report);
}

uint64_t trap_recovered_count(void)
{
	return __atomic_load_n(&recovered_count, __ATOMIC_RELAXED);
}

uint64_t trap_nmi_count(void)
{
	return __atomic_load_n(&nmi_count, __ATOMIC_ACQUIRE);
}

const char *trap_last_recovered(void)
{
	return last_recovered;
}
