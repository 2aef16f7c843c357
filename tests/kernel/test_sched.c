// SPDX-License-Identifier: MIT
/* Threads and the scheduler: running, preemption, sleep, wait queues, CPUs. */
#include "tests/ktest.h"
#include "apic/tsc.h"
#include "lib/string.h"
#include "arch/x86.h"
#include "mm/heap.h"
#include "mm/kstack.h"
#include "mm/pmm.h"
#include "sched/sched.h"
#include "sched/thread.h"
#include "sched/wait.h"
#include "cpu/percpu.h"

#define WAIT_LIMIT_NS 20000000000ULL /* 20 s: emulators are slow */

/* Waits (yielding) until *counter reaches want; false on timeout. */
static bool wait_for_count(const uint32_t *counter, uint32_t want)
{
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(WAIT_LIMIT_NS);

	while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < want) {
		if (tsc_read_ordered() > deadline)
			return false;
		sleep_ns(1000000);
	}
	return true;
}

static uint32_t finished;

static void count_and_exit(void *arg)
{
	(void)arg;
	__atomic_fetch_add(&finished, 1, __ATOMIC_RELEASE);
}

/* Starts n threads that exit at once; waits until every one is reaped. */
static bool run_exiting_threads(struct ktest_context *t, uint32_t n)
{
	unsigned before = thread_count();
	uint64_t deadline;

	finished = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct thread *th =
			thread_create(count_and_exit, NULL, "exit", NULL);

		if (!KEXPECT(th, "thread_create failed"))
			return false;
		sched_start_thread(th);
	}
	if (!KEXPECT(wait_for_count(&finished, n), "%u of %u finished",
		     finished, n))
		return false;
	/* A dead thread is reaped once its CPU has switched away from it. */
	deadline = tsc_read_ordered() + ns_to_tsc(WAIT_LIMIT_NS);
	while (thread_count() > before && tsc_read_ordered() < deadline) {
		sleep_ns(1000000);
		thread_reap();
	}
	return KEXPECT(thread_count() == before, "%u threads not reaped",
		       thread_count() - before);
}

KTEST(SCHED0001, sched, "threads run, exit, and their memory comes back")
{
	enum { THREADS = 16 };
	uint64_t stacks_before = kstack_in_use();
	struct heap_stats before, after;

	heap_stats(&before);
	if (!run_exiting_threads(t, THREADS))
		return;
	heap_stats(&after);
	/*
	 * Each thread's stack, FPU area and structure are freed. (The frame
	 * allocator's count would not say so exactly: the heap keeps its
	 * slab pages, and the stack area keeps page tables for reuse.)
	 */
	KEXPECT(kstack_in_use() == stacks_before, "%llu stacks not freed",
		(unsigned long long)(kstack_in_use() - stacks_before));
	KEXPECT(after.live_allocations == before.live_allocations,
		"%lld heap objects not freed",
		(long long)(after.live_allocations - before.live_allocations));
}

struct spinner {
	uint64_t progress;
	uint32_t stop;
	uint32_t done;
};

