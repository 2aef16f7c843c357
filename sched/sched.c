// SPDX-License-Identifier: MIT
/*
 * Per-CPU round-robin scheduling.
 *
 * Each CPU has a run queue: a FIFO of runnable threads, the running thread
 * (`current`), its idle thread, and a list of sleepers sorted by wake time,
 * all guarded by the queue's spinlock, always taken with interrupts off.
 *
 * Switching (schedule_locked):
 *  1. with the queue locked, the running thread goes back on the queue if
 *     it is still runnable (or is marked to move, when its affinity no
 *     longer allows this CPU); the first queued thread, or the idle thread,
 *     is next;
 *  2. the FPU state is saved and restored and the stacks are swapped
 *     (sched/switch.asm) *with the lock held*: no other CPU can see the
 *     outgoing thread as runnable while it is still on its stack;
 *  3. whichever thread resumes on this CPU (switch_finish) sees, still
 *     under the lock, whether the thread it replaced died or moves, drops
 *     the lock and then finishes with it: moves it to another CPU's queue,
 *     or hands a dead one to the reaper. (A runnable one is back on the
 *     queue, which another CPU may take it from the moment the lock goes.)
 *
 * Blocking and waking: a thread blocks with its CPU's queue lock held
 * (sched_block_locked), and a waker takes the sleeper's queue lock before
 * looking at its state; since that lock is held across the switch, a
 * wake-up either comes before the block (and cancels nothing: it is
 * ordered by the wait-queue lock, see sched/wait.c) or finds the thread
 * fully switched out. `cpu` of a blocked thread never changes, so the
 * waker always locks the right queue.
 *
 * Blocking without a stack (sched/handoff.h): the IPC fast path's thread
 * blocks leaving a resume frame instead of its kernel stack, and a partner
 * that did the same is switched straight back to user mode. The queue lock
 * is held from the claim of the partner to the end of the switch, as here.
 *
 * Preemption: the APIC timer ticks every timeslice; a tick with other
 * threads queued asks for a switch, which happens on the way out of the
 * interrupt (sched_preempt_point) unless preemption is disabled. Spinlocks
 * are taken with interrupts off, so no thread is preempted holding one.
 *
 * Balancing: on each tick, a CPU with nothing to run pulls one queued
 * thread (that may run there) from the CPU with the longest queue. It only
 * *tries* the other queue's lock: every idle CPU ticks, and if they all
 * queued up on a busy CPU's lock (a ticket lock hands over in order, and
 * under an emulator with more vCPUs than host cores each hand-over waits
 * for a vCPU to be scheduled), that CPU could not get at its own queue.
 * A failed try costs nothing: the next tick tries again.
 */
#include "sched/sched.h"
#include "sched/runqueue.h"
#include "sched/switch.h"
#include "apic/lapic.h"
#include "apic/timer.h"
#include "apic/tsc.h"
#include "lib/format.h"
#include "cpu/gdt.h"
#include "console/kprintf.h"
#include "lib/option.h"
#include "trap/panic.h"
#include "trap/trap.h"
#include "mm/tlb.h"
#include "arch/x86.h"
#include "sched/fpu.h"
#include "cpu/percpu.h"
#include "sync/spinlock.h"

#define VECTOR_RESCHEDULE 0xf1

struct runqueue runqueues[MAX_CPUS];
static uint64_t timeslice_ns;

static const struct option_desc timeslice_desc = {
	.name = "timeslice_us",
	.type = OPTION_UINT,
	.min = TIMESLICE_US_MIN,
	.max = TIMESLICE_US_MAX,
	.def = TIMESLICE_US_DEFAULT,
	.help = "scheduler time slice in microseconds"};
static struct option_value timeslice_option = {.number = TIMESLICE_US_DEFAULT};
OPTION(60, timeslice_us, &timeslice_desc, &timeslice_option, NULL, NULL);

static void enqueue_locked(struct runqueue *rq, struct thread *t)
{
	t->state = THREAD_RUNNABLE;
	t->cpu = rq_cpu(rq);
	thread_queue_push(&rq->runnable, t, THREAD_LINK_RUN);
	rq->length++;
}

