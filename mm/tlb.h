/* SPDX-License-Identifier: MIT */
/*
 * TLB maintenance: the only code that loads CR3 or invalidates translations.
 * mm/tlb.c explains the protocol (context ids, ASID slots, tlb_gen, lazy
 * CPUs, shootdowns); docs/tlb.md draws its states.
 *
 * The protocol code is plain C behind the hardware interface of
 * mm/tlb_hw.h, so tests/host/tlb_sim compiles the very same mm/tlb.c against
 * a simulated machine.
 *
 * The files: mm/tlb.c (the protocol), mm/tlb_cpu.h (its per-CPU state),
 * mm/tlb_trace.c (tlb_trace's lines), mm/tlb_stats.c (the counters),
 * mm/tlb_options.c (the command-line options), mm/tlb_batch.c (batched
 * unmapping), mm/tlb_global_asid.c (global ASIDs for broadcast flushes),
 * mm/tlb_hw.c (the machine underneath) and mm/tlb_bug_ack.c (one
 * deliberate bug, in the injection build).
 */
#ifndef MM_TLB_H
#define MM_TLB_H

#include "lib/inject.h"
#include "lib/types.h"
#include "mm/tlb_bug.h"
#include "mm/tlb_cpu.h"
#include "mm/tlb_hw_cpu.h"
#include "sync/shared.h"

struct cpu_features;
struct mm;

/* --- Policies (kernel command line, docs/options.md) ---------------------- */

/* What a CPU does with the user address space when it runs a kernel thread. */
enum tlb_lazy_policy {
	TLB_LAZY_SKIP,	  /* lazy=skip: keep it; flushes skip lazy CPUs */
	TLB_LAZY_IPI,	  /* lazy=ipi: keep it; a flush IPI makes it leave */
	TLB_LAZY_DYNAMIC, /* lazy=dynamic: ipi, then stay non-lazy a while */
	TLB_LAZY_OFF,	  /* lazy=off: switch to the kernel mm at once */
};

/* How an address space still loaded lazily somewhere is kept alive. */
enum tlb_lazy_mm {
	TLB_LAZY_MM_SHOOTDOWN, /* lazy_mm=shootdown: IPI lazy users at teardown */
	TLB_LAZY_MM_REFCOUNT, /* lazy_mm=refcount: lazy CPUs hold a reference */
};

/* How a batch that unmapped pages of several address spaces is flushed. */
enum tlb_unmap_batch {
	TLB_UNMAP_BATCH_PAGES,	/* unmap_batch=pages: one round, page by page */
	TLB_UNMAP_BATCH_ALL,	/* unmap_batch=all: one round, whole contexts */
	TLB_UNMAP_BATCH_PER_MM, /* unmap_batch=per_mm: a round per space */
};

/* ASID slots per CPU unless asid_slots= says (at most TLB_ASID_SLOTS_MAX). */
#define TLB_ASID_SLOTS_DEFAULT 6
/*
 * lazy=dynamic: after a flush IPI finds a CPU lazy, it skips laziness for
 * this many switches to a kernel thread. A CPU that gets IPIs while idle is
 * likely on a busy mm; 16 switches is a few timeslices of not paying for
 * them (`bench=lazy_storm` measures it).
 */
#define TLB_LAZY_BACKOFF_DEFAULT 16
#define TLB_LAZY_BACKOFF_MAX	 1000000
/*
 * Largest page count flushed page by page; beyond it, flush the whole
 * context. Most flushes are of a few pages, and one INVLPG costs on the
 * order of 100 ns, so 33 of them stay within a few microseconds, less than
 * refilling the whole TLB afterwards would (the 2014 measurements behind
 * Linux 3.17's single-page flush ceiling; `bench=flush_local` redoes them).
 */
#define TLB_FLUSH_CEILING_DEFAULT 33
#define TLB_FLUSH_CEILING_MAX	  4096
/*
 * With INVLPGB, a space whose flush had to reach this many CPUs gets a
 * global ASID: Linux's threshold (more than three), below which IPIs to
 * one or two CPUs cost less than a broadcast every TLB must process.
 */
