// SPDX-License-Identifier: MIT
/*
 * A shared mapping that fails part-way, revoked meanwhile (mm/mm.c,
 * mm_map_shared; docs/tlb.md, "Frees and maps while a flush is pending").
 *
 * mm_map_shared records the mapping in the object, maps its pages one by
 * one, and on an allocation failure undoes what it mapped. A revoke finds
 * the spaces to unmap through those records. If the record went before the
 * pages it names were unmapped, a revoke coming in between would see no
 * mapping, free the object's frames at once, and leave present PTEs that
 * map them: whatever reuses the frames is open to the task.
 *
 * The failure is real: the case takes every free frame first (the hoard),
 * so the page table the object's third page needs cannot be allocated.
 * The object spans a page-table boundary: its first two pages go into a
 * table an anchor page keeps, the other two need a new one.
 *
 * Three CPUs, each with one part, every round:
 *
 *	mapper (CPU 0): mm_map_shared of the round's object; it fails with
 *		-ENOMEM after two pages and goes back for mm->lock to undo
 *		them.
 *	holder (CPU 1): holds mm->lock before the mapper starts, and each
 *		time the mapper queues, takes the next ticket and lets go:
 *		it comes right after each of the mapper's holds, until the
 *		one that mapped the two pages (the map first checks its
 *		range in a hold of its own). Holding the lock again, with
 *		the two pages still mapped, it waits for the mapper to
 *		queue behind it (the undo), starts the revoke, and waits
 *		until the revoker either queues too or returns.
 *	revoker (CPU 2): shm_revoke of the object.
 *
 * A correct mapper still has its record while it waits for the lock, so
 * the revoke must wait for the lock too. A revoker that returns while the
 * holder still sees the pages mapped has freed frames that present PTEs
 * map: caught in every round.
 */
#include "tests/ktest.h"
#include "tests/kernel/threads.h"
#include "apic/tsc.h"
#include "cpu/platform.h"
#include "arch/x86.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "arch/layout.h"
#include "mm/mm.h"
#include "mm/pagetable.h"
#include "mm/pmm.h"
#include "sched/sched.h"
#include "sched/thread.h"
#include "cpu/percpu.h"

/* Each round costs a correct kernel little; the hoard, taken once, more. */
#define FAIL_ROUNDS	    8
#define FAIL_ROUNDS_BOCHS   3
#define FAIL_CPUS	    3
#define MAPPER_CPU	    0
#define HOLDER_CPU	    1
#define REVOKER_CPU	    2
#define FAIL_TABLE_VA	    0x40000000ULL /* the anchor keeps this table */
#define FAIL_OBJECT_PAGES   4
#define FAIL_PAGES_MAPPED   2 /* in the anchor's table, before the failure */
#define FAIL_VA		    (FAIL_TABLE_VA + (2ULL << 20) - FAIL_PAGES_MAPPED * PAGE_SIZE)
#define FAIL_SPARE_FRAMES   16 /* given back for each round's object */
#define FAIL_LIMIT_NS	    10000000000ULL
#define FAIL_QUEUE_LIMIT_NS 2000000000ULL
#define FAIL_THREADS	    3
#define FAIL_REAP_NS	    20000000000ULL
#define FAIL_HOLDS_MAX	    4 /* mapper holds before the one that maps */

/*
 * One run. Round counters hold round + 1 once their thread is done with
 * that round; each is written by one thread, read by the others (atomic).
 */
static struct {
	uint32_t rounds;
	struct mm *mm;
	struct shm *shm;       /* this round's object */
	uint64_t hoard;	       /* the frames taken: a chain through word 0 */
	uint32_t round;	       /* the coordinator's: round + 1 once set up */
	uint32_t holder_ready; /* the holder's: it holds mm->lock */
	uint32_t mapper_done;  /* the mapper's: mm_map_shared returned */
	uint32_t revoke_go;    /* the holder's: revoke now */
	uint32_t holder_done;  /* the holder's: it let go of the lock */
	uint32_t revoked;      /* the revoker's: shm_revoke returned */
	int map_err;	       /* the mapper's, this round */
	int revoke_err;	       /* the revoker's, this round */
	uint32_t in_window;    /* the holder's: rounds it held in between */
	uint32_t caught;       /* the holder's: revokes that did not wait */
	uint32_t caught_round;
	struct test_stop run; /* a wait stuck, or the run is over */
	unsigned exited;      /* atomic */
} fv;

static bool wait_for(const uint32_t *counter, uint32_t value, const char *what)
{
	return test_wait_count(&fv.run, counter, value, FAIL_LIMIT_NS, what);
}

/* Takes every free frame: the next allocation fails. */
static void hoard_all(void)
{
	uint64_t frame;

	while ((frame = pmm_alloc_frame())) {
		*(uint64_t *)phys_to_virt(frame) = fv.hoard;
		fv.hoard = frame;
	}
}