static struct thread *dequeue_locked(struct runqueue *rq)
{
	struct thread *t = thread_queue_first(&rq->runnable);

	if (!t)
		return NULL;
	thread_queue_remove_first(&rq->runnable, t, THREAD_LINK_RUN);
	rq->length--;
	return t;
}

/* Removes t (queued on rq) from the middle of the queue. */
static void unlink_locked(struct runqueue *rq, struct thread *t)
{
	bool queued = thread_queue_remove(&rq->runnable, t, THREAD_LINK_RUN);

	KASSERT(queued, "thread %d is not queued on CPU %u", t->id, rq_cpu(rq));
	rq->length--;
}

static void kick_cpu(unsigned cpu)
{
	if (cpu == this_cpu_index())
		this_cpu()->need_resched = true;
	else
		lapic_send_fixed(cpus[cpu]->apic_id, VECTOR_RESCHEDULE);
}

/* The first online CPU t may run on (allowed_cpu's rare case). */
static __noinline unsigned first_allowed_cpu(const struct thread *t)
{
	struct cpumask ok;

	cpumask_and(&ok, &t->affinity, &cpu_online_mask);
	return cpumask_next(&ok, 0);
}

/*
 * Where t may run: preferred when allowed, else the first online CPU it
 * may run on. Two bit tests, inline, in the common case: every switch asks
 * this of the thread it puts back.
 */
static inline unsigned allowed_cpu(const struct thread *t, unsigned preferred)
{
	if (cpumask_test(&t->affinity, preferred) &&
	    cpumask_test(&cpu_online_mask, preferred))
		return preferred;
	return first_allowed_cpu(t);
}

/* Puts t on cpu's queue and makes that CPU look at it. */
static void enqueue_on(unsigned cpu, struct thread *t)
{
	struct runqueue *rq = &runqueues[cpu];

	spin_lock(&rq->lock);
	enqueue_locked(rq, t);
	if (rq->current == rq->idle)
		kick_cpu(cpu);
	spin_unlock(&rq->lock);
}

/* switch_finish for a thread that died or moves (see there). */
static __noinline void switch_finish_slow(struct runqueue *rq,
					  struct thread *from)
{
	bool dead = from->state == THREAD_DEAD;
	int move_to = from->migrate_to;

	from->migrate_to = -1;
	switch_finish_unlock(rq);
	if (dead)
		thread_retire(from);
	else
		enqueue_on((unsigned)move_to, from);
}

/*
 * Runs on the thread that just got the CPU, right after the stacks were
 * swapped: decides what becomes of the thread it replaced, drops the queue
 * lock the previous thread took, then deals with that thread now that
 * nothing runs on its stack.
 *
 * The decision is made before the unlock. A thread that was still runnable
 * went back on this queue in schedule_locked; once the lock is dropped,
 * another CPU may take it (balance), run it, see it exit and retire it,
 * and a reaper may free it. Looking at its state only after the unlock
 * could then find THREAD_DEAD and retire it a second time (its stack
 * freed twice, a freed struct on the zombie list), or find a migrate_to
 * another CPU set and queue it twice. A dead or moving thread is on no
 * queue: after the unlock only we know of it, and it is ours to finish.
 */
static void switch_finish(void)
{
	struct runqueue *rq = this_rq();
	struct thread *from = rq->switched_from;

	if (unlikely(from &&
		     (from->state == THREAD_DEAD || from->migrate_to >= 0))) {
		switch_finish_slow(rq, from);
		return;
	}
	switch_finish_unlock(rq);
}

void sched_switch_finish(void)
{
	switch_finish();
}

/*
 * Switched to by switch_leave_to_frame, straight from the IPC fast path:
 * switch_finish, knowing that the thread we replaced only blocked.
 */
void switch_finish_to_frame(void)
{
	switch_finish_unlock(this_rq());
}

/*
 * Switches from the running thread to next (of this CPU), with rq locked
 * and interrupts off; returns when the running thread runs again, with no
 * lock held. With sched_handoff_stackless, the only place a thread switch
 * happens.
 */
static __always_inline void switch_to_locked(struct runqueue *rq,
					     struct thread *next)
{
	struct thread *prev = rq->current;