static void spin_until_told(void *arg)
{
	struct spinner *s = arg;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
		__atomic_fetch_add(&s->progress, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
}

KTEST(SCHED0002, sched, "two CPU-bound threads on one CPU both progress")
{
	static struct spinner a, b;
	struct cpumask last;
	unsigned cpu = cpu_count - 1;
	struct thread *ta, *tb;
	uint64_t pa, pb;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	cpumask_clear_all(&last);
	cpumask_set(&last, cpu);
	ta = thread_create(spin_until_told, &a, "spin-a", &last);
	tb = thread_create(spin_until_told, &b, "spin-b", &last);
	if (!KEXPECT(ta && tb, "thread_create failed"))
		return;
	sched_start_thread(ta);
	sched_start_thread(tb);
	/* Several time slices: only preemption lets both run on one CPU. */
	sleep_ns(300000000);
	pa = __atomic_load_n(&a.progress, __ATOMIC_RELAXED);
	pb = __atomic_load_n(&b.progress, __ATOMIC_RELAXED);
	__atomic_store_n(&a.stop, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&b.stop, 1, __ATOMIC_RELEASE);
	if (!KEXPECT(wait_for_count(&a.done, 1) && wait_for_count(&b.done, 1),
		     "spinners did not stop"))
		sched_dump();
	ktest_note("on CPU %u: %llu and %llu iterations", cpu,
		   (unsigned long long)pa, (unsigned long long)pb);
	KEXPECT(pa > 0 && pb > 0, "a thread starved: %llu / %llu",
		(unsigned long long)pa, (unsigned long long)pb);
	KEXPECT(ta->switches_in > 1 || tb->switches_in > 1 || cpu == 0,
		"no preemption seen");
}

KTEST(SCHED0003, sched, "sleep_ns lasts at least its duration")
{
	static const uint64_t durations[] = {1000, 1000000, 25000000};

	for (size_t i = 0; i < ARRAY_SIZE(durations); i++) {
		uint64_t start = tsc_read_ordered(), slept;

		sleep_ns(durations[i]);
		slept = tsc_to_ns(tsc_read_ordered() - start);
		KEXPECT(slept >= durations[i], "asked %llu ns, slept %llu ns",
			(unsigned long long)durations[i],
			(unsigned long long)slept);
	}
}

static struct wait_queue queue = WAIT_QUEUE_INIT;
static uint32_t tokens, woken;

/* Sleeps until a token is available, takes it. */
static void consumer(void *arg)
{
	uint64_t flags = spin_lock_irqsave(&queue.lock);

	(void)arg;
	while (!tokens)
		wait_queue_sleep_locked(&queue);
	tokens--;
	spin_unlock_irqrestore(&queue.lock, flags);
	__atomic_fetch_add(&woken, 1, __ATOMIC_RELEASE);
}

KTEST(SCHED0004, sched, "wait queues: wake_one wakes one, wake_all the rest")
{
	enum { CONSUMERS = 6 };
	uint64_t flags;

	tokens = woken = 0;
	for (int i = 0; i < CONSUMERS; i++) {
		struct thread *th =
			thread_create(consumer, NULL, "consumer", NULL);

		if (!KEXPECT(th, "thread_create failed"))
			return;
		sched_start_thread(th);
	}
	sleep_ns(50000000); /* all of them asleep by now */
	KEXPECT(woken == 0, "%u woke without a token", woken);

	flags = spin_lock_irqsave(&queue.lock);
	tokens = 1;
	spin_unlock_irqrestore(&queue.lock, flags);
	wake_one(&queue);
	KEXPECT(wait_for_count(&woken, 1), "no consumer woke");

	flags = spin_lock_irqsave(&queue.lock);
	tokens = CONSUMERS - 1;
	spin_unlock_irqrestore(&queue.lock, flags);
	wake_all(&queue);
	KEXPECT(wait_for_count(&woken, CONSUMERS), "%u of %d consumers done",
		woken, CONSUMERS);
}

struct tour {
	uint32_t visited[MAX_CPUS];
	uint32_t wrong;
	uint32_t done;
};

/* Moves itself to every CPU in turn and checks where it runs. */
static void tour_cpus(void *arg)
{
	struct tour *tour = arg;

	for (unsigned cpu = 0; cpu < cpu_count; cpu++) {
		struct cpumask one;

		cpumask_clear_all(&one);
		cpumask_set(&one, cpu);
		sched_set_affinity(&one);
		for (int i = 0; i < 3; i++) {
			if (this_cpu_index() != cpu)
				__atomic_fetch_add(&tour->wrong, 1,
						   __ATOMIC_RELAXED);
			yield();
		}
		tour->visited[this_cpu_index()]++;
	}
	__atomic_store_n(&tour->done, 1, __ATOMIC_RELEASE);
}

KTEST(SCHED0005, sched, "affinity: a thread runs only where it may, and moves")
{
	static struct tour tour;
	struct thread *th;

	memset(&tour, 0, sizeof(tour));
	th = thread_create(tour_cpus, &tour, "tour", NULL);
	if (!KEXPECT(th, "thread_create failed"))
		return;
	sched_start_thread(th);
	if (!KEXPECT(wait_for_count(&tour.done, 1), "the tour did not end"))
		return;
	KEXPECT(tour.wrong == 0, "ran %u times on a CPU outside its mask",
		tour.wrong);
	for (unsigned cpu = 0; cpu < cpu_count; cpu++)
		KEXPECT(tour.visited[cpu] == 1, "visited CPU %u %u times", cpu,
			tour.visited[cpu]);
}

static uint32_t ran_on[MAX_CPUS];
static uint32_t balance_stop, balance_done;

static void spin_and_record(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&balance_stop, __ATOMIC_ACQUIRE))
		__atomic_store_n(&ran_on[this_cpu_index()], 1,
				 __ATOMIC_RELAXED);
	__atomic_fetch_add(&balance_done, 1, __ATOMIC_RELEASE);
}

