// SPDX-License-Identifier: MIT
/*
 * The simulator's CPUs and scheduler (docs/tlb-simulator.md).
 *
 * Each simulated CPU is a host thread, and exactly one of them runs at a
 * time: it holds the baton (S.running). At every scheduling point (every
 * shared-memory access, before it acts; every tlb_hw_* call that acts on
 * the machine, and after tlb_hw_call and tlb_hw_fence too; the start of
 * every workload operation) the running CPU asks the scheduler for the
 * next move:
 *   RUN c     CPU c runs on from where it stopped (c may be the running
 *             CPU: that is move 0, "go on", whenever it can go on);
 *   IRQ c     CPU c takes its pending call interrupt, where it stopped
 *             (only while c has interrupts on);
 *   FLUSH-RUN c  the running CPU's whole store buffer becomes visible,
 *             then CPU c runs (a preemption at which every store so far
 *             has reached memory: the earliest-visibility schedule);
 *   DRAIN c i entry i of CPU c's store buffer becomes visible in memory
 *             (tlb_sim_memory.c says which entries may go);
 *   BCAST c i CPU c's outstanding INVLPGB i completes: every CPU's TLB
 *             and paging-structure caches drop what it names.
 * A run is therefore fixed by the list of moves chosen, which the
 * exhaustive search replays from the start with one move changed, and
 * the random search draws from a seed. By default stores stay buffered
 * until something forces them out (a fence, a locked operation, a
 * serializing instruction, the end of a phase, or no other move being
 * left): the latest a store can become visible, so the schedule in which
 * a missing fence shows needs no extra choice. The opposite, a store seen
 * early, is one choice too: FLUSH-RUN preempts with the buffer emptied
 * first. Both, and a single DRAIN, count against the preemption bound
 * like a preemption, so the search stays as bounded as before. INVLPGB
 * alike: by default a broadcast completes as late as it can (the issuing
 * CPU's TLBSYNC, or the end of the phase), so a missing TLBSYNC shows in
 * the default schedule; BCAST, an early completion, is a costed choice.
 *
 * Cross-CPU calls are the kernel's own smp/call_queue.c, on the
 * smp/call_hw.h implemented here: the IPI sets the target's pending
 * interrupt; the scheduler delivers it (an IRQ move) only while the target
 * has interrupts on, and the handler is the kernel's call_queue_irq, with
 * interrupts off, ending in IRET (serializing: the buffer drains).
 *
 * Blocked CPUs are not offered to the scheduler: one spinning in a wait
 * loop (call_hw_relax) or on tlb_hw_fence() (two fences in a row with no
 * access between) waits until memory changes (a store drains, a locked
 * operation changes a value) or an IPI is sent to it. With no CPU able to
 * move, buffered stores are drained (one forced choice at a time); with
 * nothing buffered either, while some CPU has not finished its phase, the
 * run has deadlocked: a failure.
 */
#define _GNU_SOURCE /* pthread_getattr_np */
#include "tests/host/tlb_sim.h"
#include "smp/call_hw.h"
#include "smp/call_queue.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Scheduling points in one run before it counts as a livelock. */
#define SIM_STEPS_MAX 200000
/*
 * Random search: the running CPU is preempted at one point in this many,
 * and the hardware drops or fills a TLB entry at one point in this many.
 * Both are rare enough that a CPU usually gets through a switch or a flush
 * uninterrupted, and common enough that most runs interleave somewhere.
 */
#define SIM_SWITCH_ODDS	  4
#define SIM_HW_EVENT_ODDS 8
/*
 * Random search: at each point, one buffered store (of any CPU) drains with
 * odds 1 in SIM_DRAIN_ODDS, so stores stay buffered for a few accesses.
 */
#define SIM_DRAIN_ODDS 3
/* Drain moves offered per CPU (its oldest drainable entries). */
#define SIM_DRAIN_MOVES 4
/* BCAST moves offered per CPU (its oldest outstanding INVLPGBs). */
#define SIM_BCAST_MOVES 4

enum move_kind { MOVE_RUN, MOVE_IRQ, MOVE_FLUSH_RUN, MOVE_DRAIN, MOVE_BCAST };

