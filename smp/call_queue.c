// SPDX-License-Identifier: MIT
/*
 * smp_call_function_many: per-CPU request queues and one IPI vector.
 *
 * This file is the protocol alone: every shared access goes through
 * sync/shared.h and everything else through smp/call_hw.h, so the TLB
 * simulator compiles it unchanged (tests/host/tlb_sim_sched.c) and runs it
 * on store-buffered simulated CPUs. smp/call.c is the kernel's glue: the
 * local APIC, the trap vector, the TSC watchdog, the options.
 *
 * Every (sender, target) pair has one request slot, owned by the sender:
 * call_hw_slots(sender)[target]. A request is:
 *  1. sender: wait until its slot for the target is free (pending == 0),
 *     running its own incoming requests meanwhile;
 *  2. sender: write fn and arg, set pending, push the slot on
 *     the target's queue (a lock-free stack: compare-and-swap on the head);
 *  3. sender: if the queue was empty before the push, send the target an
 *     IPI. If it was not empty, an IPI is already on its way or being
 *     handled, and the handler has not yet taken the list (it takes the
 *     whole list at once by swapping the head with NULL), so it will find
 *     this request too;
 *  4. target, in the IPI handler (or while itself sending or waiting):
 *     take the whole list onto its private "taken" list, run the requests
 *     oldest first, and clear each slot's pending flag after its function
 *     returns;
 *  5. sender, when asked to wait: spin until every slot it used is free,
 *     running its own incoming requests meanwhile.
 * The sender runs fn itself, if it is a target, between 3 and 5 with
 * interrupts off, so its own work overlaps the targets'.
 * Every call serves the sender's own queue once before it sends, and steps
 * 1 and 5 serve it while they spin, so two CPUs sending to each other with
 * interrupts off both make progress: neither waits on a request that only
 * an interrupt could run.
 *
 * Calls from a request's function (fn itself sends): the requests taken
 * with fn but not yet run stay on the private list while fn runs, and a
 * serve nested in fn's own sends runs them. They must not be hidden from
 * it: if fn on CPU A waits for its slot to B while B runs a function that
 * waits for its slot to A, and each slot's request sits in the other CPU's
 * taken list behind the running function, neither would ever run (the
 * watchdog would not fire either: both keep looking at their queues).
 * Serving before each send bounds how long a request waits behind a
 * sending function to one of its calls, not the whole function: a
 * function sending to CPUs that all keep up never spins, and a CPU whose
 * requests sat behind it for its whole run (the IPI storm of
 * tests/kernel/test_smp.c, 16 vCPUs on 2 host cores: tens of seconds)
 * tripped the watchdog below.
 *
 * Orderings (what pairs with what):
 *  - The sender's stores of fn, arg, pending and next (and
 *    whatever fn will read through arg) happen before its push: the CAS on
 *    the head is a release. It pairs with the target's swap of the head
 *    (an acquire), after which the target reads them.
 *  - The push completes before the IPI is sent: a locked instruction
 *    leaves the store buffer empty, so the target finds the request even if
 *    the interrupt arrives at once (x2APIC ICR writes are WRMSR, which do
 *    not wait for stores: Intel SDM Vol. 3A, "MSR Access in x2APIC
 *    Mode").
 *  - The target reads fn, arg and next (and rewrites next while
 *    reversing the list) before it clears pending: that store is a release.
 *    It pairs with the sender's acquire load of pending in wait_free, so a
 *    slot is never rewritten while its previous request is still read,
 *    and whatever fn did is visible to the sender when its wait ends.
 *  - checks is a relaxed counter: only its change matters (the watchdog).
 *
 * A target that does not look at its queue for CALL_TIMEOUT_NS while a
 * request for it is pending is dead or missed its IPI: a kernel bug,
 * reported with a panic rather than a silent hang. (A target busy running
 * a long request still looks at its queue, and runs what it holds, each
 * time it sends or waits itself; a request that neither sends nor waits
 * for seconds with interrupts off is itself the bug.)
 *
 * call_bug= breaks the protocol on purpose, to show that the tests catch
 * it (tests/kernel/test_smp.c). Its checks are INJECTED(call, ...): only
 * the injection kernel has them.
 */
#include "smp/call_queue.h"
#include "smp/call_hw.h"
#include "sync/shared.h"

/* Generous: a vCPU of an overcommitted emulator can stall for seconds. */
#define CALL_TIMEOUT_NS 10000000000ULL
#define DROP_EVERY	64 /* call_bug=drop: one request in this many */

struct call_queue {
	/* pushed by senders, taken by the owner */
	SHARED(struct call_request *) head;
	/* times the owner looked at it; others read it */
	SHARED(uint64_t) checks;
	/* The owner's alone, used with interrupts off: */
	struct call_request *taken; /* taken from head, not yet run */
	uint64_t calls_run; /* requests run here (call_bug=drop counts them) */
} __aligned(64);

static struct call_queue queues[MAX_CPUS];

/* Step 2: true if the queue was empty (the target needs an IPI). */
static bool push(struct call_queue *q, struct call_request *r)
{
	struct call_request *old = shared_load(&q->head, __ATOMIC_RELAXED);

	do {
		shared_store(&r->next, old, __ATOMIC_RELAXED);
		/* Release: the request's fields before it is on the queue;
		 * pairs with the acquire swap in serve_queue. */
	} while (!shared_cas(&q->head, &old, r, __ATOMIC_RELEASE,
			     __ATOMIC_RELAXED));
	return old == NULL;
}

