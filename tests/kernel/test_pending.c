// SPDX-License-Identifier: MIT
/*
 * Frees and maps while a flush is pending (docs/tlb.md, mm/mm.c "Flushes
 * still pending"): an unmap has cleared a PTE and is still waiting for
 * its flush, and another CPU acts on the address meanwhile. Once that
 * other call returns, no CPU may reach the old frame.
 *
 * Three CPUs, each with one part, every round:
 *
 *	witness (CPU 2, in the address space): reads the page, so that its
 *		TLB holds it; turns interrupts off; says it holds; waits for
 *		the racer to return, at most PENDING_HOLD_NS; notes whether
 *		it has; reads again; turns interrupts back on.
 *	unmapper (CPU 1): once the witness holds, mm_unmap of the page. Its
 *		flush needs the witness, so it stays pending all the hold.
 *	racer (CPU 0): once the witness holds and the PTE is clear (it polls
 *		the tables), shm_revoke of the object the page belongs to
 *		(PND0001), or mm_map_anon at the address and a new pattern
 *		written into the fresh page (PND0002); then it says so.
 *
 * A correct racer flushes the address too (a revoke flushes every page it
 * recorded, a map flushes a range with a flush pending), and that flush
 * needs the witness as well: the racer cannot return before the hold is
 * over, and the witness's second read is never judged. A racer that acts
 * on the cleared PTE alone (tlb_bug=revoke_skips_cleared, map_no_wait)
 * returns at once, and the witness's second read, made after it saw the
 * racer return and still through its old TLB entry, finds the revoked
 * frame (with the poison the racer put into it once freed) or the old
 * page's pattern instead of the new one: caught every round, however fast
 * each CPU runs. As in TLB0012 (tests/kernel/tlb_oracle_threads.c),
 * nothing here sends a call to the witness: a call pending on a CPU that
 * holds interrupts off keeps its sender's only request slot to that CPU
 * busy (smp/call_queue.c), and the racer's flush would wait for the slot
 * instead of for the witness.
 */
#include "tests/ktest.h"
#include "tests/kernel/threads.h"
#include "apic/tsc.h"
#include "cpu/platform.h"
#include "arch/x86.h"
#include "lib/string.h"
#include "arch/layout.h"
#include "mm/mm.h"
#include "mm/pagetable.h"
#include "mm/pmm.h"
#include "mm/tlb.h"
#include "sched/sched.h"
#include "sched/thread.h"
#include "cpu/percpu.h"

/*
 * Rounds: each costs a correct kernel one hold, so the pair of cases takes
 * some 2 s under TCG. A racer that does not wait is caught every round;
 * Bochs runs a few.
 */
#define PENDING_ROUNDS	     8
#define PENDING_ROUNDS_BOCHS 3

/*
 * How long the witness holds interrupts off at most: the window in which
 * an early return is seen. Far below the cross-CPU call watchdog's 10 s;
 * as TLB0012's WITNESS_HOLD_NS.
 */
#define PENDING_HOLD_NS 100000000ULL

#define PENDING_CPUS	 3
#define WITNESS_CPU	 2
#define UNMAPPER_CPU	 1
#define RACER_CPU	 0
#define PENDING_VA	 0x40000000ULL
#define ANCHOR_VA	 (PENDING_VA + PAGE_SIZE) /* keeps the table */
#define POISON_FRAMES	 4
#define OLD_MAGIC	 0x01d0000000000000ULL
#define NEW_MAGIC	 0x0e30000000000000ULL
#define POISON		 0xdeadf4eedeadf4eeULL
#define PENDING_LIMIT_NS 30000000000ULL
#define PENDING_THREADS	 3
#define PENDING_REAP_NS	 20000000000ULL

enum race {
	RACE_REVOKE, /* the racer revokes the object the page belongs to */
	RACE_MAP,    /* the racer maps a fresh page at the address */
};

/* What the witness read after the racer had returned. */
struct pending_failure {
	bool set;
	uint32_t round;
	int err;
	uint64_t value;
	bool setup; /* the first read, before anything changed */
};

/*
 * One run. Round counters hold round + 1 once their thread is done with
 * that round; each is written by one thread (atomic), read by the others.
 */
static struct {
	enum race race;
	struct mm *mm;	 /* the witness's address space */
	struct shm *shm; /* RACE_REVOKE: this round's object */
	uint32_t rounds;
	uint32_t round;	      /* the coordinator's: round + 1 once set up */
	uint32_t holding;     /* the witness's: it read and holds */
	uint32_t released;    /* the witness's: it read again, lets go */
	uint32_t unmapped;    /* the unmapper's: mm_unmap returned */
	uint32_t returned;    /* the racer's: its call returned */
	uint32_t in_window;   /* the racer's: rounds it began in the hold */
	uint32_t judged;      /* the witness's: second reads after returned */
	uint32_t failures;    /* the witness's: of those, the wrong ones */
	struct test_stop run; /* a wait stuck, or the run is over */
	unsigned exited;      /* atomic */
	uint64_t poisoned[POISON_FRAMES]; /* the racer's, per round */
	unsigned npoisoned;
	struct pending_failure failure; /* the witness's, the first one */
} pv;

