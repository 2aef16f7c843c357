// SPDX-License-Identifier: MIT
#include "bench/fixture.h"
#include "bench/bench.h"
#include "apic/timer.h"
#include "cpu/cpu.h"
#include "trap/panic.h"
#include "arch/x86.h"
#include "lib/format.h"
#include "mm/heap.h"
#include "mm/mm.h"
#include "sched/sched.h"
#include "sched/thread.h"
#include "sync/shared.h"
#include "smp/call.h"
#include "cpu/percpu.h"

/*
 * Where benchmark pages go in their own address spaces: nothing else is
 * mapped there, and 512 pages fit in one page table, so the page-walk
 * caches hold the same few entries whatever the page count (up to
 * BENCH_SPACE_PAGES_MAX; tlb_reach's larger spaces take a page table per
 * 512 pages).
 */
#define BENCH_SPACE_BASE 0x40000000ULL

static void stop_tick(void *arg)
{
	(void)arg;
	apic_timer_stop();
}

static void restart_tick(void *arg)
{
	(void)arg;
	sched_tick_restart();
}

void bench_ticks_stop(const struct cpumask *mask)
{
	smp_call_function_many(mask, stop_tick, NULL, SMP_CALL_WAIT);
}

void bench_ticks_restart(const struct cpumask *mask)
{
	smp_call_function_many(mask, restart_tick, NULL, SMP_CALL_WAIT);
}

struct cpumask bench_cpu_mask(unsigned cpu)
{
	struct cpumask m;

	cpumask_clear_all(&m);
	cpumask_set(&m, cpu);
	return m;
}

bool bench_space_create(struct bench_space *s, unsigned pages)
{
	KASSERT(pages <= BENCH_SPACE_PAGES_LIMIT, "%u pages asked, at most %d",
		pages, BENCH_SPACE_PAGES_LIMIT);
	s->base = BENCH_SPACE_BASE;
	s->pages = pages;
	s->mm = mm_create();
	if (!s->mm)
		return false;
	if (pages && mm_map_anon(s->mm, s->base, (uint64_t)pages * PAGE_SIZE,
				 MM_PROT_READ | MM_PROT_WRITE)) {
		mm_put(s->mm);
		s->mm = NULL;
		return false;
	}
	return true;
}

void bench_space_destroy(struct bench_space *s)
{
	if (s->mm)
		mm_put(s->mm);
	s->mm = NULL;
}

void bench_touch(const struct bench_space *s, unsigned first, unsigned n)
{
	KASSERT(first + n <= s->pages, "touching pages %u..%u of %u", first,
		first + n, s->pages);
	/* The pages are user pages: with SMAP the kernel must say it means
	 * to touch them. */
	if (boot_cpu.smap)
		stac();
	for (unsigned i = first; i < first + n; i++)
		(void)*(volatile const uint64_t *)bench_page(s, i);
	if (boot_cpu.smap)
		clac();
}

/*
 * The threads benchmarks start: how many have not returned yet. One
 * benchmark runs at a time, so one count serves all; it is static so that
 * a thread's last wake-up can never reach a waiter's stack that is gone.
 */
static struct wait_queue crew_wait = WAIT_QUEUE_INIT;
static unsigned crew_running; /* guarded by crew_wait.lock */

struct crew_start {
	void (*fn)(void *);
	void *arg;
};

static void crew_member(void *arg)
{
	struct crew_start start = *(struct crew_start *)arg;
	uint64_t flags;
	bool last;

	kfree(arg);
	start.fn(start.arg);
	flags = spin_lock_irqsave(&crew_wait.lock);
	last = !--crew_running;
	spin_unlock_irqrestore(&crew_wait.lock, flags);
	if (last)
		wake_all(&crew_wait);
}

bool bench_thread_start(void (*fn)(void *), void *arg, unsigned cpu,
			struct mm *mm)
{
	struct crew_start *start = kmalloc(sizeof(*start));
	struct cpumask only = bench_cpu_mask(cpu);
	struct thread *t;
	uint64_t flags;

	if (!start)
		return false;
	*start = (struct crew_start){fn, arg};
	t = thread_create(crew_member, start, "bench", &only);
	if (!t) {
		kfree(start);
		return false;
	}
	if (mm) {
		/* Dropped when the thread is reaped (sched/thread.c). */
		mm_get(mm);
		t->mm = mm;
	}
	flags = spin_lock_irqsave(&crew_wait.lock);
	crew_running++;
	spin_unlock_irqrestore(&crew_wait.lock, flags);
	sched_start_thread(t);
	return true;
}

void bench_threads_wait(void)
{
	uint64_t flags = spin_lock_irqsave(&crew_wait.lock);

	while (crew_running)
		wait_queue_sleep_locked(&crew_wait);
	spin_unlock_irqrestore(&crew_wait.lock, flags);
}