/* Gives back up to count frames of the hoard (all: UINT64_MAX). */
static void hoard_release(uint64_t count)
{
	while (fv.hoard && count--) {
		uint64_t frame = fv.hoard;

		fv.hoard = *(uint64_t *)phys_to_virt(frame);
		pmm_free_frame(frame);
	}
}

/* Until cond() or the queue wait's limit; interrupts are off. */
static bool spin_until(bool (*cond)(uint32_t), uint32_t round)
{
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(FAIL_QUEUE_LIMIT_NS);

	while (!cond(round)) {
		if (tsc_read_ordered() > deadline)
			return false;
		cpu_relax();
	}
	return true;
}

static bool mapper_queued(uint32_t round)
{
	(void)round;
	return test_lock_waiters(&fv.mm->lock) >= 1;
}

static bool revoker_queued_or_done(uint32_t round)
{
	return test_lock_waiters(&fv.mm->lock) >= 2 ||
	       test_count_load(&fv.revoked) >= round + 1;
}

static bool mapped(uint64_t va)
{
	return !pt_translate(fv.mm->root, va, NULL, NULL);
}

static void mapper_main(void *arg)
{
	(void)arg;
	for (uint32_t round = 0; round < fv.rounds; round++) {
		if (!wait_for(&fv.holder_ready, round + 1, "the holder"))
			break;
		fv.map_err = mm_map_shared(fv.mm, fv.shm, FAIL_VA,
					   MM_PROT_READ | MM_PROT_WRITE);
		test_count_publish(&fv.mapper_done, round + 1);
	}
	__atomic_add_fetch(&fv.exited, 1, __ATOMIC_RELEASE);
}

/*
 * In between: the mapper's first hold is over, its pages are still
 * mapped, and it is back in the queue for the undo. The revoke starts
 * now; with the lock still held, the pages stay mapped whatever it does.
 */
static void hold_in_between(uint32_t round)
{
	fv.in_window++;
	if (!spin_until(mapper_queued, round)) {
		test_stop(&fv.run,
			  "the mapper never came back to undo its pages");
		return;
	}
	test_count_publish(&fv.revoke_go, round + 1);
	if (!spin_until(revoker_queued_or_done, round)) {
		test_stop(
			&fv.run,
			"the revoke neither returned nor waited for the lock");
		return;
	}
	if (test_count_load(&fv.revoked) >= round + 1 && mapped(FAIL_VA)) {
		if (!fv.caught++)
			fv.caught_round = round;
	}
}

/*
 * Holding mm->lock, once the mapper queues for it, takes the next ticket
 * before letting go: the mapper's hold comes, then this CPU's again.
 */
static bool hold_after_mapper(uint32_t round)
{
	uint32_t ticket;

	if (!spin_until(mapper_queued, round)) {
		test_stop(&fv.run, "the mapper never queued for the lock");
		return false;
	}
	ticket = __atomic_fetch_add(&fv.mm->lock.next_ticket, 1,
				    __ATOMIC_RELAXED);
	spin_unlock(&fv.mm->lock);
	spin_wait_turn(&fv.mm->lock, ticket);
	return true;
}

static void holder_main(void *arg)
{
	(void)arg;
	for (uint32_t round = 0; round < fv.rounds; round++) {
		uint64_t flags;

		if (!wait_for(&fv.round, round + 1, "the round's set-up"))
			break;
		flags = spin_lock_irqsave(&fv.mm->lock);
		test_count_publish(&fv.holder_ready, round + 1);
		/* After each of the mapper's holds, up to the one that maps. */
		for (unsigned hold = 0; hold < FAIL_HOLDS_MAX; hold++) {
			if (!hold_after_mapper(round) || mapped(FAIL_VA) ||
			    test_count_load(&fv.mapper_done) >= round + 1)
				break;
		}
		if (!test_stopped(&fv.run) && mapped(FAIL_VA) &&
		    test_count_load(&fv.mapper_done) < round + 1)
			hold_in_between(round);
		test_count_publish(&fv.revoke_go, round + 1);
		spin_unlock_irqrestore(&fv.mm->lock, flags);
		test_count_publish(&fv.holder_done, round + 1);
		if (test_stopped(&fv.run))
			break;
	}
	__atomic_add_fetch(&fv.exited, 1, __ATOMIC_RELEASE);
}

static void revoker_main(void *arg)
{
	(void)arg;
	for (uint32_t round = 0; round < fv.rounds; round++) {
		if (!wait_for(&fv.revoke_go, round + 1, "the holder"))
			break;
		fv.revoke_err = shm_revoke(fv.shm);
		test_count_publish(&fv.revoked, round + 1);
	}
	__atomic_add_fetch(&fv.exited, 1, __ATOMIC_RELEASE);
}

