// SPDX-License-Identifier: MIT
/*
 * The simulator's CPUs and scheduler (docs/tlb-simulator.md).
 *
 * Each simulated CPU is a host thread, and exactly one of them runs at a
 * time: it holds the baton (S.running). At every scheduling point (every
 * tlb_hw_* call that acts on the machine, and the start of every workload
 * operation) the running CPU asks the scheduler for the next move:
 *   RUN c   CPU c runs on from where it stopped (c may be the running CPU:
 *           that is move 0, "go on", whenever the running CPU can go on);
 *   IRQ c   CPU c takes the interrupt for its pending requests, where it
 *           stopped (only while c has interrupts on).
 * A run is therefore fixed by the list of moves chosen, which the
 * exhaustive search replays from the start with one move changed, and
 * the random search draws from a seed.
 *
 * Cross-CPU calls follow smp/call.c: one request slot per (sender, target)
 * pair; the sender waits for the slot to be free, queues the request, runs
 * the function itself if it is a target, then waits for every target,
 * serving its own queue meanwhile (so two CPUs calling each other make
 * progress). The target runs the requests it finds when it takes the
 * interrupt, with interrupts off, and acknowledges each after running it
 * (or before, for TLB_HW_WAIT_ACK_FIRST).
 *
 * Blocked CPUs are not offered to the scheduler: one waiting for an
 * acknowledgement (until it comes or a request arrives), and one spinning
 * on tlb_hw_fence() (two fences in a row with nothing between: it waits
 * for another CPU to take a step). With no move left while some CPU has
 * not finished its phase, the run has deadlocked: a failure.
 */
#include "tests/host/tlb_sim.h"

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

enum move_kind { MOVE_RUN, MOVE_IRQ };

struct move {
	uint8_t kind, cpu;
};

struct sim_request {
	void (*fn)(void *arg);
	void *arg;
	bool pending;	/* queued or running: cleared by the target */
	bool ack_first; /* TLB_HW_WAIT_ACK_FIRST: cleared before fn runs */
};

struct sim_cpu {
	bool arrived;  /* at the barrier that ends the current phase */
	bool spinning; /* in a tlb_hw_fence loop: waits for others */
	bool last_was_fence;
	bool take_irq;	   /* the scheduler sent it to its interrupt handler */
	unsigned handling; /* in the handler: runs even after its phase */
	unsigned irq_off;
	unsigned pins;
	/* Blocked in tlb_hw_call until this request is acknowledged. */
	const struct sim_request *waiting_for;
	unsigned inbox[SIM_CPUS_MAX]; /* senders, oldest first */
	unsigned inbox_len;
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
	struct sim_request req[SIM_CPUS_MAX][SIM_CPUS_MAX]; /* [from][to] */
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

	if (p->waiting_for)
		return !p->waiting_for->pending || p->inbox_len;
	if (p->spinning)
		return false;
	if (p->handling)
		return true;
	return !p->arrived && (concurrent_phase() || c == turn());
}

/* A CPU blocked in tlb_hw_call serves its queue itself, not by IRQ. */
static bool interruptible(unsigned c)
{
	const struct sim_cpu *p = &S.cpu[c];

	return p->inbox_len && !p->irq_off && !p->waiting_for && !p->take_irq;
}

static unsigned list_moves(struct move *moves, bool *go_on)
{
	unsigned n = 0;

	*go_on = runnable((unsigned)self);
	if (*go_on)
		moves[n++] = (struct move){MOVE_RUN, (uint8_t)self};
	for (unsigned c = 0; c < S.run->cpus; c++) {
		if (c != (unsigned)self && runnable(c))
			moves[n++] = (struct move){MOVE_RUN, (uint8_t)c};
	}
	for (unsigned c = 0; c < S.run->cpus; c++) {
		if (interruptible(c))
			moves[n++] = (struct move){MOVE_IRQ, (uint8_t)c};
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

static unsigned choose(unsigned n, bool go_on)
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
	else if (run->mode == SIM_RANDOM &&
		 (!go_on || next_random() % SIM_SWITCH_ODDS == 0))
		pick = (unsigned)(next_random() % n);
	if (pick >= n) {
		pthread_mutex_unlock(&S.lock);
		sim_fail("replay diverged: choice %zu is %u of %u moves",
			 run->nchoices, pick, n);
	}
	if (run->nchoices < SIM_CHOICES_MAX)
		run->choices[run->nchoices] =
			(struct sim_choice){(uint8_t)pick, (uint8_t)n, go_on};
	else if (run->mode == SIM_DFS) {
		pthread_mutex_unlock(&S.lock);
		sim_fail("more than %d choices in one run", SIM_CHOICES_MAX);
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
			p->waiting_for ? " waiting-for-ack" : "",
			p->spinning ? " spinning" : "", p->irq_off);
	}
}

/* Every CPU finished the phase and no request is queued. Lock held. */
static bool phase_complete(void)
{
	for (unsigned c = 0; c < S.run->cpus; c++) {
		if (!S.cpu[c].arrived || S.cpu[c].inbox_len ||
		    S.cpu[c].handling)
			return false;
	}
	return true;
}

static void serve_inbox(void);

/*
 * The scheduling point of the running CPU, lock held: choose moves until
 * one lets this CPU go on.
 */
