// SPDX-License-Identifier: MIT
/*
 * smp_call_function_many: per-CPU request queues and one IPI vector.
 *
 * Every (sender, target) pair has one request slot, owned by the sender:
 * slots[sender][target]. A request is:
 *  1. sender: wait until its slot for the target is free (pending == 0),
 *     running its own incoming requests meanwhile;
 *  2. sender: write fn and arg, set pending, push the slot on the target's
 *     queue (a lock-free stack: compare-and-swap on the head);
 *  3. sender: if the queue was empty before the push, send the target an
 *     IPI. If it was not empty, an IPI is already on its way or being
 *     handled, and the handler has not yet taken the list (it takes the
 *     whole list at once by swapping the head with NULL), so it will find
 *     this request too;
 *  4. target, in the IPI handler (or while itself waiting in step 1 or 5):
 *     take the whole list, run the requests oldest first, and clear each
 *     slot's pending flag after its function returns;
 *  5. sender, when asked to wait: spin until every slot it used is free,
 *     running its own incoming requests meanwhile.
 * Steps 1 and 5 serve the sender's own queue, so two CPUs sending to each
 * other with interrupts off both make progress: neither waits on a request
 * that only an interrupt could run.
 *
 * Orderings: the sender's writes of fn and arg happen before the push
 * (release on the CAS); the target's swap of the head (acquire) pairs with
 * it. The target reads fn and arg before clearing pending (release), and the
 * sender's check of pending (acquire) pairs with that, so a slot is never
 * rewritten while its previous request is still being read.
 *
 * A target that does not look at its queue for CALL_TIMEOUT_NS while a
 * request for it is pending is dead or missed its IPI: a kernel bug,
 * reported with a panic rather than a silent hang. (A target busy running a
 * long request still looks at its queue whenever it waits itself, so only
 * a CPU that truly stopped trips this.) call_bug= breaks the protocol on purpose to show the
 * tests catch it (tests/kernel/test_smp.c, the tcg-*-call-bug configs).
 */
#include "smp/call.h"
#include "apic/lapic.h"
#include "apic/tsc.h"
#include "kernel/options.h"
#include "kernel/panic.h"
#include "kernel/trap.h"
#include "kernel/x86.h"
#include "mm/layout.h"
#include "mm/pmm.h"
#include "sched/sched.h"
#include "smp/percpu.h"

/* Generous: a vCPU of an overcommitted emulator can stall for seconds. */
#define CALL_TIMEOUT_NS 10000000000ULL
#define DROP_EVERY	64 /* call_bug=drop: one request in this many */
#define CACHE_LINE	64 /* bytes: requests and queues each have their own */

struct call_request {
	smp_call_fn fn;
	void *arg;
	uint32_t pending; /* set by the sender, cleared by the target */
	bool ack_first;	  /* SMP_CALL_WAIT_ACK_FIRST: clear it before fn */
	struct call_request *next; /* in the target's queue */
} __aligned(CACHE_LINE);

_Static_assert(sizeof(struct call_request) == CACHE_LINE,
	       "a request fills one cache line, which no other request shares");

/* One sender's requests, one per target, in whole pages. */
#define SLOT_PAGES                                                     \
	(ALIGN_UP(MAX_CPUS * sizeof(struct call_request), PAGE_SIZE) / \
	 PAGE_SIZE)

struct call_queue {
	struct call_request *head; /* pushed by senders, taken by the owner */
	uint64_t checks; /* times the owner looked at it; others read it */
	struct smp_call_stats stats;
} __aligned(CACHE_LINE);

static struct call_queue queues[MAX_CPUS];
/* slots[sender]: MAX_CPUS requests, one per target (smp_call_init_cpu). */
static struct call_request *slots[MAX_CPUS];