static uint64_t old_pattern(uint32_t round)
{
	return OLD_MAGIC | round;
}

static uint64_t new_pattern(uint32_t round)
{
	return NEW_MAGIC | round;
}

static bool wait_for(const uint32_t *counter, uint32_t value, const char *what)
{
	return test_wait_count(&pv.run, counter, value, PENDING_LIMIT_NS, what);
}

static void fail(uint32_t round, int err, uint64_t value, bool setup)
{
	pv.failures++;
	if (!pv.failure.set)
		pv.failure = (struct pending_failure){true, round, err, value,
						      setup};
}

/* What the witness may read once the racer has returned. */
static bool settled_read_ok(uint32_t round, int err, uint64_t value)
{
	if (pv.race == RACE_REVOKE)
		return err != 0; /* the object's page is gone */
	return !err && value == new_pattern(round);
}

static void witness_main(void *arg)
{
	(void)arg;
	for (uint32_t round = 0; round < pv.rounds; round++) {
		uint64_t deadline, first, second = 0;
		int first_err, second_err;
		bool returned;

		if (!wait_for(&pv.round, round + 1, "the round's set-up"))
			break;
		cli();
		first_err = test_probe_user_read(PENDING_VA, &first);
		test_count_publish(&pv.holding, round + 1);
		deadline = tsc_read_ordered() + ns_to_tsc(PENDING_HOLD_NS);
		while (test_count_load(&pv.returned) < round + 1 &&
		       tsc_read_ordered() < deadline)
			cpu_relax();
		/* Acquire: the racer's call and writes came before. */
		returned = test_count_load(&pv.returned) >= round + 1;
		second_err = test_probe_user_read(PENDING_VA, &second);
		test_count_publish(&pv.released, round + 1);
		sti();
		if (first_err || first != old_pattern(round))
			fail(round, first_err, first, true);
		if (returned) {
			pv.judged++;
			if (!settled_read_ok(round, second_err, second))
				fail(round, second_err, second, false);
		}
	}
	__atomic_add_fetch(&pv.exited, 1, __ATOMIC_RELEASE);
}

static void unmapper_main(void *arg)
{
	(void)arg;
	for (uint32_t round = 0; round < pv.rounds; round++) {
		if (!wait_for(&pv.holding, round + 1, "the witness to hold"))
			break;
		mm_unmap(pv.mm, PENDING_VA, PAGE_SIZE);
		test_count_publish(&pv.unmapped, round + 1);
	}
	__atomic_add_fetch(&pv.exited, 1, __ATOMIC_RELEASE);
}

/*
 * Frames fresh from the allocator (the revoked object's, freed last, among
 * them) get POISON, so that a read through a stale entry names its cause.
 */
static void poison_frames(void)
{
	for (pv.npoisoned = 0; pv.npoisoned < POISON_FRAMES; pv.npoisoned++) {
		uint64_t frame = pmm_alloc_frame();

		if (!frame)
			break;
		__atomic_store_n((uint64_t *)phys_to_virt(frame), POISON,
				 __ATOMIC_RELAXED);
		pv.poisoned[pv.npoisoned] = frame;
	}
}

/* The racer's call, made while the unmapper's flush is pending. */
static int race(uint32_t round)
{
	uint64_t word = new_pattern(round);
	int err;

	if (pv.race == RACE_REVOKE) {
		err = shm_revoke(pv.shm);
		poison_frames();
		return err;
	}
	err = mm_map_anon(pv.mm, PENDING_VA, PAGE_SIZE,
			  MM_PROT_READ | MM_PROT_WRITE);
	return err ? err : mm_write(pv.mm, PENDING_VA, &word, sizeof(word));
}

static void racer_main(void *arg)
{
	uint64_t deadline;

	(void)arg;
	for (uint32_t round = 0; round < pv.rounds; round++) {
		bool window;

		if (!wait_for(&pv.holding, round + 1, "the witness to hold"))
			break;
		/* The unmapper's edit is made; its flush is still pending. */
		deadline = tsc_read_ordered() + ns_to_tsc(PENDING_LIMIT_NS);
		while (!pt_translate(pv.mm->root, PENDING_VA, NULL, NULL) &&
		       tsc_read_ordered() < deadline && !test_stopped(&pv.run))
			cpu_relax();
		window = test_count_load(&pv.released) < round + 1;
		if (race(round)) {
			test_stop(&pv.run, "the racer's call failed");
			break;
		}
		pv.in_window += window;
		test_count_publish(&pv.returned, round + 1);
	}
	__atomic_add_fetch(&pv.exited, 1, __ATOMIC_RELEASE);
}

