// SPDX-License-Identifier: MIT
/*
 * The TLB oracle's threads (tlb_oracle.h), while a run lasts: readers
 * probe the pages and check what they see, steppers move the groups on
 * and flush, parked and busy threads leave CPUs lazy, and any of them
 * stops the run at the first step that fails or the first wait that
 * sticks. The protocol they follow: the top of tests/kernel/test_tlb.c.
 */
#include "tests/kernel/tlb_oracle_internal.h"
#include "tests/kernel/threads.h"
#include "apic/tsc.h"
#include "cpu/cpu.h"
#include "lib/errno.h"
#include "arch/extable.h"
#include "arch/x86.h"
#include "mm/kmap.h"
#include "arch/layout.h"
#include "mm/mm.h"
#include "mm/pagetable.h"
#include "mm/pmm.h"
#include "mm/tlb.h"
#include "mm/tlb_batch.h"
#include "sched/sched.h"
#include "sched/wait.h"
#include "smp/call.h"
#include "sync/cpumask.h"
#include "cpu/percpu.h"
#include "sync/spinlock.h"

#define WRITE_PROBE_OFFSET 8 /* the word write probes hit: never checked */
#define WRITE_PROBE_VALUE  0 /* harmless even in a page reused as a table */

/* --- Failures, kicks and stopping ----------------------------------------- */

static bool stopped(const struct oracle *o)
{
	return __atomic_load_n(&o->stop, __ATOMIC_ACQUIRE);
}

static void record(struct oracle *o, const struct failure *f)
{
	uint64_t flags = spin_lock_irqsave(&o->failure_lock);

	if (o->failures < FAILURES_KEPT)
		o->kept[o->failures] = *f;
	o->failures++;
	spin_unlock_irqrestore(&o->failure_lock, flags);
}

/* Lets w go past `rounds` rounds (never back) and wakes it to look. */
static void release(struct worker *w, uint32_t rounds)
{
	uint64_t flags = spin_lock_irqsave(&w->wq.lock);

	if (rounds > w->released)
		w->released = rounds;
	spin_unlock_irqrestore(&w->wq.lock, flags);
	wake_all(&w->wq);
}

/* The interrupt is the point: it ends a resting reader's HLT. */
static void wake_up(void *arg)
{
	(void)arg;
}

/*
 * Resting readers read again (after a new kicks value is visible). The
 * interrupt goes to every CPU but a witness's: a witness never rests, and
 * a call left waiting on a CPU that holds interrupts off would make the
 * round's flush wait for the CPU's call slot, hiding a flush that does
 * not wait (smp/call_queue.c: one request slot per sender and target).
 */
static void kick(struct oracle *o)
{
	struct cpumask targets = cpu_online_mask;

	for (unsigned i = 0; i < o->worker_count; i++) {
		if (o->workers[i].kind == WORKER_WITNESS)
			cpumask_clear(&targets, o->workers[i].cpu);
	}
	__atomic_add_fetch(&o->kicks, 1, __ATOMIC_SEQ_CST);
	wake_all(&o->rest_wq);
	smp_call_function_many(&targets, wake_up, NULL, SMP_CALL_NO_WAIT);
}

/* Every thread leaves: blocked and resting ones are woken to see it. */
void oracle_stop_all(struct oracle *o)
{
	__atomic_store_n(&o->stop, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < o->worker_count; i++) {
		struct worker *w = &o->workers[i];

		if (w->kind == WORKER_PARK || w->kind == WORKER_BUSY)
			release(w, 0);
	}
	kick(o);
}

/* One more turn of a wait: false once the run stops or the wait is stuck. */
static bool keep_waiting(struct oracle *o, uint64_t deadline,
			 const struct worker *on, uint32_t round,
			 const char *what)
{
	if (stopped(o))
		return false;
	if (tsc_read_ordered() > deadline) {
		struct failure f = {.kind = FAIL_STUCK,
				    .cpu = on->cpu,
				    .round = round,
				    .what = what};

		record(o, &f);
		oracle_stop_all(o);
		return false;
	}
	/* Others on this CPU (readers of other address spaces) must run. */
	yield();
	return true;
}

