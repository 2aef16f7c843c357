// SPDX-License-Identifier: MIT
/*
 * Revocation (shm_revoke): once it returns, no CPU in any address space may
 * read the revoked object's pages, and every other mapping is intact.
 *
 * Rounds. The object of round r (REVOKE_PAGES pages, each page's first word
 * a pattern naming the round and the page) is created, filled through a
 * writer address space that no thread runs in, and mapped into the readers'
 * REVOKE_MMS address spaces, beside a second object mapped once for all
 * rounds. Then it is revoked: one flush round for all the spaces
 * (unmap_batch=pages or all) or one per space (per_mm). seq tells where a
 * round is, as tlb_oracle's does:
 *
 *	seq = 3r	object r being mapped: a read faults or sees pattern r
 *	seq = 3r + 1	mapped everywhere: every read sees pattern r
 *	seq = 3r + 2	being revoked: pattern r, or a fault
 *	seq = 3r + 3	revoked (and object r + 1 being mapped)
 *
 * Readers, kernel threads with thread->mm set, one per address space on
 * every CPU (so each CPU switches among all the spaces, and its PCID slots
 * hold several of them), make PASSES_PER_YIELD passes between switches;
 * each pass loads seq (s1), read every page of both objects
 * through the exception table, and load seq again (s2): a read must be
 * explained by a state from s1 to s2. A translation the revoke should have
 * removed shows as pattern r, or as the poison the freed frames get right
 * after the revoke (the stepper takes frames from the allocator, the
 * object's among them, and writes POISON into them), read at s1 >= 3r + 3.
 * The stepper waits before each change until every reader made a pass in
 * the current state, so that their TLBs hold the translations.
 */
#include "tests/ktest.h"
#include "tests/kernel/threads.h"
#include "apic/tsc.h"
#include "cpu/platform.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "arch/layout.h"
#include "mm/mm.h"
#include "mm/pagetable.h"
#include "mm/pmm.h"
#include "mm/tlb.h"
#include "sched/sched.h"
#include "sched/thread.h"
#include "cpu/percpu.h"
#include "sync/spinlock.h"

/*
 * Rounds, sized for some 10 s under TCG with 4 CPUs: each costs every
 * reader three passes and a revoke. Fewer with more CPUs, a tenth on
 * Bochs; a missed flush shows in the first rounds (docs/tlb-bugs.md).
 */
#define REVOKE_ROUNDS	     120
#define REVOKE_ROUNDS_MIN    6
#define REVOKE_ROUNDS_CPUS   4
#define REVOKE_BOCHS_DIVISOR 10

#define REVOKE_MMS   4 /* readers' address spaces */
#define REVOKE_PAGES 4 /* the revoked object: a range, page by page */
#define KEPT_PAGES   2 /* the object that stays */
#define REVOKE_VA    0x40000000ULL
#define KEPT_VA	     0x40200000ULL /* another page table than REVOKE_VA */
#define READERS_MAX  (REVOKE_MMS * 8)

#define PATTERN_MAGIC 0x5e7a000000000000ULL
#define KEPT_MAGIC    0x6b65000000000000ULL
#define POISON	      0xdeadf4eedeadf4eeULL

/*
 * Passes a reader makes before it yields to the readers of the other
 * address spaces on its CPU: a switch flushes a PCID that is behind, so
 * a stale translation shows only between a revoke and the next switch,
 * and these passes keep that window open.
 */
#define PASSES_PER_YIELD 16

#define WAIT_LIMIT_NS 60000000000ULL

struct reader {
	struct thread *thread;
	struct mm *mm;
	uint64_t seen; /* atomic: s1 of its last pass */
};

/* What a reader saw that no state explains. */
struct revoke_failure {
	bool set;
	unsigned cpu;
	uint64_t va, value, s1, s2;
	int err;
};

static struct {
	uint64_t seq;	 /* atomic: written by the stepper alone */
	bool stop;	 /* atomic */
	unsigned exited; /* atomic */
	unsigned readers;
	struct reader reader[READERS_MAX];
	struct spinlock failure_lock;
	struct revoke_failure failure; /* the first, under failure_lock */
} rv;

static uint64_t pattern(uint64_t round, unsigned page)
{
	return PATTERN_MAGIC | round << 8 | page;
}

static uint64_t kept_pattern(unsigned page)
{
	return KEPT_MAGIC | page;
}

/* Whether state seq explains a read of the revoked object's page. */
static bool state_explains(uint64_t seq, unsigned page, int err, uint64_t value)
{
	uint64_t round = seq / 3;

	if (seq % 3 != 1 && err)
		return true;
	return !err && value == pattern(round, page);
}