struct move {
	uint8_t kind, cpu, entry;
};

#define SIM_MOVES_MAX \
	(3 * SIM_CPUS_MAX + SIM_CPUS_MAX * (SIM_DRAIN_MOVES + SIM_BCAST_MOVES))

struct sim_cpu {
	bool arrived;  /* at the barrier that ends the current phase */
	bool spinning; /* in a wait loop: waits for memory to change */
	/*
	 * sim_memory_version() when the current turn of its wait loop began
	 * (before the loop's loads): memory changed since then means the
	 * loads may see something new, and the CPU can run again.
	 */
	uint64_t spin_version;
	uint64_t mark; /* the version when it last left a wait */
	/*
	 * Spinning on a taken lock (cpu_relax): runs again only after a
	 * scheduling point past lock_step, so that the holder moves first.
	 */
	bool lock_spin;
	uint64_t lock_step;
	bool last_was_fence;
	bool irq_pending;  /* a call IPI was sent to it, not yet taken */
	bool take_irq;	   /* the scheduler sent it to its interrupt handler */
	unsigned handling; /* in the handler: runs even after its phase */
	unsigned irq_off;
	unsigned pins;
};

/*
 * The host threads, kept from run to run (creating one costs about a
 * millisecond under ASan, more than a whole run): thread c simulates CPU c
 * in every run that has that CPU.
 */
struct sim_thread {
	pthread_t thread;
	pthread_cond_t wake;
};

/*
 * The scheduler's state. The fields the scheduler reads to decide (who
 * has arrived, waits, spins, has requests queued) and the baton change
 * under lock; the rest is touched only by the CPU holding the baton, and
 * the lock's hand-over orders it between CPUs.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t finished; /* the run is over; a thread left it */
	struct sim_thread threads[SIM_CPUS_MAX];
	unsigned nthreads;
	uint64_t run_id; /* counts runs: a thread joins each new one */
	unsigned left;	 /* threads that left the run that is over */
	struct sim_run *run;
	sim_body body;
	unsigned phase;
	bool phase_start; /* the next choice picks who starts the phase */
	bool over;
	unsigned running; /* the CPU holding the baton */
	uint64_t rng;
	struct cpumask online;
	struct sim_cpu cpu[SIM_CPUS_MAX];
	/* call_hw_slots: each CPU's request slots, one per target. */
	struct call_request slots[SIM_CPUS_MAX][MAX_CPUS];
} S = {.lock = PTHREAD_MUTEX_INITIALIZER, .finished = PTHREAD_COND_INITIALIZER};

static __thread int self = -1;
/* Where a thread goes back to when its run is over. */
static __thread jmp_buf between_runs;

/* --- Baton ----------------------------------------------------------------------- */

/* Ends this thread's part in a run that is over. Lock held. */
static __noreturn void leave_run(void)
{
	longjmp(between_runs, 1);
}

/* Gives the baton to cpu and waits until it comes back. Lock held. */
static void hand_over(unsigned cpu)
{
	S.running = cpu;
	pthread_cond_signal(&S.threads[cpu].wake);
	while (S.running != (unsigned)self && !S.over)
		pthread_cond_wait(&S.threads[self].wake, &S.lock);
	if (S.over)
		leave_run();
}

static __noreturn void end_run(void)
{
	S.over = true;
	pthread_cond_signal(&S.finished);
	leave_run();
}

void sim_fail(const char *fmt, ...)
{
	struct sim_run *run = S.run;
	va_list ap;

	if (self < 0) {
		fprintf(stderr,
			"tlb_sim: a simulator check failed outside "
			"a simulated CPU: %s\n",
			fmt);
		abort();
	}
	pthread_mutex_lock(&S.lock);
	if (!run->failed) {
		run->failed = true;
		va_start(ap, fmt);
		vsnprintf(run->failure, sizeof(run->failure), fmt, ap);
		va_end(ap);
		sim_trace("FAILURE: %s", run->failure);
	}
	end_run();
}

/* --- Moves ------------------------------------------------------------------------- */

static bool concurrent_phase(void)
{
	return S.phase == SIM_PHASE_WORK;
}