/* --- Reading -------------------------------------------------------------- */

/* Probes one word; SMAP needs the door open for user pages. */
static int probe_read(const struct group *g, uint64_t va, uint64_t *value)
{
	if (g->mm)
		return test_probe_user_read(va, value);
	return probe_read_u64((const void *)va, value);
}

static int probe_write(const struct group *g, uint64_t va)
{
	va += WRITE_PROBE_OFFSET;
	if (g->mm)
		return test_probe_user_write(va, WRITE_PROBE_VALUE);
	return probe_write_u64((void *)va, WRITE_PROBE_VALUE);
}

/*
 * Whether a read's outcome is explained by a version in [lo, hi]. A remap
 * unmaps each page before it maps the new frame, so a fault is legal while
 * a remap overlapped the read (lo < hi).
 */
static bool read_explained(const struct group *g, unsigned page, uint64_t lo,
			   uint64_t hi, int err, uint64_t value)
{
	if (err && g->kind == GROUP_REMAP && lo < hi)
		return true;
	for (uint64_t k = lo; k <= hi; k++) {
		struct page_state s = oracle_state_of(g, page, k);

		if (s.present ? !err && value == s.value : err != 0)
			return true;
	}
	return false;
}

static bool write_explained(const struct group *g, unsigned page, uint64_t lo,
			    uint64_t hi, int err)
{
	for (uint64_t k = lo; k <= hi; k++) {
		struct page_state s = oracle_state_of(g, page, k);

		if ((s.present && s.writable) == (err == 0))
			return true;
	}
	return false;
}

/* Reads (and for cycling groups writes) every page of every group w sees. */
static void read_pass(struct oracle *o, struct worker *w)
{
	for (unsigned i = 0; i < o->group_count; i++) {
		const struct group *g = &o->groups[i];
		bool writes = g->kind == GROUP_CYCLE;

		if (g->mm != w->mm)
			continue;
		for (unsigned page = 0; page < g->pages; page++) {
			uint64_t va = oracle_page_va(g, page), value = 0, s1,
				 s2;
			int read_err, write_err = 0;
			struct failure f = {
				.cpu = this_cpu_index(),
				.round = __atomic_load_n(&o->round,
							 __ATOMIC_RELAXED),
				.g = g,
				.page = page};

			s1 = __atomic_load_n(&g->seq, __ATOMIC_ACQUIRE);
			read_err = probe_read(g, va, &value);
			if (writes)
				write_err = probe_write(g, va);
			s2 = __atomic_load_n(&g->seq, __ATOMIC_ACQUIRE);
			f.lo = s1 / 2;
			f.hi = (s2 + 1) / 2;
			w->checks += writes ? 2 : 1;
			if (!read_explained(g, page, f.lo, f.hi, read_err,
					    value)) {
				f.kind = FAIL_READ;
				f.err = read_err;
				f.value = value;
				record(o, &f);
			}
			if (writes &&
			    !write_explained(g, page, f.lo, f.hi, write_err)) {
				f.kind = FAIL_WRITE;
				f.err = write_err;
				record(o, &f);
			}
		}
	}
	__atomic_add_fetch(&w->passes, 1, __ATOMIC_RELEASE);
}

/* --- Stepping ------------------------------------------------------------- */

static uint64_t user_pte_flags(void)
{
	return PTE_USER | PTE_WRITE | (boot_cpu.nx ? PTE_NX : 0);
}

uint64_t oracle_kernel_pte_flags(void)
{
	/* As the kernel maps its own data: global, so CR3 loads keep it. */
	return PTE_WRITE | (boot_cpu.nx ? PTE_NX : 0) |
	       (boot_cpu.pge ? PTE_GLOBAL : 0);
}