static void fail(unsigned cpu, uint64_t va, int err, uint64_t value,
		 uint64_t s1, uint64_t s2)
{
	uint64_t flags = spin_lock_irqsave(&rv.failure_lock);

	if (!rv.failure.set)
		rv.failure = (struct revoke_failure){true, cpu, va, value,
						     s1,   s2,	err};
	spin_unlock_irqrestore(&rv.failure_lock, flags);
	__atomic_store_n(&rv.stop, true, __ATOMIC_RELEASE);
}

static void read_pass(void)
{
	uint64_t s1 = __atomic_load_n(&rv.seq, __ATOMIC_ACQUIRE), s2;
	uint64_t values[REVOKE_PAGES], kept[KEPT_PAGES];
	int errs[REVOKE_PAGES], kept_errs[KEPT_PAGES];

	for (unsigned p = 0; p < REVOKE_PAGES; p++)
		errs[p] = test_probe_user_read(REVOKE_VA + p * PAGE_SIZE,
					       &values[p]);
	for (unsigned p = 0; p < KEPT_PAGES; p++)
		kept_errs[p] =
			test_probe_user_read(KEPT_VA + p * PAGE_SIZE, &kept[p]);
	s2 = __atomic_load_n(&rv.seq, __ATOMIC_ACQUIRE);
	for (unsigned p = 0; p < REVOKE_PAGES; p++) {
		bool explained = false;

		for (uint64_t s = s1; s <= s2 && !explained; s++)
			explained = state_explains(s, p, errs[p], values[p]);
		if (!explained)
			fail(this_cpu_index(), REVOKE_VA + p * PAGE_SIZE,
			     errs[p], values[p], s1, s2);
	}
	for (unsigned p = 0; p < KEPT_PAGES; p++) {
		if (kept_errs[p] || kept[p] != kept_pattern(p))
			fail(this_cpu_index(), KEPT_VA + p * PAGE_SIZE,
			     kept_errs[p], kept[p], s1, s2);
	}
}

static void reader_main(void *arg)
{
	struct reader *r = arg;

	while (!__atomic_load_n(&rv.stop, __ATOMIC_ACQUIRE)) {
		uint64_t s1 = __atomic_load_n(&rv.seq, __ATOMIC_ACQUIRE);

		for (unsigned i = 0; i < PASSES_PER_YIELD; i++)
			read_pass();
		__atomic_store_n(&r->seen, s1 + 1, __ATOMIC_RELEASE);
		/* The other address spaces' readers on this CPU run too. */
		yield();
	}
	__atomic_add_fetch(&rv.exited, 1, __ATOMIC_RELEASE);
}

/* Until every reader made a pass that began in state seq (or a failure). */
static bool wait_readers(struct ktest_context *t, uint64_t seq)
{
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(WAIT_LIMIT_NS);

	for (unsigned i = 0; i < rv.readers; i++) {
		while (__atomic_load_n(&rv.reader[i].seen, __ATOMIC_ACQUIRE) <
		       seq + 1) {
			if (__atomic_load_n(&rv.stop, __ATOMIC_ACQUIRE))
				return false;
			if (!KEXPECT(tsc_read_ordered() < deadline,
				     "reader %u made no pass in state %llu", i,
				     (unsigned long long)seq))
				return false;
			yield();
		}
	}
	return true;
}

static void set_seq(uint64_t seq)
{
	__atomic_store_n(&rv.seq, seq, __ATOMIC_RELEASE);
}

/* Writes each page's pattern into the object through the writer's tables. */
static bool fill(struct ktest_context *t, struct mm *writer, uint64_t round)
{
	for (unsigned p = 0; p < REVOKE_PAGES; p++) {
		uint64_t word = pattern(round, p);

		if (!KEXPECT(!mm_write(writer, REVOKE_VA + p * PAGE_SIZE, &word,
				       sizeof(word)),
			     "writing round %llu", (unsigned long long)round))
			return false;
	}
	return true;
}

/*
 * Frames fresh from the allocator (the revoked object's, freed last, among
 * them) get POISON, so a stale read of one is told from any pattern.
 */
static unsigned poison(uint64_t *frames, unsigned n)
{
	unsigned got = 0;

	for (; got < n; got++) {
		frames[got] = pmm_alloc_frame();
		if (!frames[got])
			break;
		__atomic_store_n((uint64_t *)phys_to_virt(frames[got]), POISON,
				 __ATOMIC_RELAXED);
	}
	return got;
}

/* One round: object r mapped, read, revoked, read as gone. */
static bool run_round(struct ktest_context *t, struct mm *writer,
		      struct mm **mms, uint64_t round)
{
	struct shm *shm = shm_create(REVOKE_PAGES * PAGE_SIZE);
	uint64_t poisoned[REVOKE_PAGES * 2];
	unsigned npoisoned;
	bool ok = true;