/* In a one-at-a-time phase, the CPU whose turn it is. */
static unsigned turn(void)
{
	for (unsigned c = 0; c < S.run->cpus; c++) {
		if (!S.cpu[c].arrived)
			return c;
	}
	return S.run->cpus;
}

static bool runnable(unsigned c)
{
	const struct sim_cpu *p = &S.cpu[c];

	if (p->spinning)
		return p->spin_version != sim_memory_version();
	if (p->lock_spin && S.run->steps <= p->lock_step)
		return false;
	if (p->handling)
		return true;
	return !p->arrived && (concurrent_phase() || c == turn());
}

static bool interruptible(unsigned c)
{
	const struct sim_cpu *p = &S.cpu[c];

	return p->irq_pending && !p->irq_off && !p->take_irq;
}

/*
 * The moves at this point: go on (if this CPU can), run another CPU, an
 * interrupt, then drains and completions (from *first_drain on).
 */
static unsigned list_moves(struct move *moves, bool *go_on,
			   unsigned *first_drain)
{
	unsigned n = 0;

	*go_on = runnable((unsigned)self);
	if (*go_on)
		moves[n++] = (struct move){MOVE_RUN, (uint8_t)self, 0};
	for (unsigned c = 0; c < S.run->cpus; c++) {
		if (c != (unsigned)self && runnable(c))
			moves[n++] = (struct move){MOVE_RUN, (uint8_t)c, 0};
	}
	for (unsigned c = 0; c < S.run->cpus; c++) {
		if (interruptible(c))
			moves[n++] = (struct move){MOVE_IRQ, (uint8_t)c, 0};
	}
	*first_drain = n;
	for (unsigned c = 0;
	     c < S.run->cpus && sim_memory_buffered((unsigned)self); c++) {
		if (c != (unsigned)self && (runnable(c) || S.cpu[c].spinning))
			moves[n++] =
				(struct move){MOVE_FLUSH_RUN, (uint8_t)c, 0};
	}
	for (unsigned c = 0; c < S.run->cpus; c++) {
		unsigned offered = 0;

		for (unsigned i = 0;
		     i < sim_memory_buffered(c) && offered < SIM_DRAIN_MOVES;
		     i++) {
			if (!sim_memory_drainable(c, i))
				continue;
			moves[n++] = (struct move){MOVE_DRAIN, (uint8_t)c,
						   (uint8_t)i};
			offered++;
		}
	}
	for (unsigned c = 0; c < S.run->cpus; c++) {
		for (unsigned i = 0;
		     i < mmu_broadcasts(c) && i < SIM_BCAST_MOVES; i++)
			moves[n++] = (struct move){MOVE_BCAST, (uint8_t)c,
						   (uint8_t)i};
	}
	return n;
}

/* splitmix64: small, fast, and the same numbers on every host. */
uint64_t sim_splitmix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t next_random(void)
{
	return sim_splitmix(&S.rng);
}

uint64_t sim_random(uint64_t below)
{
	return S.run->mode == SIM_RANDOM && below ? next_random() % below : 0;
}

static unsigned choose(unsigned n, bool go_on, unsigned first_drain)
{
	struct sim_run *run = S.run;
	unsigned pick = 0;

	if (!concurrent_phase())
		return 0;
	if (S.phase_start) {
		/* Who starts the phase is free: not a preemption. */
		go_on = false;
		S.phase_start = false;
	}
	if (run->mode == SIM_DFS && run->nchoices < run->prefix_len)
		pick = run->prefix[run->nchoices];
	else if (run->mode == SIM_RANDOM && first_drain < n &&
		 next_random() % SIM_DRAIN_ODDS == 0)
		pick = first_drain +
		       (unsigned)(next_random() % (n - first_drain));
	else if (run->mode == SIM_RANDOM && first_drain &&
		 (!go_on || next_random() % SIM_SWITCH_ODDS == 0))
		pick = (unsigned)(next_random() % first_drain);
	if (pick >= n) {
		pthread_mutex_unlock(&S.lock);
		sim_fail("replay diverged: choice %zu is %u of %u moves",
			 run->nchoices, pick, n);
	}
	if (run->nchoices < SIM_CHOICES_MAX)
		run->choices[run->nchoices] = (struct sim_choice){
			(uint8_t)pick, (uint8_t)n, (uint8_t)first_drain, go_on};
	else if (run->mode == SIM_DFS) {
		pthread_mutex_unlock(&S.lock);
		sim_fail("more than %d choices in one run (a livelock?)",
			 SIM_CHOICES_MAX);
	}
	run->nchoices++;
	return pick;
}