void bench_on_space(void (*rows)(void *), unsigned pages, const char *params,
		    ...)
{
	struct bench_space space;
	char text[BENCH_PARAMS_MAX];
	va_list ap;

	va_start(ap, params);
	kvsnprintf(text, sizeof(text), params, ap);
	va_end(ap);
	if (bench_space_create(&space, pages)) {
		bool started = bench_thread_start(rows, &space, MEASURING_CPU,
						  space.mm);

		if (started)
			bench_threads_wait();
		bench_space_destroy(&space);
		if (started)
			return;
	}
	bench_na("out of memory", "%s", text);
}

void bench_wait_loaded(unsigned cpu, const struct mm *mm)
{
	while (shared_load(&tlb_cpus[cpu].loaded_mm, __ATOMIC_ACQUIRE) != mm)
		cpu_relax();
}

/* --- Ping-pong -------------------------------------------------------------- */

struct pingpong_run {
	const struct bench_pingpong *p;
	bool stop; /* set by side 0 once it has its samples */
};

static void touch_own(const struct bench_pingpong *p, unsigned side)
{
	if (p->space[side] && p->touch)
		bench_touch(p->space[side], 0, p->touch);
}

static void pingpong_measure(void *arg)
{
	struct pingpong_run *run = arg;

	while (bench_more()) {
		uint64_t start = bench_clock();

		yield();
		touch_own(run->p, 0);
		bench_add(bench_clock() - start);
	}
	__atomic_store_n(&run->stop, true, __ATOMIC_RELAXED);
	/* Lets side 1 see the flag and end. */
	yield();
}

static void pingpong_answer(void *arg)
{
	struct pingpong_run *run = arg;

	while (!__atomic_load_n(&run->stop, __ATOMIC_RELAXED)) {
		yield();
		touch_own(run->p, 1);
	}
}

bool bench_pingpong(unsigned cpu, const struct bench_pingpong *p)
{
	struct pingpong_run run = {p, false};
	struct cpumask only = bench_cpu_mask(cpu);
	bool started;

	bench_ticks_stop(&only);
	started = bench_thread_start(pingpong_answer, &run, cpu, p->mm[1]);
	if (started &&
	    !bench_thread_start(pingpong_measure, &run, cpu, p->mm[0])) {
		/* Side 1 ends as soon as it sees the flag. */
		run.stop = true;
		started = false;
	}
	bench_threads_wait();
	bench_ticks_restart(&only);
	return started;
}

/* --- TLB policies ------------------------------------------------------------ */

static bool policy_changed;

static void nothing(void *arg)
{
	(void)arg;
}

/*
 * Every CPU to the kernel mm, not lazy, holding no lazy reference. Round
 * one runs a thread on a fresh address space on each CPU: loading it ends
 * whatever lazy state the CPU had (and switch_mm_finish drops a lazy
 * reference). Under lazy=off its end switches the CPU to the kernel mm.
 * Round two, a plain kernel thread per CPU, only runs once round one's
 * thread has switched out there: then every CPU is on the kernel mm, and
 * kernel threads never leave it.
 */
static void settle(void)
{
	enum tlb_lazy_policy lazy = tlb_policy.lazy;
	struct bench_space space;
	unsigned cpu;

	if (!bench_space_create(&space, 0))
		panic("bench: no memory for an empty address space");
	tlb_policy.lazy = TLB_LAZY_OFF;
	for_each_cpu (cpu, &cpu_online_mask) {
		if (!bench_thread_start(nothing, NULL, cpu, space.mm))
			panic("bench: no memory for a thread");
	}
	bench_threads_wait();
	for_each_cpu (cpu, &cpu_online_mask) {
		if (!bench_thread_start(nothing, NULL, cpu, NULL))
			panic("bench: no memory for a thread");
	}
	bench_threads_wait();
	tlb_policy.lazy = lazy;
	bench_space_destroy(&space);
}

/* On each CPU, once settle() has left it on the kernel mm. */
static void restart_tlb_here(void *arg)
{
	(void)arg;
	tlb_pcid_changed_here();
}

bool bench_pcid_possible(void)
{
	struct tlb_policy p = tlb_policy;

	p.pcid = true;
	return tlb_policy_settle(&p, &boot_cpu).pcid;
}

void bench_policy_set(const struct tlb_policy *p)
{
	struct tlb_policy in_force = tlb_policy_settle(p, &boot_cpu);
	/*
	 * A space may keep its global PCID across invlpgb=off and back on,
	 * and while off no broadcast reaches that PCID's entries on other
	 * CPUs: starting every TLB empty, as a PCID change does, leaves none.
	 */
	bool tlb_restarts = in_force.pcid != tlb_policy.pcid ||
			    in_force.invlpgb != tlb_policy.invlpgb;

	KASSERT(!crew_running, "a policy change while %u benchmark threads run",
		crew_running);
	KASSERT(in_force.pcid == p->pcid,
		"pcid=on asked on a CPU without PCID (pcid %d, pge %d)",
		boot_cpu.pcid, boot_cpu.pge);
	settle();
	tlb_policy = in_force;
	if (tlb_restarts)
		smp_call_function_all(restart_tlb_here, NULL, SMP_CALL_WAIT);
	policy_changed = true;
}

bool bench_policy_changed(void)
{
	bool changed = policy_changed;

	policy_changed = false;
	return changed;
}