	if (!KEXPECT(shm, "no object for round %llu",
		     (unsigned long long)round))
		return false;
	set_seq(3 * round);
	ok = KEXPECT(!mm_map_shared(writer, shm, REVOKE_VA,
				    MM_PROT_READ | MM_PROT_WRITE),
		     "mapping into the writer") &&
	     fill(t, writer, round);
	for (unsigned i = 0; ok && i < REVOKE_MMS; i++)
		ok = KEXPECT(
			!mm_map_shared(mms[i], shm, REVOKE_VA, MM_PROT_READ),
			"mapping into mm %u", i);
	if (ok) {
		set_seq(3 * round + 1);
		ok = wait_readers(t, 3 * round + 1);
	}
	set_seq(3 * round + 2);
	KEXPECT(!shm_revoke(shm), "revoke of round %llu",
		(unsigned long long)round);
	set_seq(3 * round + 3);
	npoisoned = poison(poisoned, ARRAY_SIZE(poisoned));
	KEXPECT(mm_map_shared(mms[0], shm, REVOKE_VA, MM_PROT_READ) == -EIDRM,
		"a revoked object mapped again");
	KEXPECT(shm_revoke(shm) == -EIDRM, "a revoked object revoked again");
	shm_put(shm);
	ok = ok && wait_readers(t, 3 * round + 3);
	for (unsigned i = 0; i < npoisoned; i++)
		pmm_free_frame(poisoned[i]);
	return ok;
}

static uint32_t rounds(void)
{
	uint32_t n = REVOKE_ROUNDS * REVOKE_ROUNDS_CPUS /
		     MAX(cpu_count, (unsigned)REVOKE_ROUNDS_CPUS);

	if (platform_get() == PLATFORM_BOCHS)
		n /= REVOKE_BOCHS_DIVISOR;
	return MAX(n, (uint32_t)REVOKE_ROUNDS_MIN);
}

static void start_readers(struct ktest_context *t, struct mm **mms)
{
	unsigned cpus = MIN(cpu_count, (unsigned)(READERS_MAX / REVOKE_MMS));
	bool made = true;

	/* The readers made so far start even when one is not: the join
	 * waits for every one counted. */
	for (unsigned cpu = 0; made && cpu < cpus; cpu++) {
		for (unsigned i = 0; made && i < REVOKE_MMS; i++) {
			struct reader *r = &rv.reader[rv.readers];

			r->mm = mms[i];
			r->thread = test_thread_create(reader_main, r, cpu,
						       "rvk-read", r->mm);
			made = KEXPECT(r->thread, "reader thread");
			rv.readers += made;
		}
	}
	for (unsigned i = 0; i < rv.readers; i++)
		sched_start_thread(rv.reader[i].thread);
}

static void report(struct ktest_context *t)
{
	const struct revoke_failure *f = &rv.failure;

	if (!f->set)
		return;
	KEXPECT(false,
		"cpu%u read %#llx between states %llu and %llu: %s %#llx "
		"(%s)",
		f->cpu, (unsigned long long)f->va, (unsigned long long)f->s1,
		(unsigned long long)f->s2, f->err ? "fault" : "value",
		(unsigned long long)f->value,
		f->va >= KEPT_VA     ? "the object that stays"
		: f->value == POISON ? "a freed frame: stale translation"
		: (f->value >> 48) == (PATTERN_MAGIC >> 48)
			? "an old round's object"
			: "unexplained");
}