/* Writes version's patterns into the frames mapped now. */
int oracle_fill(struct group *g, uint64_t version)
{
	uint64_t flags = spin_lock_irqsave(&g->mm->lock);
	int err = 0;

	for (unsigned page = 0; page < g->pages && !err; page++) {
		uint64_t pa;

		err = pt_translate(g->mm->root, oracle_page_va(g, page), &pa,
				   NULL);
		if (!err)
			/* One store: a reader sees the old word or the new. */
			__atomic_store_n((uint64_t *)phys_to_virt(pa),
					 oracle_pattern(g, page, version),
					 __ATOMIC_RELAXED);
	}
	spin_unlock_irqrestore(&g->mm->lock, flags);
	return err;
}

/*
 * Replaces each page's frame by a new one that already holds next. User
 * groups unmap through a batch, as mm_unmap does (the batch would free the
 * tables an unmap empties, after its flush); kernel groups through kmap,
 * which frees no table.
 */
static int step_remap(struct group *g, uint64_t next)
{
	uint64_t end = oracle_page_va(g, g->pages);
	int err = 0;

	for (unsigned page = 0; page < g->pages; page++) {
		uint64_t frame = pmm_alloc_frame();

		if (!frame) {
			while (page--)
				pmm_free_frame(g->new_frames[page]);
			return -ENOMEM;
		}
		*(uint64_t *)phys_to_virt(frame) =
			oracle_pattern(g, page, next);
		g->new_frames[page] = frame;
	}
	if (g->mm) {
		struct tlb_batch batch;
		uint64_t flags;

		tlb_batch_begin(&batch, g->mm);
		flags = spin_lock_irqsave(&g->mm->lock);
		for (unsigned page = 0; page < g->pages && !err; page++) {
			uint64_t va = oracle_page_va(g, page), old = 0;

			err = pt_unmap(g->mm->root, va, &old, &batch);
			if (!err)
				err = pt_map(g->mm->root, va,
					     g->new_frames[page], PAGE_4K,
					     user_pte_flags(), NULL);
			g->old_frames[page] = old & PTE_ADDR_MASK;
		}
		spin_unlock_irqrestore(&g->mm->lock, flags);
		/* The anchor keeps every table: a table freed here means the
		 * group's layout is broken (the batch still frees it safely). */
		if (!err && batch.freed_tables)
			err = -EBUSY;
		/* Flushes [g->va, end), then frees what it holds: nothing,
		 * or the tables just counted as an error. */
		tlb_batch_flush(&batch);
	} else {
		for (unsigned page = 0; page < g->pages && !err; page++) {
			uint64_t va = oracle_page_va(g, page), old = 0;

			err = kmap_unmap_page(va, &old);
			if (!err)
				err = kmap_map_page(va, g->new_frames[page],
						    oracle_kernel_pte_flags());
			g->old_frames[page] = old & PTE_ADDR_MASK;
		}
		flush_tlb_kernel_range(g->va, end);
	}
	/* A half-done remap leaks, loudly. */
	for (unsigned page = 0; page < g->pages && !err; page++)
		pmm_free_frame(g->old_frames[page]);
	return err;
}

/* One step of a cycling group, through the address-space calls. */
static int step_cycle(struct group *g, uint64_t next)
{
	uint64_t len = (uint64_t)g->pages * PAGE_SIZE;

	switch (oracle_phase_of(g, next)) {
	case PHASE_READ_ONLY:
		return mm_protect(g->mm, g->va, len, MM_PROT_READ);
	case PHASE_UNMAPPED:
		return mm_unmap(g->mm, g->va, len);
	case PHASE_ZEROED:
		return mm_map_anon(g->mm, g->va, len,
				   MM_PROT_READ | MM_PROT_WRITE);
	case PHASE_FILLED:
		break;
	}
	return oracle_fill(g, next);
}