#define TLB_GLOBAL_ASID_CPUS_DEFAULT 4

/*
 * The policies in force. Set once at boot (tlb_boot_init: the command line
 * settled against CPUID by tlb_policy_settle), before any CPU but the boot
 * CPU runs; read-only afterwards, except by tests and benchmarks that change
 * one while only they run (through tlb_policy_settle as well).
 */
struct tlb_policy {
	bool pcid;    /* PCID asked for (pcid=on) and cpu_pcid_usable */
	bool invpcid; /* INVPCID asked for and usable (only with pcid) */
	bool invlpgb; /* invlpgb=on (asked), INVLPGB in CPUID, and pcid */
	/* Pages one INVLPGB may name: CPUID 8000_0008 EDX[15:0] + 1. */
	unsigned invlpgb_max_pages;
	unsigned asid_slots; /* dynamic ASID slots per CPU (asid_slots=) */
	enum tlb_lazy_policy lazy;
	unsigned lazy_backoff;	   /* lazy_backoff= */
	unsigned flush_ceiling;	   /* flush_ceiling= */
	bool flush_info_on_stack;  /* flush_info=stack */
	bool flush_concurrent;	   /* flush_concurrent=on */
	bool kernel_mm_mask_touch; /* kernel_mm_mask=touch */
	enum tlb_lazy_mm lazy_mm;
	enum tlb_unmap_batch unmap_batch;
	unsigned global_asids;	   /* global_asids= (with invlpgb) */
	unsigned global_asid_cpus; /* global_asid_cpus= */
	bool trace;		   /* tlb_trace: print every flush event */
};

extern struct tlb_policy tlb_policy;

/*
 * The policy in force when `asked` is what was asked for (the command line,
 * a benchmark row, a simulator policy) on a CPU with the features `cpu`:
 * pcid, invpcid and invlpgb say "use it if the CPU has it" in `asked`,
 * and "in use" in the result; invlpgb_max_pages is the CPU's; every other
 * field is kept. The one place that decides what the CPU allows
 * (mm/tlb.c); prints nothing (the boot summary line and the benchmarks'
 * policy line report what is in force).
 */
struct tlb_policy tlb_policy_settle(const struct tlb_policy *asked,
				    const struct cpu_features *cpu);

/* The values' words, as the command line spells them (NULL-terminated). */
extern const char *const tlb_lazy_names[];
extern const char *const tlb_unmap_batch_names[];

/* --- Address spaces --------------------------------------------------------- */

/*
 * The kernel's own address space: the kernel half only, used by a CPU that
 * has no user address space loaded. PCID 0, never in an ASID slot.
 */
extern struct mm kernel_mm;

/*
 * Sets up kernel_mm around the kernel page tables (physical root) and loads
 * them on this CPU, with CR4.PCIDE on when tlb_policy.pcid. Each CPU calls
 * it once, the boot CPU first.
 */
void tlb_init_cpu(uint64_t kernel_root);

/*
 * The boot CPU's tlb_init_cpu, after settling the policies the command line
 * asked for against CPUID (tlb_policy = tlb_policy_settle(&tlb_policy,
 * &boot_cpu); mm/tlb_hw.c). Not part of the simulated code.
 */
void tlb_boot_init(uint64_t kernel_root);

/*
 * After tlb_policy.pcid or .invlpgb changed, on each CPU while it runs on
 * kernel_mm (benchmarks): CR4.PCIDE follows, and the TLB (every PCID,
 * global ones too) and the ASID slots start empty.
 */
void tlb_pcid_changed_here(void);

/* Loads the kernel page tables, PCID 0 (an AP leaving its trampoline). */
void tlb_load_kernel_root(uint64_t kernel_root);

/*
 * The timer ticked on this CPU (interrupts off). Only the injection build
 * has work here: tlb_bug=ack_before_flush flushes the request it holds.
 */
static inline void tlb_timer_tick(void)
{
	if (INJECTED(tlb, TLB_BUG_ACK_BEFORE_FLUSH))
		tlb_ack_flush_held();
}

/*
 * The last reference to mm is gone: makes sure no CPU still has it loaded
 * (lazy_mm=shootdown sends the lazy ones to the kernel mm) before mm/mm.c
 * frees it.
 */