	switch_prepare_locked(this_cpu(), rq, prev, next);
	switch_context(prev, next);
	switch_finish();
}

/*
 * Switches to the next thread. Called with rq locked and interrupts off;
 * returns (in the same thread, later, maybe on another CPU) with no lock
 * held and interrupts still off.
 */
static void schedule_locked(struct runqueue *rq)
{
	struct thread *prev = rq->current, *next;
	unsigned cpu = rq_cpu(rq);

	KASSERT(!irqs_enabled(), "scheduling with interrupts on (thread %d)",
		prev->id);
	if (prev->state == THREAD_RUNNING && !prev->is_idle) {
		unsigned target = allowed_cpu(prev, cpu);

		if (target == cpu) {
			enqueue_locked(rq, prev);
		} else {
			prev->state = THREAD_RUNNABLE;
			prev->migrate_to = (int)target;
		}
	}
	next = dequeue_locked(rq);
	if (!next)
		next = prev->state == THREAD_RUNNING ? prev : rq->idle;
	this_cpu()->need_resched = false;
	if (next == prev) {
		prev->state = THREAD_RUNNING;
		spin_unlock(&rq->lock);
		return;
	}
	switch_to_locked(rq, next);
}

static void schedule(void)
{
	uint64_t flags = irq_save();
	struct runqueue *rq = this_rq();

	spin_lock(&rq->lock);
	schedule_locked(rq);
	irq_restore(flags);
}

void yield(void)
{
	schedule();
}

/* A new thread's first C code (from thread_start in sched/switch.asm). */
__noreturn void thread_first_run(thread_fn fn, void *arg);

__noreturn void thread_first_run(thread_fn fn, void *arg)
{
	switch_finish();
	sti();
	fn(arg);
	thread_exit();
}

__noreturn void thread_exit(void)
{
	struct runqueue *rq;

	cli();
	rq = this_rq();
	spin_lock(&rq->lock);
	KASSERT(!rq->current->is_idle, "an idle thread cannot exit");
	rq->current->state = THREAD_DEAD;
	schedule_locked(rq);
	panic("thread %d ran after it exited", current_thread()->id);
}

void sched_preempt_point(void)
{
	struct percpu *p = this_cpu();

	if (p->need_resched && !p->preempt_count && p->current)
		schedule();
}

/*
 * Takes rq's lock, lets go of release and marks the current thread blocked;
 * returns true with rq locked. Returns false, rq unlocked, when the thread
 * was woken between deciding to block and blocking: the caller's loop
 * re-checks what it waits for.
 */
static bool block_current(struct runqueue *rq, struct spinlock *release)
{
	spin_lock(&rq->lock);
	if (release)
		spin_unlock(release);
	if (rq->current->wake_pending) {
		rq->current->wake_pending = false;
		spin_unlock(&rq->lock);
		return false;
	}
	rq->current->state = THREAD_BLOCKED;
	return true;
}

void sched_block_locked(struct spinlock *release)
{
	struct runqueue *rq = this_rq();

	KASSERT(!irqs_enabled(), "blocking with interrupts on");
	if (block_current(rq, release))
		schedule_locked(rq);
}

void sched_handoff_locked(struct thread *next, struct spinlock *release)
{
	struct runqueue *rq = this_rq();

	KASSERT(!irqs_enabled(), "handing off with interrupts on");
	if (!sched_handoff_direct(next, rq_cpu(rq))) {
		sched_wake(next);
		sched_block_locked(release);
		return;
	}
	if (!block_current(rq, release)) {
		sched_wake(next);
		return;
	}
	if (next->state == THREAD_BLOCKED && !next->sleeping) {
		this_cpu()->need_resched = false;
		switch_to_locked(rq, next);
	} else
		schedule_locked(rq); /* someone else woke it already */
}

static void remove_sleeper_locked(struct runqueue *rq, struct thread *t)
{
	struct thread **link = &rq->sleepers;

	while (*link && *link != t)
		link = &(*link)->link[THREAD_LINK_RUN];
	if (*link)
		*link = t->link[THREAD_LINK_RUN];
	t->link[THREAD_LINK_RUN] = NULL;
	t->sleeping = false;
}