KTEST(RVK0001, revoke, "an object revoked from 4 address spaces on every CPU")
{
	unsigned threads_before = thread_count();
	struct mm *mms[REVOKE_MMS] = {0}, *writer;
	struct shm *kept = NULL;
	uint32_t n = rounds(), done = 0;
	struct tlb_stats before, after;

	if (cpu_count < 2) {
		ktest_skip(t, "needs 2 or more CPUs (boot with SMP=2 or more)");
		return;
	}
	memset(&rv, 0, sizeof(rv));
	rv.failure_lock = (struct spinlock)SPINLOCK_INIT;
	writer = mm_create();
	kept = shm_create(KEPT_PAGES * PAGE_SIZE);
	if (!KEXPECT(writer && kept, "no writer or kept object"))
		goto out;
	if (!KEXPECT(!mm_map_shared(writer, kept, KEPT_VA,
				    MM_PROT_READ | MM_PROT_WRITE),
		     "mapping the kept object"))
		goto out;
	for (unsigned p = 0; p < KEPT_PAGES; p++) {
		uint64_t word = kept_pattern(p);

		mm_write(writer, KEPT_VA + p * PAGE_SIZE, &word, sizeof(word));
	}
	for (unsigned i = 0; i < REVOKE_MMS; i++) {
		mms[i] = mm_create();
		if (!KEXPECT(mms[i], "no address space %u", i) ||
		    !KEXPECT(
			    !mm_map_shared(mms[i], kept, KEPT_VA, MM_PROT_READ),
			    "mapping the kept object into %u", i))
			goto out;
	}
	/* Round 0 is never mapped: readers start in state 3 (round 1). */
	set_seq(3);
	tlb_stats_sum(&before);
	start_readers(t, mms);
	for (uint32_t round = 1; round <= n && !t->failed; round++) {
		if (!run_round(t, writer, mms, round))
			break;
		done++;
	}
	test_threads_join(t, &rv.stop, &rv.exited, rv.readers, threads_before,
			  WAIT_LIMIT_NS);
	tlb_stats_sum(&after);
	report(t);
	ktest_note(
		"unmap_batch=%s pcid=%d lazy=%s: %u of %u rounds, %u "
		"readers; %llu batch rounds, %llu mms, %llu IPIs",
		tlb_unmap_batch_names[tlb_policy.unmap_batch], tlb_policy.pcid,
		tlb_lazy_names[tlb_policy.lazy], done, n, rv.readers,
		(unsigned long long)(after.batch_rounds - before.batch_rounds),
		(unsigned long long)(after.batch_mms - before.batch_mms),
		(unsigned long long)(after.batch_ipis - before.batch_ipis));
	KEXPECT(done == n || t->failed, "stopped after %u of %u rounds", done,
		n);
out:
	for (unsigned i = 0; i < REVOKE_MMS; i++) {
		if (mms[i])
			mm_put(mms[i]);
	}
	if (writer)
		mm_put(writer);
	if (kept)
		shm_put(kept);
}

static bool mapped_at(const struct mm *mm, uint64_t va)
{
	return pt_translate(mm->root, va, NULL, NULL) == 0;
}

KTEST(RVK0002, revoke, "revoke: other mappings stay, the object is gone")
{
	struct mm *a = mm_create(), *b = mm_create();
	struct shm *gone = shm_create(3 * PAGE_SIZE);
	struct shm *stays = shm_create(PAGE_SIZE);
	uint64_t pages_before;

	if (!KEXPECT(a && b && gone && stays, "no memory"))
		goto out;
	KEXPECT(!mm_map_shared(a, gone, REVOKE_VA, MM_PROT_READ), "map in a");
	KEXPECT(!mm_map_shared(b, gone, REVOKE_VA, MM_PROT_READ), "map in b");
	KEXPECT(!mm_map_shared(b, gone, KEPT_VA + PAGE_SIZE, MM_PROT_READ),
		"map in b twice");
	KEXPECT(!mm_map_shared(a, stays, KEPT_VA, MM_PROT_READ), "map other");
	KEXPECT(!mm_map_anon(b, KEPT_VA, PAGE_SIZE, MM_PROT_READ), "anon");
	/* A page a unmapped itself and mapped anew: not the object's. */
	KEXPECT(!mm_unmap(a, REVOKE_VA + PAGE_SIZE, PAGE_SIZE), "unmap");
	KEXPECT(!mm_map_anon(a, REVOKE_VA + PAGE_SIZE, PAGE_SIZE, MM_PROT_READ),
		"map over");
	pages_before = b->pages;
	KEXPECT(!shm_revoke(gone), "revoke");
	for (unsigned p = 0; p < 3; p++) {
		KEXPECT(!mapped_at(b, REVOKE_VA + p * PAGE_SIZE) &&
				!mapped_at(b, KEPT_VA + (p + 1) * PAGE_SIZE),
			"b still maps the object's page %u", p);
		KEXPECT(mapped_at(a, REVOKE_VA + p * PAGE_SIZE) == (p == 1),
			"a: page %u wrong after revoke", p);
	}
	KEXPECT(mapped_at(a, KEPT_VA) && mapped_at(b, KEPT_VA),
		"other mappings lost");
	KEXPECT(b->pages == pages_before - 6, "b maps %llu pages, not %llu",
		(unsigned long long)b->pages,
		(unsigned long long)(pages_before - 6));
	KEXPECT(mm_map_shared(a, gone, 2 * REVOKE_VA, MM_PROT_READ) == -EIDRM,
		"mapped again after revoke");
	KEXPECT(shm_revoke(gone) == -EIDRM, "revoked twice");
out:
	if (a)
		mm_put(a);
	if (b)
		mm_put(b);
	if (gone)
		shm_put(gone);
	if (stays)
		shm_put(stays);
}