static void describe_deadlock(char *buf, size_t size)
{
	size_t used = 0;

	for (unsigned c = 0; c < S.run->cpus && used < size; c++) {
		const struct sim_cpu *p = &S.cpu[c];

		used += (size_t)snprintf(
			buf + used, size - used, " cpu%u:%s%s%s irq_off=%u", c,
			p->arrived ? " done" : "",
			p->spinning ? " spinning" : "",
			p->irq_pending ? " irq-pending" : "", p->irq_off);
	}
}

/* Every CPU finished the phase and no call is pending. Lock held. */
static bool phase_complete(void)
{
	for (unsigned c = 0; c < S.run->cpus; c++) {
		if (!S.cpu[c].arrived || S.cpu[c].irq_pending ||
		    S.cpu[c].handling)
			return false;
	}
	return true;
}

static void take_interrupt(void);

/* One store of cpu's buffer becomes visible (a move). Lock held. */
static void drain(unsigned cpu, unsigned entry)
{
	sim_memory_trace_drain(cpu, entry, "");
	sim_memory_drain_entry(cpu, entry);
}

/*
 * Completes cpu's outstanding INVLPGB i (all of them: i < 0). Lock held;
 * dropped meanwhile, since a completion may fail the run.
 */
static void complete_broadcasts(unsigned cpu, int i, const char *why)
{
	pthread_mutex_unlock(&S.lock);
	if (i < 0)
		mmu_broadcasts_complete_all(cpu, why);
	else
		mmu_broadcast_complete(cpu, (unsigned)i, why);
	pthread_mutex_lock(&S.lock);
}

/* FLUSH-RUN: every store of this CPU's buffer, oldest first. Lock held. */
static void flush_own(void)
{
	while (sim_memory_buffered((unsigned)self)) {
		sim_memory_trace_drain((unsigned)self, 0, " (flush-run)");
		sim_memory_drain_entry((unsigned)self, 0);
	}
}

/*
 * The scheduling point of the running CPU, lock held: choose moves until
 * one lets this CPU go on.
 */
static void point_locked(void)
{
	struct move moves[SIM_MOVES_MAX];
	bool go_on;

	for (;;) {
		unsigned n, pick, first_drain;
		struct move m;

		if (++S.run->steps > SIM_STEPS_MAX) {
			pthread_mutex_unlock(&S.lock);
			sim_fail("livelock: %d scheduling points",
				 SIM_STEPS_MAX);
		}
		if (S.run->mode == SIM_RANDOM && concurrent_phase() &&
		    next_random() % SIM_HW_EVENT_ODDS == 0) {
			/* It may fail the run: sim_fail takes the lock. */
			pthread_mutex_unlock(&S.lock);
			mmu_random_event();
			pthread_mutex_lock(&S.lock);
		}
		n = list_moves(moves, &go_on, &first_drain);
		if (!first_drain && phase_complete()) {
			/*
			 * The end of a phase: every store becomes visible,
			 * every broadcast completes.
			 */
			for (unsigned c = 0; c < S.run->cpus; c++) {
				sim_memory_drain_all(c);
				complete_broadcasts(c, -1, "the phase ends");
			}
			if (++S.phase == SIM_PHASES)
				end_run();
			for (unsigned c = 0; c < S.run->cpus; c++)
				S.cpu[c].arrived = false;
			S.phase_start = true;
			continue;
		}
		if (!n) {
			char why[256];

			describe_deadlock(why, sizeof(why));
			pthread_mutex_unlock(&S.lock);
			sim_fail("deadlock:%s", why);
		}
		pick = choose(n, go_on, first_drain);
		m = moves[pick];
		if (m.kind == MOVE_DRAIN) {
			drain(m.cpu, m.entry);
			continue;
		}
		if (m.kind == MOVE_BCAST) {
			complete_broadcasts(m.cpu, m.entry,
					    "the scheduler's choice");
			continue;
		}
		if (m.kind == MOVE_FLUSH_RUN) {
			flush_own();
			if (!runnable(m.cpu))
				continue; /* the drain did not wake it */
		}
		if (m.cpu != (unsigned)self) {
			S.cpu[m.cpu].take_irq = m.kind == MOVE_IRQ;
			hand_over(m.cpu);
		} else if (m.kind == MOVE_IRQ) {
			S.cpu[self].take_irq = true;
		}
		if (S.cpu[self].take_irq) {
			S.cpu[self].take_irq = false;
			pthread_mutex_unlock(&S.lock);
			take_interrupt();
			pthread_mutex_lock(&S.lock);
			continue;
		}
		return;
	}
}