/* The page the round starts from, with the old pattern in it. */
static bool set_up(struct ktest_context *t, uint32_t round)
{
	uint64_t word = old_pattern(round);

	if (pv.race == RACE_REVOKE) {
		pv.shm = shm_create(PAGE_SIZE);
		if (!KEXPECT(pv.shm, "no object for round %u", round) ||
		    !KEXPECT(!mm_map_shared(pv.mm, pv.shm, PENDING_VA,
					    MM_PROT_READ),
			     "mapping the object of round %u", round))
			return false;
	} else if (!KEXPECT(!mm_map_anon(pv.mm, PENDING_VA, PAGE_SIZE,
					 MM_PROT_READ | MM_PROT_WRITE),
			    "mapping the page of round %u", round)) {
		return false;
	}
	return KEXPECT(!mm_write(pv.mm, PENDING_VA, &word, sizeof(word)),
		       "writing round %u", round);
}

/* Undoes the round: the racer's page, its object, its poisoned frames. */
static void clean_up(void)
{
	mm_unmap(pv.mm, PENDING_VA, PAGE_SIZE);
	if (pv.shm)
		shm_put(pv.shm);
	pv.shm = NULL;
	for (unsigned i = 0; i < pv.npoisoned; i++)
		pmm_free_frame(pv.poisoned[i]);
	pv.npoisoned = 0;
}

static void report(struct ktest_context *t, const char *racer)
{
	const struct pending_failure *f = &pv.failure;
	const char *what;

	if (pv.run.why)
		KEXPECT(false, "stopped: %s", pv.run.why);
	if (!f->set)
		return;
	if (f->setup) {
		KEXPECT(false, "round %u: the witness's first read: %s %#llx",
			f->round, f->err ? "fault" : "value",
			(unsigned long long)f->value);
		return;
	}
	what = f->err				   ? "a fault"
	       : f->value == POISON		   ? "a freed frame, poisoned"
	       : f->value == old_pattern(f->round) ? "the old frame"
						   : "unexplained";
	KEXPECT(false,
		"round %u: after %s returned, cpu%u read %#llx: %s %#llx "
		"(%s: a translation the unmapper's pending flush still had "
		"to drop)",
		f->round, racer, WITNESS_CPU, PENDING_VA,
		f->err ? "fault" : "value", (unsigned long long)f->value, what);
}

static void run(struct ktest_context *t, enum race kind, const char *racer)
{
	unsigned threads_before = thread_count(), started = 0;
	uint32_t done = 0;

	if (cpu_count < PENDING_CPUS) {
		ktest_skip(t, "needs 3 or more CPUs: a witness, an unmapper "
			      "and a racer (boot with SMP=3 or more)");
		return;
	}
	memset(&pv, 0, sizeof(pv));
	pv.race = kind;
	pv.rounds = platform_get() == PLATFORM_BOCHS ? PENDING_ROUNDS_BOCHS
						     : PENDING_ROUNDS;
	pv.mm = mm_create();
	if (!KEXPECT(pv.mm, "no address space") ||
	    !KEXPECT(!mm_map_anon(pv.mm, ANCHOR_VA, PAGE_SIZE, MM_PROT_READ),
		     "mapping the anchor page"))
		goto out;
	started += test_thread_start(t, witness_main, NULL, WITNESS_CPU,
				     "pnd-witness", pv.mm);
	started += test_thread_start(t, unmapper_main, NULL, UNMAPPER_CPU,
				     "pnd-unmap", NULL);
	started += test_thread_start(t, racer_main, NULL, RACER_CPU, "pnd-race",
				     NULL);
	for (uint32_t round = 0; started == PENDING_THREADS &&
				 round < pv.rounds && !test_stopped(&pv.run);
	     round++) {
		if (!set_up(t, round))
			break;
		test_count_publish(&pv.round, round + 1);
		if (!wait_for(&pv.released, round + 1, "the witness") ||
		    !wait_for(&pv.unmapped, round + 1, "the unmapper") ||
		    !wait_for(&pv.returned, round + 1, "the racer"))
			break;
		clean_up();
		done++;
	}
	/* The threads use pv: every one leaves before the clean-up. */
	test_threads_join(t, &pv.run.stop, &pv.exited, started, threads_before,
			  PENDING_REAP_NS);
	clean_up();
	report(t, racer);
	ktest_note("%s: %u of %u rounds, the racer began %u of them while the "
		   "witness held, returned before its second read in %u, "
		   "wrong reads in %u; unmap_batch=%s lazy=%s pcid=%d",
		   racer, done, pv.rounds, pv.in_window, pv.judged, pv.failures,
		   tlb_unmap_batch_names[tlb_policy.unmap_batch],
		   tlb_lazy_names[tlb_policy.lazy], tlb_policy.pcid);
	KEXPECT(done == pv.rounds || t->failed, "stopped after %u of %u rounds",
		done, pv.rounds);
	/* Else the case saw nothing: the window it exists for never came. */
	KEXPECT(pv.in_window > 0 || t->failed,
		"the racer never began while the witness held");
out:
	if (pv.mm)
		mm_put(pv.mm);
}

KTEST(PND0001, pending, "a revoke while an unmap's flush is pending")
{
	run(t, RACE_REVOKE, "shm_revoke");
}

KTEST(PND0002, pending, "a map while an unmap's flush is pending")
{
	run(t, RACE_MAP, "mm_map_anon");
}