/*
 * Locks the queue of the CPU t is on. t->cpu changes only under the lock of
 * the queue t moves to, so the unlocked read may be stale (t moved, and may
 * have blocked there): once the lock is held, a t->cpu that still names
 * this queue stays true until it is dropped.
 */
static struct runqueue *lock_thread_rq(struct thread *t)
{
	for (;;) {
		struct runqueue *rq =
			&runqueues[__atomic_load_n(&t->cpu, __ATOMIC_RELAXED)];

		spin_lock(&rq->lock);
		if (t->cpu == rq_cpu(rq))
			return rq;
		spin_unlock(&rq->lock);
	}
}

void sched_wake(struct thread *t)
{
	uint64_t flags = irq_save();
	struct runqueue *rq = lock_thread_rq(t);

	if (t->state == THREAD_NEW) {
		/* Never ran, so it waits for nothing: sched_start_thread
		 * queues it, and it sees whatever it was woken for (its task
		 * killed) on its own. Queued here too, it would run twice. */
	} else if (t->state == THREAD_BLOCKED) {
		if (t->sleeping)
			remove_sleeper_locked(rq, t);
		enqueue_locked(rq, t);
		if (rq->current == rq->idle)
			kick_cpu(rq_cpu(rq));
	} else {
		/* Not asleep yet: make its next block return at once. */
		t->wake_pending = true;
	}
	spin_unlock(&rq->lock);
	irq_restore(flags);
}

void sleep_ns(uint64_t ns)
{
	struct runqueue *rq;
	struct thread *t, **link;
	uint64_t flags;

	/* Nothing to wait for: just let others run. */
	if (ns == 0) {
		yield();
		return;
	}
	flags = irq_save();
	rq = this_rq();

	spin_lock(&rq->lock);
	t = rq->current;
	t->wake_at = tsc_read_ordered() + ns_to_tsc(ns);
	t->sleeping = true;
	for (link = &rq->sleepers; *link && (*link)->wake_at <= t->wake_at;
	     link = &(*link)->link[THREAD_LINK_RUN])
		;
	t->link[THREAD_LINK_RUN] = *link;
	*link = t;
	t->state = THREAD_BLOCKED;
	schedule_locked(rq);
	irq_restore(flags);
}

void sched_start_thread(struct thread *t)
{
	uint64_t flags = irq_save();

	/* THREAD_NEW changes only here (and, for a thread never started, in
	 * its creator), so a racing sched_wake cannot have queued it. */
	KASSERT(t->state == THREAD_NEW, "starting thread %d twice (state %d)",
		t->id, t->state);
	enqueue_on(allowed_cpu(t, this_cpu_index()), t);
	irq_restore(flags);
}

int sched_set_affinity(const struct cpumask *mask)
{
	struct cpumask ok;
	uint64_t flags;
	struct runqueue *rq;

	cpumask_and(&ok, mask, &cpu_online_mask);
	if (cpumask_empty(&ok))
		return -1;
	flags = irq_save();
	rq = this_rq();
	spin_lock(&rq->lock);
	rq->current->affinity = ok;
	if (!cpumask_test(&ok, rq_cpu(rq)))
		schedule_locked(rq); /* moves us: see schedule_locked */
	else
		spin_unlock(&rq->lock);
	irq_restore(flags);
	return 0;
}

/* An idle CPU takes one queued thread from the busiest CPU. */
static void balance(struct runqueue *rq)
{
	unsigned self = rq_cpu(rq), busiest = MAX_CPUS, longest = 0, cpu;
	struct runqueue *from;
	struct thread *t;

	for_each_cpu (cpu, &cpu_online_mask) {
		unsigned len = __atomic_load_n(&runqueues[cpu].length,
					       __ATOMIC_RELAXED);

		if (cpu != self && len > longest) {
			longest = len;
			busiest = cpu;
		}
	}
	if (busiest == MAX_CPUS)
		return;
	from = &runqueues[busiest];
	spin_lock(&rq->lock);
	if (!spin_trylock(&from->lock)) {
		spin_unlock(&rq->lock);
		return;
	}
	for (t = thread_queue_first(&from->runnable); t;
	     t = thread_queue_next(t, THREAD_LINK_RUN)) {
		if (cpumask_test(&t->affinity, self))
			break;
	}
	if (t && rq->current == rq->idle && !rq->length) {
		unlink_locked(from, t);
		enqueue_locked(rq, t);
		this_cpu()->need_resched = true;
	}
	spin_unlock(&from->lock);
	spin_unlock(&rq->lock);
}