/* Moves g to its next version (the protocol atop test_tlb.c). */
static bool step_group(struct oracle *o, struct group *g, uint32_t round)
{
	uint64_t seq = __atomic_load_n(&g->seq, __ATOMIC_RELAXED);
	uint64_t next = seq / 2 + 1;
	int err;

	/* Odd before any table changes, even only after the flush. */
	__atomic_store_n(&g->seq, seq + 1, __ATOMIC_SEQ_CST);
	err = g->kind == GROUP_REMAP ? step_remap(g, next)
				     : step_cycle(g, next);
	__atomic_store_n(&g->seq, seq + 2, __ATOMIC_RELEASE);
	if (err) {
		struct failure f = {.kind = FAIL_STEP,
				    .cpu = this_cpu_index(),
				    .round = round,
				    .g = g,
				    .err = err};

		record(o, &f);
		oracle_stop_all(o);
	}
	return !err;
}

/* Which of this round's stepper slots w has, or -1. */
static int stepper_slot(const struct oracle *o, const struct worker *w,
			uint32_t round)
{
	unsigned self = (unsigned)(w - o->workers);

	if (!w->in_rotation)
		return -1;
	for (unsigned j = 0; j < o->steppers_per_round; j++) {
		if (o->rotation[(round + j) % o->rotation_count] == self)
			return (int)j;
	}
	return -1;
}

/* Odd rounds of parked readers with a busy thread run that thread. */
static bool busy_round(const struct worker *w, uint32_t round)
{
	return w->busy && round % 2;
}

/* Whether w is where the round needs it: read lately, or parked. */
static bool worker_ready(const struct oracle *o, const struct worker *w,
			 const struct worker *me, uint32_t round,
			 uint64_t passes_then)
{
	struct thread *running;

	switch (w->kind) {
	case WORKER_READER:
	case WORKER_MIGRATE:
		if (w == me || stepper_slot(o, w, round) >= 0)
			return true;
		/* Two passes: the one under way may have begun too early. */
		return __atomic_load_n(&w->passes, __ATOMIC_ACQUIRE) >=
		       passes_then + 2;
	case WORKER_PARK:
		if (__atomic_load_n(&w->parked, __ATOMIC_ACQUIRE) <= round)
			return false;
		running = __atomic_load_n(&cpus[w->cpu]->current,
					  __ATOMIC_ACQUIRE);
		if (busy_round(w, round))
			return running == w->busy->thread;
		return running != w->thread;
	case WORKER_WITNESS:
		return __atomic_load_n(&w->holding, __ATOMIC_ACQUIRE) > round;
	case WORKER_BUSY:
	case WORKER_STEPPER:
		break;
	}
	return true;
}

static bool wait_ready(struct oracle *o, const struct worker *me,
		       uint32_t round)
{
	uint64_t passes[ORACLE_WORKERS_MAX];
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(WAIT_LIMIT_NS);

	for (unsigned i = 0; i < o->worker_count; i++)
		passes[i] = __atomic_load_n(&o->workers[i].passes,
					    __ATOMIC_ACQUIRE);
	kick(o);
	for (unsigned i = 0; i < o->worker_count; i++) {
		const struct worker *w = &o->workers[i];

		while (!worker_ready(o, w, me, round, passes[i])) {
			if (!keep_waiting(o, deadline, w, round,
					  "a reader to read or park"))
				return false;
		}
	}
	return true;
}

/* The round is over: parked readers go on, and after the last, all stop. */
static void finish_round(struct oracle *o, uint32_t round)
{
	__atomic_store_n(&o->round, round + 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < o->worker_count; i++) {
		if (o->workers[i].kind == WORKER_PARK)
			release(&o->workers[i], round + 1);
	}
	if (round + 1 >= o->rounds)
		oracle_stop_all(o);
	else
		kick(o); /* the next stepper may be resting */
}