void sim_point(void)
{
	pthread_mutex_lock(&S.lock);
	S.cpu[self].last_was_fence = false;
	point_locked();
	pthread_mutex_unlock(&S.lock);
}

void sim_access_point(void)
{
	sim_point();
}

void sim_barrier(void)
{
	unsigned phase;

	pthread_mutex_lock(&S.lock);
	if (S.cpu[self].pins) {
		pthread_mutex_unlock(&S.lock);
		sim_fail("cpu%d ends a phase pinned (%u)", self,
			 S.cpu[self].pins);
	}
	S.cpu[self].arrived = true;
	phase = S.phase;
	while (S.phase == phase)
		point_locked();
	pthread_mutex_unlock(&S.lock);
}

int sim_current(void)
{
	return self;
}

uint64_t sim_steps(void)
{
	return S.run ? S.run->steps : 0;
}

unsigned sim_cpu(void)
{
	if (self < 0)
		sim_fail("a CPU function was called outside a simulated CPU");
	return (unsigned)self;
}

void sim_irq_off(void)
{
	S.cpu[sim_cpu()].irq_off++;
}

/*
 * INVLPGB and the TLBSYNC that waits for it must run on one CPU: TLBSYNC
 * waits only for its own CPU's. A thread that leaves its last pinned or
 * interrupts-off section between them could move to another CPU on a real
 * machine (here it never moves): a failure at that moment.
 */
static void check_stays(const char *what)
{
	unsigned n = mmu_broadcasts((unsigned)self);

	if (n && sim_movable())
		sim_fail("cpu%d %s with %u INVLPGB outstanding: the thread may "
			 "move to another CPU, whose TLBSYNC waits only for "
			 "that CPU's",
			 self, what, n);
}

bool sim_in_interrupt(void)
{
	return S.cpu[sim_cpu()].handling > 0;
}

bool sim_movable(void)
{
	const struct sim_cpu *me = &S.cpu[sim_cpu()];

	return !me->pins && !me->irq_off;
}

void sim_irq_on(void)
{
	if (!S.cpu[sim_cpu()].irq_off)
		sim_fail("cpu%d enables interrupts that were on", self);
	S.cpu[self].irq_off--;
	check_stays("enables interrupts");
}

void sim_check_unpinned(const char *where)
{
	if (S.cpu[sim_cpu()].pins)
		sim_fail("cpu%d is still pinned (%u) at %s", self,
			 S.cpu[self].pins, where);
}

/* --- Cross-CPU calls: smp/call_hw.h under smp/call_queue.c ------------------ */

/* The call interrupt: the kernel's handler, then IRET (serializing). */
static void take_interrupt(void)
{
	struct sim_cpu *me = &S.cpu[self];

	pthread_mutex_lock(&S.lock);
	me->irq_pending = false;
	me->spinning = false;
	me->irq_off++;
	me->handling++;
	pthread_mutex_unlock(&S.lock);
	sim_trace("takes the call IPI");
	sim_counts.ipis++;
	call_queue_irq();
	sim_memory_serialize();
	me->handling--;
	me->irq_off--;
	check_stays("returns from the call interrupt");
}

unsigned call_hw_cpu(void)
{
	return sim_cpu();
}

const struct cpumask *call_hw_online(void)
{
	return &S.online;
}

struct call_request *call_hw_slots(unsigned cpu)
{
	return S.slots[cpu];
}