void tlb_mm_teardown(struct mm *mm);

/* --- Flushes ---------------------------------------------------------------- */

/* Says whether a flush also covers page tables that were freed. */
enum tlb_freed_tables {
	TLB_TABLES_KEPT,
	TLB_TABLES_FREED,
};

/*
 * Flushes the user translations of [start, end) in mm on every CPU that
 * may hold them, and returns once each has. Call after changing mm's page
 * tables and before freeing what they pointed to. stride_shift: log2 of the
 * page size of the mappings (PAGE_SHIFT for 4 KiB pages).
 */
void flush_tlb_mm_range(struct mm *mm, uint64_t start, uint64_t end,
			unsigned stride_shift, enum tlb_freed_tables freed);

/* What one address space of a batch changed (flush_tlb_mms). */
struct tlb_mm_range {
	struct mm *mm;
	uint64_t start, end; /* 4 KiB pages; start >= end: nothing */
	enum tlb_freed_tables freed;
};

/*
 * flush_tlb_mm_range for count (<= TLB_MULTI_MMS_MAX) address spaces at
 * once: each one's generation is bumped, and every CPU that may hold any
 * of their old translations gets one request for all of them
 * (unmap_batch=pages or all), or one per address space (per_mm). Returns
 * once every target has flushed (mm/tlb.c, "Batches of address spaces").
 */
void flush_tlb_mms(const struct tlb_mm_range *ranges, unsigned count);

/*
 * Flushes the kernel-half translations of [start, end) on every CPU that
 * runs. Call after changing kernel page-table entries and before freeing
 * what they pointed to.
 */
void flush_tlb_kernel_range(uint64_t start, uint64_t end);

/*
 * A page fault at the user page va of mm (loaded and active here) that the
 * page tables allow (mm/fault.c): drops va's entries and every cached walk
 * of the loaded PCID on this CPU (INVLPG), counts it, traces it, so that
 * the access can run again. Interrupts off.
 */
void flush_tlb_spurious_fault(struct mm *mm, uint64_t va);

/* --- Switching ---------------------------------------------------------------- */

/*
 * The cases of a switch, each done in mm/tlb.c: another address space
 * (load_mm), a kernel thread (enter_lazy), the LAZY address space coming
 * back (leave_lazy). Interrupts off.
 */
void load_mm(struct tlb_cpu *c, struct mm *next);
void enter_lazy(struct tlb_cpu *c);
void leave_lazy(struct tlb_cpu *c);

/*
 * Tells the cases apart. A switch that keeps the address space loaded and
 * active costs only this.
 */
static inline void switch_mm_cases(struct tlb_cpu *c, struct mm *next)
{
	/* loaded_mm is never NULL: a kernel thread's NULL is always a change. */
	if (next != shared_load(&c->loaded_mm, __ATOMIC_RELAXED)) {
		if (next)
			load_mm(c, next);
		else
			enter_lazy(c);
	} else if (shared_load(&c->is_lazy, __ATOMIC_RELAXED)) {
		leave_lazy(c);
	}
}

/*
 * The address-space switch of a thread switch, the one place where CR3
 * changes: to next's address space, or, for a kernel thread (next == NULL),
 * lazily to none (see mm/tlb.c). Interrupts off. Inline, with its cases
 * above, because every thread switch comes here.
 */
static inline void switch_mm_irqs_off(struct mm *next)
{
	/* tlb_bug=ack_before_flush: what was held is flushed first. */
	if (INJECTED(tlb, TLB_BUG_ACK_BEFORE_FLUSH))
		tlb_ack_flush_held();
	switch_mm_cases(tlb_hw_cpu_state(), next);
}

/*
 * After a switch, once the scheduler's locks are dropped: releases the
 * reference a lazy CPU held (lazy_mm=refcount), which may free the address
 * space. Interrupts off. Inline, the test for one held.
 */
void switch_mm_finish_held(void);

static inline void switch_mm_finish(void)
{
	if (likely(!tlb_hw_cpu_state()->lazy_ref))
		return;
	switch_mm_finish_held();
}

#endif