KTEST(SCHED0006, sched, "load balancing spreads threads queued on one CPU")
{
	unsigned threads = 2 * cpu_count, used = 0;
	struct cpumask here;

	if (cpu_count < 2) {
		ktest_skip(t, "needs 2 or more CPUs");
		return;
	}
	memset(ran_on, 0, sizeof(ran_on));
	balance_stop = balance_done = 0;
	/* Start them all on this CPU's queue; any CPU may run them. */
	cpumask_clear_all(&here);
	cpumask_set(&here, this_cpu_index());
	for (unsigned i = 0; i < threads; i++) {
		struct thread *th =
			thread_create(spin_and_record, NULL, "balance", NULL);

		if (!KEXPECT(th, "thread_create failed"))
			return;
		th->cpu = this_cpu_index();
		sched_start_thread(th);
	}
	sleep_ns(500000000);
	__atomic_store_n(&balance_stop, 1, __ATOMIC_RELEASE);
	KEXPECT(wait_for_count(&balance_done, threads), "spinners stuck");
	for (unsigned cpu = 0; cpu < cpu_count; cpu++)
		used += ran_on[cpu];
	ktest_note("%u threads ran on %u of %u CPUs", threads, used, cpu_count);
	KEXPECT(used >= 2, "all threads stayed on one CPU");
}

struct fpu_check {
	uint64_t pattern;
	uint32_t mismatches;
	uint32_t done;
};

/* Keeps a value in XMM0 across many switches; checks it survives. */
static void hold_xmm0(void *arg)
{
	struct fpu_check *c = arg;

	for (int i = 0; i < 200; i++) {
		uint64_t back;

		__asm__ volatile("movq %0, %%xmm0" : : "r"(c->pattern));
		yield();
		__asm__ volatile("movq %%xmm0, %0" : "=r"(back));
		if (back != c->pattern)
			c->mismatches++;
	}
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
}

KTEST(SCHED0007, sched, "each thread keeps its own FPU/SSE registers")
{
	static struct fpu_check a = {0x1111111111111111ULL, 0, 0};
	static struct fpu_check b = {0x2222222222222222ULL, 0, 0};
	struct cpumask one;
	struct thread *ta, *tb;

	a.mismatches = b.mismatches = a.done = b.done = 0;
	cpumask_clear_all(&one);
	cpumask_set(&one, cpu_count - 1);
	ta = thread_create(hold_xmm0, &a, "xmm-a", &one);
	tb = thread_create(hold_xmm0, &b, "xmm-b", &one);
	if (!KEXPECT(ta && tb, "thread_create failed"))
		return;
	sched_start_thread(ta);
	sched_start_thread(tb);
	KEXPECT(wait_for_count(&a.done, 1) && wait_for_count(&b.done, 1),
		"threads did not finish");
	KEXPECT(a.mismatches == 0 && b.mismatches == 0,
		"XMM0 changed under a thread: %u and %u times", a.mismatches,
		b.mismatches);
}

/* Polls (sleeping) until th is blocked; false on timeout. */
static bool wait_blocked(const struct thread *th)
{
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(WAIT_LIMIT_NS);

	while (__atomic_load_n(&th->state, __ATOMIC_ACQUIRE) !=
	       THREAD_BLOCKED) {
		if (tsc_read_ordered() > deadline)
			return false;
		sleep_ns(1000000);
	}
	return true;
}

struct early_wake {
	struct thread *volatile target; /* for the waker, or NULL */
	uint32_t runs;			/* times a target thread started */
	uint32_t woken;			/* targets the waker is done with */
	uint32_t release;		/* targets 0..release-1 may exit */
	uint32_t stop;
	uint32_t waker_done;
};

struct early_target {
	struct early_wake *w;
	uint32_t index;
};

/* A target: counts its start, waits until it may exit. */
static void count_run_then_wait(void *arg)
{
	struct early_target *me = arg;

	__atomic_fetch_add(&me->w->runs, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&me->w->release, __ATOMIC_ACQUIRE) <= me->index)
		yield();
}

/* On another CPU: sched_wake each target as soon as it is published. */
static void early_waker(void *arg)
{
	struct early_wake *w = arg;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		struct thread *th =
			__atomic_load_n(&w->target, __ATOMIC_ACQUIRE);

		if (!th) {
			__builtin_ia32_pause();
			continue;
		}
		sched_wake(th);
		__atomic_store_n(&w->target, NULL, __ATOMIC_RELEASE);
		__atomic_fetch_add(&w->woken, 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&w->waker_done, 1, __ATOMIC_RELEASE);
}

/*
 * task_exit wakes every thread on its task's list, which can hold one that
 * start_thread (proc/task.c) listed but has not started yet. Such a wake
 * must not queue it: started too, it would be queued twice and run twice.
 * First the plain case (wake, then start, on this CPU), then the race,
 * many times: a thread on another CPU wakes each new thread as it is being
 * started.
 */