void call_hw_send_ipi(unsigned cpu)
{
	pthread_mutex_lock(&S.lock);
	S.cpu[cpu].irq_pending = true;
	S.cpu[cpu].spinning = false;
	pthread_mutex_unlock(&S.lock);
	sim_trace("sends the call IPI to cpu%u", cpu);
}

uint64_t call_hw_irq_save(void)
{
	sim_irq_off();
	return 0;
}

void call_hw_irq_restore(uint64_t flags)
{
	(void)flags;
	sim_irq_on();
}

void call_hw_preempt_disable(void)
{
	tlb_hw_pin();
}

void call_hw_preempt_enable(void)
{
	tlb_hw_unpin();
}

/*
 * A wait loop's turn: not runnable until memory changed since the turn
 * began, or an IPI comes. (The first turn of a wait starts from an older
 * mark: it runs once more, which costs a turn and misses nothing.)
 */
/*
 * One turn of a wait loop at a scheduling point, lock held: while spinning,
 * the CPU sleeps until memory changed since the turn began (or an IPI
 * comes); either way the next turn starts now.
 */
static void loop_turn_locked(struct sim_cpu *me, bool spinning)
{
	me->spinning = spinning;
	me->spin_version = me->mark;
	point_locked();
	me->spinning = false;
	me->mark = sim_memory_version();
}

/*
 * cpu_relax in a contended lock's loop. The lock is a plain variable, not
 * simulated memory, so its release is no change the wait above could see:
 * the spinning CPU waits for any other move instead (the next step), and
 * with nothing else able to move the run is a deadlock.
 */
void sim_lock_relax(void)
{
	struct sim_cpu *me = &S.cpu[sim_cpu()];

	pthread_mutex_lock(&S.lock);
	me->lock_spin = true;
	me->lock_step = S.run->steps + 1; /* the step this point takes */
	point_locked();
	me->lock_spin = false;
	pthread_mutex_unlock(&S.lock);
}

void call_hw_relax(void)
{
	struct sim_cpu *me = &S.cpu[sim_cpu()];

	pthread_mutex_lock(&S.lock);
	loop_turn_locked(me, true);
	pthread_mutex_unlock(&S.lock);
}

/* No watchdog: the scheduler finds deadlocks and livelocks itself. */
uint64_t call_hw_clock(void)
{
	return 0;
}

uint64_t call_hw_elapsed_ns(uint64_t since)
{
	(void)since;
	return 0;
}

void call_hw_stuck(unsigned target, unsigned cpu, uint64_t seconds)
{
	sim_fail("cpu%u: cpu%u ignored a call for %llu s", cpu, target,
		 (unsigned long long)seconds);
}

/* The simulator checks the TLB protocol over calls that work. */
enum call_hw_bug call_bug_choice = CALL_HW_BUG_NONE;

void tlb_hw_call(const struct cpumask *targets, void (*fn)(void *arg),
		 void *arg, enum tlb_hw_wait wait)
{
	sim_point();
	smp_call_function_many(targets, fn, arg,
			       wait == TLB_HW_WAIT ? SMP_CALL_WAIT
						   : SMP_CALL_NO_WAIT);
	/*
	 * A request on the caller's stack: on hardware the stores that
	 * reuse that stack after the call queue behind it in the buffer;
	 * here they bypass it, so it must not drain over them later.
	 */
	sim_memory_drain_stack(sim_cpu());
	sim_point();
}

unsigned tlb_hw_cpu(void)
{
	return sim_cpu();
}

struct tlb_cpu *tlb_hw_cpu_state(void)
{
	return &tlb_cpus[sim_cpu()];
}

void tlb_hw_cpu_state_set(struct tlb_cpu *c)
{
	if (c != &tlb_cpus[sim_cpu()])
		sim_fail("cpu%u named another CPU's TLB state", sim_cpu());
}

const struct cpumask *tlb_hw_online(void)
{
	return &S.online;
}

/* The step: the trace's own column, and no scheduling point. */
uint64_t tlb_hw_clock(void)
{
	return sim_steps();
}