static void tick(struct trap_frame *frame)
{
	struct runqueue *rq = this_rq();
	uint64_t now = tsc_read_ordered();

	(void)frame;
	tlb_timer_tick();
	spin_lock(&rq->lock);
	rq->ticks++;
	while (rq->sleepers && rq->sleepers->wake_at <= now) {
		struct thread *t = rq->sleepers;

		rq->sleepers = t->link[THREAD_LINK_RUN];
		t->sleeping = false;
		enqueue_locked(rq, t);
	}
	/* The timeslice is over: let the next in line run. */
	if (rq->length)
		this_cpu()->need_resched = true;
	spin_unlock(&rq->lock);
	if (rq->current == rq->idle && !rq->length)
		balance(rq);
}

static void reschedule_interrupt(struct trap_frame *frame)
{
	(void)frame;
	this_cpu()->need_resched = true;
}

void sched_tick_restart(void)
{
	apic_timer_periodic_ns(timeslice_ns);
}

static __noreturn void idle_loop(void)
{
	struct runqueue *rq = this_rq();

	for (;;) {
		thread_reap();
		cli();
		if (rq->length || this_cpu()->need_resched) {
			schedule();
			continue;
		}
		sti_hlt();
	}
}

static void idle_entry(void *arg)
{
	(void)arg;
	idle_loop();
}

static void init_this_cpu(struct thread *running, struct thread *idle)
{
	struct runqueue *rq = this_rq();

	rq->current = running;
	rq->idle = idle;
	this_cpu()->current = running;
	running->state = THREAD_RUNNING;
	running->cpu = this_cpu_index();
	sched_tick_restart();
}

void sched_init(void)
{
	uint64_t timeslice_us = timeslice_option.number;
	struct thread *boot, *idle;
	struct cpumask self;

	timeslice_ns = timeslice_us * 1000;
	fpu_init();
	trap_set_handler(VECTOR_TIMER, tick);
	trap_set_handler(VECTOR_RESCHEDULE, reschedule_interrupt);
	boot = thread_adopt_current("boot", false, this_cpu()->stack_top);
	cpumask_clear_all(&self);
	cpumask_set(&self, 0);
	idle = thread_create(idle_entry, NULL, "idle0", &self);
	if (!boot || !idle)
		panic("sched: out of memory for the boot CPU's threads");
	idle->is_idle = true;
	idle->state = THREAD_RUNNABLE;
	init_this_cpu(boot, idle);
	kprintf("sched: timeslice %llu us, FPU state by %s\n",
		(unsigned long long)timeslice_us, fpu_method());
}

__noreturn void sched_run_idle_ap(uint64_t stack_top)
{
	char name[16];
	unsigned cpu = this_cpu_index();
	struct thread *idle;

	ksnprintf(name, sizeof(name), "idle%u", cpu);
	idle = thread_adopt_current(name, true, stack_top);
	if (!idle)
		panic("sched: out of memory for CPU %u's idle thread", cpu);
	init_this_cpu(idle, idle);
	idle_loop();
}

void sched_dump(void)
{
	unsigned cpu;

	for_each_cpu (cpu, &cpu_online_mask) {
		const struct runqueue *rq = &runqueues[cpu];
		const struct thread *cur = rq->current;

		kprintf("sched: cpu %u running %s (%d) queued %u ticks %llu "
			"need_resched %d preempt %u%s\n",
			cpu, cur ? cur->name : "-", cur ? cur->id : -1,
			rq->length, (unsigned long long)rq->ticks,
			cpus[cpu]->need_resched, cpus[cpu]->preempt_count,
			spin_is_locked((struct spinlock *)&rq->lock)
				? " (locked)"
				: "");
	}
}