KTEST(SCHED0008, sched, "a thread woken before it is started runs once")
{
	enum { ROUNDS = 300 };
	static struct early_wake first, w;
	static struct early_target first_target, targets[ROUNDS];
	struct cpumask other;
	struct thread *th;
	uint32_t round;

	memset(&first, 0, sizeof(first));
	first_target = (struct early_target){&first, 0};
	th = thread_create(count_run_then_wait, &first_target, "early", NULL);
	if (!KEXPECT(th, "thread_create failed"))
		return;
	sched_wake(th);
	sched_start_thread(th);
	sleep_ns(20000000);
	KEXPECT(first.runs == 1, "started %u times, not once", first.runs);
	__atomic_store_n(&first.release, 1, __ATOMIC_RELEASE);
	if (cpu_count < 2) {
		ktest_skip(t, "the race needs 2 or more CPUs");
		return;
	}
	memset(&w, 0, sizeof(w));
	cpumask_clear_all(&other);
	cpumask_set(&other, (this_cpu_index() + 1) % cpu_count);
	th = thread_create(early_waker, &w, "waker", &other);
	if (!KEXPECT(th, "thread_create failed"))
		return;
	sched_start_thread(th);
	for (round = 0; round < ROUNDS; round++) {
		targets[round] = (struct early_target){&w, round};
		th = thread_create(count_run_then_wait, &targets[round],
				   "early", NULL);
		if (!KEXPECT(th, "thread_create failed"))
			break;
		__atomic_store_n(&w.target, th, __ATOMIC_RELEASE);
		/* Vary which comes first, the wake or the start. */
		for (uint32_t spin = round % 64; spin; spin--)
			__builtin_ia32_pause();
		sched_start_thread(th);
		/* th may exit (and be freed) only once the waker is done. */
		if (!KEXPECT(wait_for_count(&w.woken, round + 1),
			     "the waker is stuck"))
			break;
		__atomic_store_n(&w.release, round + 1, __ATOMIC_RELEASE);
	}
	KEXPECT(wait_for_count(&w.runs, round), "%u of %u threads started",
		w.runs, round);
	sleep_ns(20000000);
	KEXPECT(w.runs == round, "%u starts for %u threads", w.runs, round);
	__atomic_store_n(&w.release, ~0u, __ATOMIC_RELEASE);
	__atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
	KEXPECT(wait_for_count(&w.waker_done, 1), "the waker did not end");
}

static struct wait_queue stray_queue = WAIT_QUEUE_INIT;
static uint32_t stray_go, stray_done;

static void stray_sleeper(void *arg)
{
	uint64_t flags = spin_lock_irqsave(&stray_queue.lock);

	(void)arg;
	while (!stray_go)
		wait_queue_sleep_locked(&stray_queue);
	spin_unlock_irqrestore(&stray_queue.lock, flags);
	__atomic_fetch_add(&stray_done, 1, __ATOMIC_RELEASE);
}

/*
 * A sleeper woken by sched_wake, not through its wait queue (as task_exit
 * wakes a killed task's threads), while others sleep behind it: the queue
 * must stay whole, the sleeper sleeps again (once on the queue), and one
 * wake_all wakes all of them.
 */
KTEST(SCHED0009, sched, "a wake from outside a wait queue leaves it intact")
{
	enum { SLEEPERS = 4, STRAY = 1 };
	struct thread *th[SLEEPERS];
	uint64_t flags, switches;
	unsigned n;

	stray_go = stray_done = 0;
	for (int i = 0; i < SLEEPERS; i++) {
		th[i] = thread_create(stray_sleeper, NULL, "stray", NULL);
		if (!KEXPECT(th[i], "thread_create failed"))
			return;
		sched_start_thread(th[i]);
		/* In this order on the queue. */
		if (!KEXPECT(wait_blocked(th[i]), "sleeper %d never slept", i))
			return;
	}
	switches = th[STRAY]->switches_in;
	sched_wake(th[STRAY]);
	for (int i = 0; i < 1000 && th[STRAY]->switches_in == switches; i++)
		sleep_ns(1000000);
	KEXPECT(th[STRAY]->switches_in != switches, "the woken one never ran");
	KEXPECT(wait_blocked(th[STRAY]), "the woken one did not sleep again");
	KEXPECT(stray_done == 0, "%u left without stray_go", stray_done);
	flags = spin_lock_irqsave(&stray_queue.lock);
	stray_go = 1;
	spin_unlock_irqrestore(&stray_queue.lock, flags);
	n = wake_all(&stray_queue);
	KEXPECT(n == SLEEPERS, "wake_all found %u of %d sleepers", n, SLEEPERS);
	KEXPECT(wait_for_count(&stray_done, SLEEPERS), "%u of %d sleepers woke",
		stray_done, SLEEPERS);
}