/*
 * The round's object, made from frames given back for it: above the
 * reserve, which user memory (the object's frames) may not take.
 */
static bool set_up(struct ktest_context *t, uint32_t round)
{
	hoard_release(pmm_reserve_count() + FAIL_SPARE_FRAMES);
	fv.shm = shm_create(FAIL_OBJECT_PAGES * PAGE_SIZE);
	hoard_all();
	return KEXPECT(fv.shm, "no object for round %u", round);
}

/* What the failed map and the revoke must leave, whatever their order. */
static void check_round(struct ktest_context *t, uint32_t round)
{
	KEXPECT(fv.map_err == -ENOMEM,
		"round %u: mapping the object with no frame left for its "
		"table returned %d, not -ENOMEM",
		round, fv.map_err);
	KEXPECT(!fv.revoke_err, "round %u: shm_revoke returned %d", round,
		fv.revoke_err);
	for (unsigned p = 0; p < FAIL_OBJECT_PAGES; p++) {
		KEXPECT(!mapped(FAIL_VA + p * PAGE_SIZE),
			"round %u: page %u of the failed mapping is mapped",
			round, p);
	}
	KEXPECT(fv.mm->pages == 1 && fv.mm->shared_count == 0,
		"round %u: the space counts %llu pages and %u objects, not "
		"the anchor alone",
		round, (unsigned long long)fv.mm->pages, fv.mm->shared_count);
}

static void report(struct ktest_context *t, uint32_t done)
{
	if (fv.run.why)
		KEXPECT(false, "stopped: %s", fv.run.why);
	KEXPECT(!fv.caught,
		"round %u (and %u more): shm_revoke returned while the "
		"failed mapping's PTEs still mapped the object's frames: a "
		"revoke that missed the mapping and freed them",
		fv.caught_round, fv.caught - 1);
	ktest_note("%u of %u rounds, the holder got in between in %u", done,
		   fv.rounds, fv.in_window);
	KEXPECT(done == fv.rounds || t->failed, "stopped after %u of %u rounds",
		done, fv.rounds);
	/* Each round it did not saw nothing. */
	KEXPECT(fv.in_window == done || t->failed,
		"the holder got between the mapper's two holds in %u of %u "
		"rounds",
		fv.in_window, done);
}

KTEST(PND0004, pending, "a shared map that fails part-way, revoked meanwhile")
{
	unsigned threads_before = thread_count(), started = 0;
	struct thread *threads[FAIL_THREADS];
	uint32_t done = 0;

	if (cpu_count < FAIL_CPUS) {
		ktest_skip(t, "needs 3 or more CPUs: a mapper, a holder and a "
			      "revoker (boot with SMP=3 or more)");
		return;
	}
	memset(&fv, 0, sizeof(fv));
	fv.rounds = platform_get() == PLATFORM_BOCHS ? FAIL_ROUNDS_BOCHS
						     : FAIL_ROUNDS;
	fv.mm = mm_create();
	if (!KEXPECT(fv.mm, "no address space") ||
	    !KEXPECT(
		    !mm_map_anon(fv.mm, FAIL_TABLE_VA, PAGE_SIZE, MM_PROT_READ),
		    "mapping the anchor page"))
		goto out;
	threads[0] = test_thread_create(mapper_main, NULL, MAPPER_CPU,
					"pnd-mapper", NULL);
	threads[1] = test_thread_create(holder_main, NULL, HOLDER_CPU,
					"pnd-holder", NULL);
	threads[2] = test_thread_create(revoker_main, NULL, REVOKER_CPU,
					"pnd-revoker", NULL);
	/* Taken before the threads start: their waits do not count it. */
	hoard_all();
	for (unsigned i = 0; i < FAIL_THREADS; i++) {
		if (KEXPECT(threads[i], "no thread %u", i)) {
			sched_start_thread(threads[i]);
			started++;
		}
	}
	for (uint32_t round = 0; started == FAIL_THREADS && round < fv.rounds &&
				 !test_stopped(&fv.run);
	     round++) {
		if (!set_up(t, round))
			break;
		test_count_publish(&fv.round, round + 1);
		if (!wait_for(&fv.mapper_done, round + 1, "the mapper") ||
		    !wait_for(&fv.holder_done, round + 1, "the holder") ||
		    !wait_for(&fv.revoked, round + 1, "the revoker"))
			break;
		check_round(t, round);
		shm_put(fv.shm);
		fv.shm = NULL;
		done++;
	}
	hoard_release(UINT64_MAX);
	/* The threads use fv: every one leaves before the clean-up. */
	test_threads_join(t, &fv.run.stop, &fv.exited, started, threads_before,
			  FAIL_REAP_NS);
	if (fv.shm)
		shm_put(fv.shm);
	report(t, done);
out:
	if (fv.mm)
		mm_put(fv.mm);
}
