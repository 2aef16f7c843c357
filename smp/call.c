// SPDX-License-Identifier: MIT
/*
 * The kernel's side of cross-CPU calls: the local APIC, the call vector,
 * the TSC watchdog, the interrupt flag, preemption, the call_bug= option and
 * the request slots' memory (smp/call_hw.h). The protocol itself (slots,
 * queues, ordering, waiting) is smp/call_queue.c, which the TLB simulator
 * runs unchanged; read its opening comment first.
 */
#include "smp/call.h"
#include "smp/call_hw.h"
#include "smp/call_queue.h"
#include "apic/lapic.h"
#include "apic/tsc.h"
#include "lib/option.h"
#include "trap/panic.h"
#include "trap/trap.h"
#include "arch/x86.h"
#include "arch/layout.h"
#include "mm/pmm.h"
#include "mm/tlb_hw.h"
#include "cpu/percpu.h"

#define CACHE_LINE 64 /* bytes: requests and queues each have their own */

_Static_assert(sizeof(struct call_request) == CACHE_LINE,
	       "a request fills one cache line, which no other request shares");

/* One sender's requests, one per target, in whole pages. */
#define SLOT_PAGES                                                     \
	(ALIGN_UP(MAX_CPUS * sizeof(struct call_request), PAGE_SIZE) / \
	 PAGE_SIZE)

/* slots[sender]: MAX_CPUS requests, one per target (smp_call_init_cpu). */
static struct call_request *slots[MAX_CPUS];

/* --- smp/call_hw.h ------------------------------------------------------------ */

/* call_bug=: the words of enum call_hw_bug, in its order. */
static const char *const call_bug_words[] = {[CALL_HW_BUG_NONE] = "none",
					     [CALL_HW_BUG_DROP] = "drop",
					     [CALL_HW_BUG_NO_IPI] = "no-ipi",
					     NULL};
static const struct option_desc call_bug_desc = {
	.name = "call_bug",
	.type = OPTION_CHOICE,
	.choices = call_bug_words,
	.help = "break the cross-CPU call protocol on purpose (tests and "
		"labs): `drop` skips every 64th request, `no-ipi` queues "
		"requests without sending the interrupt. The `smp` tests must "
		"then fail"};
static struct option_value call_bug_option;

enum call_hw_bug call_bug_choice;

static void call_bug_set(const struct option_value *value)
{
	call_bug_choice = (enum call_hw_bug)value->choice;
}
OPTION(50, call_bug, &call_bug_desc, &call_bug_option, NULL, call_bug_set);

unsigned call_hw_cpu(void)
{
	return this_cpu_index();
}

const struct cpumask *call_hw_online(void)
{
	return &cpu_online_mask;
}

struct call_request *call_hw_slots(unsigned cpu)
{
	return slots[cpu];
}

void call_hw_send_ipi(unsigned cpu)
{
	lapic_send_fixed(cpus[cpu]->apic_id, VECTOR_CALL_FUNCTION);
}

uint64_t call_hw_irq_save(void)
{
	return irq_save();
}

void call_hw_irq_restore(uint64_t flags)
{
	irq_restore(flags);
}

void call_hw_preempt_disable(void)
{
	preempt_disable();
}

void call_hw_preempt_enable(void)
{
	preempt_enable();
}

void call_hw_relax(void)
{
	cpu_relax();
}

uint64_t call_hw_clock(void)
{
	return tsc_read_ordered();
}

uint64_t call_hw_elapsed_ns(uint64_t since)
{
	return tsc_to_ns(tsc_read_ordered() - since);
}

void call_hw_stuck(unsigned target, unsigned self, uint64_t seconds)
{
	panic("smp: CPU %u has not looked at a call from CPU %u for %llu s: "
	      "it is dead or an IPI was lost",
	      target, self, (unsigned long long)seconds);
}

/* --- The call vector and the interface --------------------------------------- */

static void call_function_interrupt(struct trap_frame *frame)
{
	(void)frame;
	call_queue_irq();
}

void smp_call_function_single(unsigned cpu, smp_call_fn fn, void *arg,
			      enum smp_call_wait wait)
{
	struct cpumask mask;

	cpumask_clear_all(&mask);
	cpumask_set(&mask, cpu);
	smp_call_function_many(&mask, fn, arg, wait);
}

void smp_call_function_all(smp_call_fn fn, void *arg, enum smp_call_wait wait)
{
	smp_call_function_many(&cpu_online_mask, fn, arg, wait);
}

void smp_send_ipi_mask(const struct cpumask *mask, uint8_t vector)
{
	struct cpumask targets;
	unsigned cpu;

	cpumask_and(&targets, mask, &cpu_online_mask);
	for_each_cpu (cpu, &targets)
		lapic_send_fixed(cpus[cpu]->apic_id, vector);
}

void smp_call_init_cpu(struct percpu *p)
{
	/* Whole zeroed frames, through the direct map, never freed: kmalloc
	 * aligns to 16 bytes only, so a request would straddle two cache
	 * lines, each shared with a neighbour that another target writes. */
	uint64_t frames = pmm_alloc_frames(SLOT_PAGES, 1);

	if (!frames)
		panic("smp: no memory for CPU %u's call slots", p->index);
	slots[p->index] = phys_to_virt(frames);
	KASSERT(IS_ALIGNED((uint64_t)slots[p->index], CACHE_LINE),
		"CPU %u's call slots at %p straddle cache lines", p->index,
		(void *)slots[p->index]);
	if (p->index == 0)
		trap_set_handler(VECTOR_CALL_FUNCTION, call_function_interrupt);
}

/* --- mm/tlb_hw.h: the TLB protocol's remote calls ------------------------------ */

void tlb_hw_call(const struct cpumask *targets, void (*fn)(void *arg),
		 void *arg, enum tlb_hw_wait wait)
{
	smp_call_function_many(targets, fn, arg,
			       wait == TLB_HW_WAIT ? SMP_CALL_WAIT
						   : SMP_CALL_NO_WAIT);
}