static bool push(struct call_queue *q, struct call_request *r)
{
	struct call_request *old = __atomic_load_n(&q->head, __ATOMIC_RELAXED);

	do {
		r->next = old;
	} while (!__atomic_compare_exchange_n(
		&q->head, &old, r, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	return old == NULL;
}

/* Runs every request queued for this CPU; returns how many ran. */
static unsigned serve_queue(void)
{
	struct call_queue *q = &queues[this_cpu_index()];
	struct call_request *list, *reversed = NULL;
	unsigned ran = 0;

	__atomic_store_n(&q->checks, q->checks + 1, __ATOMIC_RELAXED);
	list = __atomic_exchange_n(&q->head, NULL, __ATOMIC_ACQUIRE);
	/* The queue is a stack: reverse it to run the oldest first. */
	while (list) {
		struct call_request *next = list->next;

		list->next = reversed;
		reversed = list;
		list = next;
	}
	while (reversed) {
		struct call_request *r = reversed;
		smp_call_fn fn = r->fn;
		void *arg = r->arg;

		bool ack_first = r->ack_first;

		reversed = r->next;
		if (ack_first)
			__atomic_store_n(&r->pending, 0, __ATOMIC_RELEASE);
		if (options.call_bug != CALL_BUG_DROP ||
		    (q->stats.calls_run + ran + 1) % DROP_EVERY)
			fn(arg);
		if (!ack_first)
			__atomic_store_n(&r->pending, 0, __ATOMIC_RELEASE);
		ran++;
	}
	q->stats.calls_run += ran;
	return ran;
}

static void call_function_interrupt(struct trap_frame *frame)
{
	(void)frame;
	queues[this_cpu_index()].stats.ipis_received++;
	serve_queue();
}

static void wait_free(struct call_request *r, unsigned target)
{
	uint64_t start = tsc_read_ordered();
	uint64_t checks =
		__atomic_load_n(&queues[target].checks, __ATOMIC_RELAXED);

	while (__atomic_load_n(&r->pending, __ATOMIC_ACQUIRE)) {
		uint64_t now_checks;

		if (serve_queue())
			continue;
		cpu_relax();
		now_checks = __atomic_load_n(&queues[target].checks,
					     __ATOMIC_RELAXED);
		if (now_checks != checks) {
			/* The target is alive and serving: restart the clock. */
			checks = now_checks;
			start = tsc_read_ordered();
		} else if (tsc_to_ns(tsc_read_ordered() - start) >
			   CALL_TIMEOUT_NS) {
			panic("smp: CPU %u has not looked at a call from "
			      "CPU %u for %llu s: it is dead or an IPI was "
			      "lost",
			      target, this_cpu_index(),
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
	preempt_disable();
	self = this_cpu_index();
	mine = slots[self];
	cpumask_and(&targets, mask, &cpu_online_mask);

	/* Interrupts off while queueing: a handler on this CPU must not
	 * reuse a slot between its fill and its push. */
	flags = irq_save();
	for_each_cpu (cpu, &targets) {
		struct call_request *r = &mine[cpu];

		if (cpu == self)
			continue;
		wait_free(r, cpu);
		r->fn = fn;
		r->arg = arg;
		r->ack_first = wait == SMP_CALL_WAIT_ACK_FIRST;
		r->pending = 1;
		if (push(&queues[cpu], r) &&
		    options.call_bug != CALL_BUG_NO_IPI) {
			queues[self].stats.ipis_sent++;
			lapic_send_fixed(cpus[cpu]->apic_id,
					 VECTOR_CALL_FUNCTION);
		}
	}
	if (cpumask_test(&targets, self))
		fn(arg);
	irq_restore(flags);

	if (wait != SMP_CALL_NO_WAIT) {
		for_each_cpu (cpu, &targets) {
			if (cpu != self)
				wait_free(&mine[cpu], cpu);
		}
	}
	preempt_enable();
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

void smp_call_stats(unsigned cpu, struct smp_call_stats *out)
{
	*out = queues[cpu].stats;
}