void tlb_hw_fence(void)
{
	struct sim_cpu *me = &S.cpu[sim_cpu()];
	bool spin = me->last_was_fence;

	sim_point();
	sim_memory_serialize(); /* MFENCE: the buffer drains */
	pthread_mutex_lock(&S.lock);
	/* A second fence with nothing in between: a spin loop. */
	loop_turn_locked(me, spin);
	me->last_was_fence = true;
	pthread_mutex_unlock(&S.lock);
}

void tlb_hw_pin(void)
{
	S.cpu[sim_cpu()].pins++;
}

void tlb_hw_unpin(void)
{
	if (!S.cpu[sim_cpu()].pins)
		sim_fail("cpu%d unpins without a pin", self);
	S.cpu[self].pins--;
	check_stays("unpins");
}

/* --- Runs ------------------------------------------------------------------------ */

/* Runs this CPU's part of the run; returns, lock held, once it is over. */
static void take_part(void)
{
	if (setjmp(between_runs))
		return; /* from leave_run() */
	/* Interrupts come on once the CPU starts (APs are off until then). */
	S.cpu[self].irq_off = 0;
	pthread_mutex_unlock(&S.lock);
	S.body((unsigned)self);
	/* The body ends with the last barrier, which ends the run: it never
	 * comes back here. */
	sim_fail("cpu%d returned from its body", self);
}

/* Where this thread's stack is (tlb_hw_call drains stores to it). */
static void record_stack(void)
{
	pthread_attr_t attr;
	void *lo;
	size_t size;

	if (pthread_getattr_np(pthread_self(), &attr) ||
	    pthread_attr_getstack(&attr, &lo, &size)) {
		perror("tlb_sim: pthread_getattr_np");
		exit(2);
	}
	pthread_attr_destroy(&attr);
	sim_memory_set_stack((unsigned)self, (uintptr_t)lo,
			     (uintptr_t)lo + size);
}

static void *cpu_thread(void *arg)
{
	uint64_t seen = 0;

	self = (int)(intptr_t)arg;
	record_stack();
	pthread_mutex_lock(&S.lock);
	for (;;) {
		/* A new run that has this CPU: wait for the baton (or the
		 * end, if the run fails before this CPU starts). */
		while (S.run_id == seen || (unsigned)self >= S.run->cpus ||
		       (S.running != (unsigned)self && !S.over)) {
			if (S.run_id != seen && (unsigned)self >= S.run->cpus)
				seen = S.run_id;
			pthread_cond_wait(&S.threads[self].wake, &S.lock);
		}
		seen = S.run_id;
		if (!S.over)
			take_part();
		S.left++;
		pthread_cond_signal(&S.finished);
	}
	return NULL;
}

void sim_run(struct sim_run *run, sim_body body)
{
	pthread_mutex_lock(&S.lock);
	S.run = run;
	S.body = body;
	S.phase = 0;
	S.phase_start = false;
	S.over = false;
	S.rng = run->seed;
	S.running = 0;
	S.left = 0;
	memset(S.slots, 0, sizeof(S.slots));
	call_queue_reset();
	sim_memory_reset(run->cpus);
	cpumask_clear_all(&S.online);
	for (unsigned c = 0; c < run->cpus; c++) {
		S.cpu[c] = (struct sim_cpu){.irq_off = 1};
		cpumask_set(&S.online, c);
	}
	run->nchoices = 0;
	run->failed = false;
	run->failure[0] = '\0';
	run->steps = 0;
	sim_trace_reset();
	for (; S.nthreads < run->cpus; S.nthreads++) {
		struct sim_thread *t = &S.threads[S.nthreads];

		pthread_cond_init(&t->wake, NULL);
		if (pthread_create(&t->thread, NULL, cpu_thread,
				   (void *)(intptr_t)S.nthreads)) {
			perror("tlb_sim: pthread_create");
			exit(2);
		}
	}
	S.run_id++;
	for (unsigned c = 0; c < S.nthreads; c++)
		pthread_cond_signal(&S.threads[c].wake);
	while (!S.over)
		pthread_cond_wait(&S.finished, &S.lock);
	for (unsigned c = 0; c < run->cpus; c++)
		pthread_cond_signal(&S.threads[c].wake);
	while (S.left < run->cpus)
		pthread_cond_wait(&S.finished, &S.lock);
	pthread_mutex_unlock(&S.lock);
}