/*
 * One stepper's part of a round: wait until the readers are ready, meet
 * the other steppers (so their flushes overlap), step this slot's groups.
 */
static void run_round(struct oracle *o, struct worker *me, uint32_t round,
		      unsigned slot)
{
	unsigned k = o->steppers_per_round;

	read_pass(o, me);
	if (!wait_ready(o, me, round))
		return;
	if (k > 1) {
		uint64_t deadline =
			tsc_read_ordered() + ns_to_tsc(WAIT_LIMIT_NS);

		__atomic_add_fetch(&o->arrived, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&o->arrived, __ATOMIC_ACQUIRE) <
		       (round + 1) * k) {
			if (!keep_waiting(o, deadline, me, round,
					  "the other stepper"))
				return;
		}
	}
	for (unsigned g = slot; g < o->group_count; g += k) {
		if (!step_group(o, &o->groups[g], round))
			return;
	}
	if (__atomic_add_fetch(&o->finished, 1, __ATOMIC_ACQ_REL) ==
	    (round + 1) * k)
		finish_round(o, round);
}

/* --- The threads ---------------------------------------------------------- */

/*
 * Waits for the next kick. Alone on its CPU a reader halts, keeping its
 * address space loaded and active (flushes still come to it, and wake it);
 * readers that share a CPU block, so the others get it.
 */
static void rest(struct oracle *o, const struct worker *w, uint32_t kicks)
{
	uint64_t flags;

	if (!w->yield_every) {
		/* STI's one-instruction shadow: no kick slips in before HLT. */
		cli();
		if (__atomic_load_n(&o->kicks, __ATOMIC_ACQUIRE) == kicks &&
		    !stopped(o))
			sti_hlt();
		else
			sti();
		return;
	}
	flags = spin_lock_irqsave(&o->rest_wq.lock);
	while (__atomic_load_n(&o->kicks, __ATOMIC_ACQUIRE) == kicks &&
	       !stopped(o))
		wait_queue_sleep_locked(&o->rest_wq);
	spin_unlock_irqrestore(&o->rest_wq.lock, flags);
}

static void reader_loop(struct oracle *o, struct worker *w)
{
	uint32_t kicks_seen = 0;
	unsigned passes = 0;

	for (;;) {
		uint32_t round = __atomic_load_n(&o->round, __ATOMIC_ACQUIRE);
		uint32_t kicks = __atomic_load_n(&o->kicks, __ATOMIC_ACQUIRE);
		int slot;

		if (round >= o->rounds || stopped(o))
			break;
		slot = stepper_slot(o, w, round);
		if (slot >= 0 && w->stepped <= round) {
			w->stepped = round + 1;
			run_round(o, w, round, (unsigned)slot);
			continue;
		}
		if (kicks != kicks_seen) {
			kicks_seen = kicks;
			passes = 0;
		}
		if (passes >= w->rest_after)
			rest(o, w, kicks);
		read_pass(o, w);
		passes++;
		if (w->yield_every && passes % w->yield_every == 0)
			yield();
	}
	read_pass(o, w); /* after the last flush */
}

/* Blocks until released past `rounds` or the run stops. */
static void park(struct oracle *o, struct worker *w, uint32_t rounds)
{
	uint64_t flags = spin_lock_irqsave(&w->wq.lock);

	__atomic_store_n(&w->parked, rounds, __ATOMIC_RELEASE);
	while (w->released < rounds && !stopped(o))
		wait_queue_sleep_locked(&w->wq);
	spin_unlock_irqrestore(&w->wq.lock, flags);
}

/*
 * Reads, then parks while the round's step happens: its CPU goes idle or
 * runs the busy kernel thread, lazily keeping the address space loaded
 * (lazy=skip, ipi, dynamic) or leaving it (lazy=off). Coming back, it
 * must catch up before it reads again.
 */
