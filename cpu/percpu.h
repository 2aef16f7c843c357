/* SPDX-License-Identifier: MIT */
/*
 * Per-CPU data, reached through the GS base: each CPU's IA32_GS_BASE points
 * at its own struct percpu, whose first field points at itself, so
 * this_cpu() is one load from %gs:0 and needs no CPU number first.
 */
#ifndef CPU_PERCPU_H
#define CPU_PERCPU_H

#include "cpu/gdt.h"
#include "arch/x86.h"
#include "lib/types.h"
#include "sync/cpumask.h"

struct thread;
struct tlb_cpu;

/*
 * The first three fields are read by assembly (proc/syscall_entry.asm) at the
 * offsets PERCPU_* in arch/consts.inc; static_asserts in cpu/percpu.c check
 * them.
 */
struct percpu {
	struct percpu *self;  /* must stay first: this_cpu() reads %gs:0 */
	uint64_t syscall_rsp; /* top of the running thread's kernel stack */
	uint64_t user_rsp;    /* scratch: the user RSP during SYSCALL entry */
	/* Written once at bring-up, read by anyone. */
	unsigned index;	  /* 0 .. cpu_count-1; 0 is the boot CPU */
	uint32_t apic_id; /* as the MADT lists it */
	uint64_t stack_top;
	struct cpu_tables *tables; /* GDT, TSS, IST stacks */
	/* Written only by this CPU (sched/sched.c); read with %gs loads. */
	struct thread *current; /* the thread running here */
	unsigned preempt_count; /* > 0: do not switch threads */
	bool need_resched;	/* switch at the next preemption point */
	/* mm/tlb.c's state of this CPU, from its bring-up (tlb_init_cpu). */
	struct tlb_cpu *tlb;
};

static inline struct percpu *this_cpu(void)
{
	struct percpu *p;

	__asm__ volatile("movq %%gs:0, %0" : "=r"(p));
	return p;
}

/*
 * One field of this CPU's struct percpu, in one %gs-relative load (the
 * register operand gives the load its size). A thread that is preempted
 * and moved to another CPU between two loads, this_cpu() and then the
 * field, would otherwise read the old CPU's answer.
 */
#define this_cpu_read(field)                                             \
	({                                                               \
		__typeof__(this_cpu()->field) value_;                    \
		__asm__ volatile("mov %%gs:%c1, %0"                      \
				 : "=r"(value_)                          \
				 : "i"(offsetof(struct percpu, field))); \
		value_;                                                  \
	})

/* The running thread. */
static inline struct thread *current_thread(void)
{
	return this_cpu_read(current);
}

static inline unsigned this_cpu_index(void)
{
	return this_cpu_read(index);
}

/*
 * Preemption off and on, for code that must stay on this CPU: a count in
 * this CPU's data, changed with one %gs-relative instruction so no
 * migration can split the read from the write. The "memory" clobbers keep
 * the compiler from moving the protected accesses outside the pair.
 */
static inline void preempt_disable(void)
{
	__asm__ volatile("incl %%gs:%c0"
			 :
			 : "i"(offsetof(struct percpu, preempt_count))
			 : "memory");
}

/* The scheduler's preemption point (sched/sched.c), entered on the way out. */
void sched_preempt_point(void);

static inline void preempt_enable(void)
{
	__asm__ volatile("decl %%gs:%c0"
			 :
			 : "i"(offsetof(struct percpu, preempt_count))
			 : "memory");
	if (irqs_enabled())
		sched_preempt_point();
}

/* Every CPU the MADT lists and we started, by index (NULL beyond count). */
extern struct percpu *cpus[MAX_CPUS];
extern unsigned cpu_count; /* CPUs that came online */
/*
 * Each CPU sets its own bit as it comes online, one CPU at a time (the boot
 * CPU first, then each AP while the boot CPU waits for its announcement,
 * init/smp_boot.c), and no bit is ever cleared: one writer at a time, so a plain
 * mask.
 */
extern struct cpumask cpu_online_mask;

/* Points this CPU's GS base at p (after gdt_load, which resets GS). */
void percpu_install(struct percpu *p);

/*
 * The boot CPU's per-CPU data, installed right after its GDT; its APIC ID
 * is filled in once the local APIC is up.
 */
void percpu_init_boot_cpu(void);

#endif