static void point_locked(void)
{
	struct move moves[2 * SIM_CPUS_MAX];
	bool go_on;

	for (unsigned c = 0; c < S.run->cpus; c++) {
		if (c != (unsigned)self)
			S.cpu[c].spinning = false;
	}
	for (;;) {
		unsigned n, pick;
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
		n = list_moves(moves, &go_on);
		if (!n) {
			if (!phase_complete()) {
				char why[256];

				describe_deadlock(why, sizeof(why));
				pthread_mutex_unlock(&S.lock);
				sim_fail("deadlock:%s", why);
			}
			if (++S.phase == SIM_PHASES)
				end_run();
			for (unsigned c = 0; c < S.run->cpus; c++)
				S.cpu[c].arrived = false;
			S.phase_start = true;
			continue;
		}
		pick = choose(n, go_on);
		m = moves[pick];
		if (m.cpu != (unsigned)self) {
			S.cpu[m.cpu].take_irq = m.kind == MOVE_IRQ;
			hand_over(m.cpu);
		} else if (m.kind == MOVE_IRQ) {
			S.cpu[self].take_irq = true;
		}
		if (S.cpu[self].take_irq) {
			S.cpu[self].take_irq = false;
			pthread_mutex_unlock(&S.lock);
			serve_inbox();
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

void sim_irq_on(void)
{
	if (!S.cpu[sim_cpu()].irq_off)
		sim_fail("cpu%d enables interrupts that were on", self);
	S.cpu[self].irq_off--;
}

void sim_check_unpinned(const char *where)
{
	if (S.cpu[sim_cpu()].pins)
		sim_fail("cpu%d is still pinned (%u) at %s", self,
			 S.cpu[self].pins, where);
}

/* --- Cross-CPU calls ----------------------------------------------------------- */

/* The interrupt handler: runs every request queued when it starts. */
static void serve_inbox(void)
{
	struct sim_cpu *me = &S.cpu[self];
	unsigned from[SIM_CPUS_MAX], n;

	pthread_mutex_lock(&S.lock);
	n = me->inbox_len;
	memcpy(from, me->inbox, sizeof(from));
	me->inbox_len = 0;
	me->irq_off++;
	me->handling++;
	pthread_mutex_unlock(&S.lock);
	for (unsigned i = 0; i < n; i++) {
		struct sim_request *r = &S.req[from[i]][self];
		void (*fn)(void *arg) = r->fn;
		void *arg = r->arg;

		sim_trace("takes the IPI from cpu%u%s", from[i],
			  r->ack_first ? ", acknowledges it first" : "");
		sim_counts.ipis++;
		if (r->ack_first) {
			r->pending = false;
			sim_point();
			fn(arg);
		} else {
			fn(arg);
			r->pending = false;
		}
	}
	me->handling--;
	me->irq_off--;
}

/* Waits until this CPU's request to cpu is done, serving its own queue. */
static void wait_request(unsigned cpu)
{
	struct sim_cpu *me = &S.cpu[self];
	const struct sim_request *r = &S.req[self][cpu];

	pthread_mutex_lock(&S.lock);
	while (r->pending) {
		if (me->inbox_len) {
			pthread_mutex_unlock(&S.lock);
			serve_inbox();
			pthread_mutex_lock(&S.lock);
			continue;
		}
		me->waiting_for = r;
		me->last_was_fence = false;
		point_locked();
		me->waiting_for = NULL;
	}
	pthread_mutex_unlock(&S.lock);
}

void tlb_hw_call(const struct cpumask *targets, void (*fn)(void *arg),
		 void *arg, enum tlb_hw_wait wait)
{
	unsigned me = sim_cpu(), cpu;

	sim_point();
	sim_irq_off();
	for_each_cpu (cpu, targets) {
		struct sim_request *r = &S.req[me][cpu];

		if (cpu == me || !cpumask_test(&S.online, cpu))
			continue;
		wait_request(cpu);
		pthread_mutex_lock(&S.lock);
		*r = (struct sim_request){fn, arg, true,
					  wait == TLB_HW_WAIT_ACK_FIRST};
		S.cpu[cpu].inbox[S.cpu[cpu].inbox_len++] = me;
		pthread_mutex_unlock(&S.lock);
		sim_trace("sends an IPI to cpu%u%s", cpu,
			  wait == TLB_HW_NO_WAIT ? " (will not wait)" : "");
	}
	if (cpumask_test(targets, me))
		fn(arg);
	sim_irq_on();
	if (wait == TLB_HW_NO_WAIT)
		return;
	for_each_cpu (cpu, targets) {
		if (cpu != me && cpumask_test(&S.online, cpu))
			wait_request(cpu);
	}
}

unsigned tlb_hw_cpu(void)
{
	return sim_cpu();
}

const struct cpumask *tlb_hw_online(void)
{
	return &S.online;
}

void tlb_hw_fence(void)
{
	struct sim_cpu *me = &S.cpu[sim_cpu()];

	pthread_mutex_lock(&S.lock);
	/* A second fence with nothing in between: a spin loop. */
	me->spinning = me->last_was_fence;
	me->last_was_fence = true;
	point_locked();
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

static void *cpu_thread(void *arg)
{
	uint64_t seen = 0;

	self = (int)(intptr_t)arg;
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
	memset(S.req, 0, sizeof(S.req));
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

/*
 * One turn of a spin loop (cpu_relax in smp/spinlock.h, through
 * tests/host/sim_include/kernel/x86.h): a scheduling point, and, as for
 * two fences in a row, a CPU that spins twice with nothing in between
 * waits for another CPU to take a step.
 */
void sim_spin_point(void)
{
	struct sim_cpu *me = &S.cpu[sim_cpu()];

	pthread_mutex_lock(&S.lock);
	me->spinning = me->last_was_fence;
	me->last_was_fence = true;
	point_locked();
	pthread_mutex_unlock(&S.lock);
}