static void park_loop(struct oracle *o, struct worker *w)
{
	for (uint32_t round = 0;; round++) {
		read_pass(o, w);
		if (round >= o->rounds || stopped(o))
			break;
		if (busy_round(w, round))
			release(w->busy, round + 1);
		park(o, w, round + 1);
	}
}

/* Holds a parked reader's CPU, as a kernel thread, until the round ends. */
static void busy_loop(struct oracle *o, struct worker *w)
{
	uint32_t seen = 0;

	for (;;) {
		uint64_t flags = spin_lock_irqsave(&w->wq.lock);

		while (w->released == seen && !stopped(o))
			wait_queue_sleep_locked(&w->wq);
		seen = w->released;
		spin_unlock_irqrestore(&w->wq.lock, flags);
		if (stopped(o))
			break;
		while (__atomic_load_n(&o->round, __ATOMIC_ACQUIRE) < seen &&
		       !stopped(o))
			cpu_relax();
	}
}

static void migrate_loop(struct oracle *o, struct worker *w)
{
	struct cpumask next;

	while (__atomic_load_n(&o->round, __ATOMIC_ACQUIRE) < o->rounds &&
	       !stopped(o)) {
		read_pass(o, w);
		w->cpu = (w->cpu + 1) % o->cpus;
		cpumask_clear_all(&next);
		cpumask_set(&next, w->cpu);
		sched_set_affinity(&next);
	}
	read_pass(o, w);
}

/*
 * Each round: with interrupts off, reads (so its TLB holds the round's
 * version), says it holds (the stepper waits for that before it steps),
 * and waits for the round to end. A flush cannot reach this CPU meanwhile,
 * so a correct one cannot return and the round cannot end: the hold runs
 * out (WITNESS_HOLD_NS), the interrupts come back, the flush is done and
 * the round ends. A flush that returns without waiting (tlb_bug=no_wait)
 * or without asking this CPU (skip_remote) ends the round while the old
 * translation is still here, and the read that follows sees it: a catch
 * that does not depend on who runs faster.
 */
static void witness_loop(struct oracle *o, struct worker *w)
{
	for (;;) {
		uint32_t round = __atomic_load_n(&o->round, __ATOMIC_ACQUIRE);
		uint64_t deadline;

		if (round >= o->rounds || stopped(o))
			break;
		cli();
		read_pass(o, w);
		/* Pairs with worker_ready's acquire: read, then held. */
		__atomic_store_n(&w->holding, round + 1, __ATOMIC_RELEASE);
		deadline = tsc_read_ordered() + ns_to_tsc(WITNESS_HOLD_NS);
		while (__atomic_load_n(&o->round, __ATOMIC_ACQUIRE) == round &&
		       tsc_read_ordered() < deadline && !stopped(o))
			cpu_relax();
		read_pass(o, w);
		sti();
		while (__atomic_load_n(&o->round, __ATOMIC_ACQUIRE) == round &&
		       !stopped(o))
			yield();
	}
	read_pass(o, w); /* after the last flush */
}

static void stepper_loop(struct oracle *o, struct worker *w)
{
	for (uint32_t round = 0; round < o->rounds && !stopped(o); round++)
		run_round(o, w, round, 0);
}

void oracle_worker_main(void *arg)
{
	struct worker *w = arg;
	struct oracle *o = &oracle_instance;

	switch (w->kind) {
	case WORKER_READER:
		reader_loop(o, w);
		break;
	case WORKER_PARK:
		park_loop(o, w);
		break;
	case WORKER_MIGRATE:
		migrate_loop(o, w);
		break;
	case WORKER_BUSY:
		busy_loop(o, w);
		break;
	case WORKER_STEPPER:
		stepper_loop(o, w);
		break;
	case WORKER_WITNESS:
		witness_loop(o, w);
		break;
	}
	/* Its checks are final: the test reads them after this. */
	__atomic_add_fetch(&o->exited, 1, __ATOMIC_RELEASE);
}