/*
 * Step 4: runs every request queued for this CPU (and any left on its taken
 * list by a function that is still running further up this CPU's stack);
 * returns how many ran. Functions run with interrupts off wherever they are
 * served (the handler, or a wait with interrupts on): a call IPI arriving
 * inside fn would run the next request in the middle of this one. (The TLB
 * simulator found that: a lazy CPU's flush_tlb_here, interrupted by a
 * second request that left the mm, went on to index the slots with the
 * kernel ASID.) A serve from inside fn (fn sending) is the exception by
 * design, see the opening comment: it runs the requests after fn's.
 * The first check needs no such care: whenever this CPU can be interrupted,
 * taken is empty (every serve returns with it empty), and an IPI between
 * the check and the swap finds the queue empty, or runs requests pushed
 * after ours, which are other senders'. So a turn that finds nothing
 * queued costs no change of the interrupt flag.
 */
static unsigned serve_queue(void)
{
	struct call_queue *q = &queues[call_hw_cpu()];
	unsigned ran = 0;
	uint64_t flags;

	shared_store(&q->checks, shared_load(&q->checks, __ATOMIC_RELAXED) + 1,
		     __ATOMIC_RELAXED);
	/* Relaxed: only a hint; the swap below is the acquire. */
	if (!q->taken && !shared_load(&q->head, __ATOMIC_RELAXED))
		return 0;
	flags = call_hw_irq_save();
	for (;;) {
		struct call_request *r = q->taken;
		smp_call_fn fn;
		void *arg;

		if (!r) {
			/* Acquire: pairs with the release CAS of each push in
			 * the list. */
			struct call_request *list = shared_exchange(
				&q->head, NULL, __ATOMIC_ACQUIRE);

			if (!list)
				break;
			/* The queue is a stack: reverse it to run the oldest
			 * first. */
			while (list) {
				struct call_request *next = shared_load(
					&list->next, __ATOMIC_RELAXED);

				shared_store(&list->next, r, __ATOMIC_RELAXED);
				r = list;
				list = next;
			}
		}
		fn = shared_load(&r->fn, __ATOMIC_RELAXED);
		arg = shared_load(&r->arg, __ATOMIC_RELAXED);
		/* Off the list before fn runs: a serve nested in fn goes on
		 * with the next request, never this one again. */
		q->taken = shared_load(&r->next, __ATOMIC_RELAXED);
		q->calls_run++;
		if (!INJECTED(call, CALL_HW_BUG_DROP) ||
		    q->calls_run % DROP_EVERY)
			fn(arg);
		/* Release: every read of the slot above, and whatever fn did,
		 * before the sender may reuse it or stop waiting; pairs with
		 * the acquire in wait_free. */
		shared_store(&r->pending, 0, __ATOMIC_RELEASE);
		ran++;
	}
	call_hw_irq_restore(flags);
	return ran;
}

void call_queue_irq(void)
{
	serve_queue();
}

/* Steps 1 and 5: until r is free, serving this CPU's own queue. */
static void wait_free(struct call_request *r, unsigned target)
{
	uint64_t start = call_hw_clock();
	uint64_t checks = shared_load(&queues[target].checks, __ATOMIC_RELAXED);

	/* Acquire: pairs with the target's release of pending. */
	while (shared_load(&r->pending, __ATOMIC_ACQUIRE)) {
		uint64_t now_checks;

		if (serve_queue())
			continue;
		call_hw_relax();
		now_checks =
			shared_load(&queues[target].checks, __ATOMIC_RELAXED);
		if (now_checks != checks) {
			/* The target is alive and serving: restart the clock. */
			checks = now_checks;
			start = call_hw_clock();
		} else if (call_hw_elapsed_ns(start) > CALL_TIMEOUT_NS) {
			call_hw_stuck(target, call_hw_cpu(),
				      CALL_TIMEOUT_NS / 1000000000ULL);
		}
	}
}

void smp_call_function_many(const struct cpumask *mask, smp_call_fn fn,
			    void *arg, enum smp_call_wait wait)
{
	struct call_request *mine;
	struct cpumask targets;
	uint64_t flags;
	unsigned self, cpu;

	/* The slots and the queue served while waiting are this CPU's: the
	 * caller must not move to another CPU until the calls are done. */
	call_hw_preempt_disable();
	self = call_hw_cpu();
	mine = call_hw_slots(self);
	cpumask_and(&targets, mask, call_hw_online());

	/* Interrupts off while queueing: a handler on this CPU must not
	 * reuse a slot between its fill and its push. */
	flags = call_hw_irq_save();
	/* Before sending: requests this CPU holds must not wait for a caller
	 * that sends without ever spinning (see the opening comment). */
	serve_queue();
	for_each_cpu (cpu, &targets) {
		struct call_request *r = &mine[cpu];

		if (cpu == self)
			continue;
		wait_free(r, cpu);
		/* Relaxed: the release CAS of the push orders them. */
		shared_store(&r->fn, fn, __ATOMIC_RELAXED);
		shared_store(&r->arg, arg, __ATOMIC_RELAXED);
		shared_store(&r->pending, 1, __ATOMIC_RELAXED);
		if (push(&queues[cpu], r) &&
		    !INJECTED(call, CALL_HW_BUG_NO_IPI))
			call_hw_send_ipi(cpu);
	}
	if (cpumask_test(&targets, self))
		fn(arg);
	call_hw_irq_restore(flags);

	if (wait != SMP_CALL_NO_WAIT) {
		for_each_cpu (cpu, &targets) {
			if (cpu != self)
				wait_free(&mine[cpu], cpu);
		}
	}
	call_hw_preempt_enable();
}

void call_queue_reset(void)
{
	for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++)
		queues[cpu] = (struct call_queue){0};
}
