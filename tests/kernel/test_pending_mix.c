// SPDX-License-Identifier: MIT
/*
 * Unmaps, maps, protects and revokes at once in one address space, while
 * readers on every CPU check what they read (docs/tlb.md, "Frees and maps
 * while a flush is pending"). PND0001-2 (test_pending.c) hold one window
 * open on purpose; here every change runs beside the others, on several
 * CPUs, the way programs meet them.
 *
 * Slots: the pages of the address space at MIX_VA + slot * PAGE_SIZE.
 * Each round r maps object r (MIX_OBJECT_PAGES pages, word 0 of page p
 * holding obj(r, p)) at slots 0-3, an anonymous page holding old(r) at
 * slot 4, and keeps slot 5 (an anonymous page of its own) untouched. Then
 * the mutators, one thread each, pinned to CPUs in turn, all at once:
 *
 *	unmap	mm_unmap of slot 0
 *	protect	mm_protect of slot 1, read-only
 *	revoke	shm_revoke of object r, once slot 0's PTE is clear (so that
 *		it often comes while the unmap's flush is pending)
 *	clear	mm_unmap of slot 4
 *	remap	mm_map_anon at slot 4 once its PTE is clear, then new(r)
 *		written into the fresh page
 *
 * Each publishes round + 1 once its call returned. Readers, one thread per
 * CPU in the address space, load seq, the mutators' counters, read every
 * slot (and write slot 1's second word) through the exception table, and
 * load seq again; a pass within one round is judged against the calls
 * that had returned before it began:
 *
 *	slot 0		obj(r, 0) until the unmap or the revoke returned; a
 *			fault at any time
 *	slot 1		obj(r, 1) or a fault, a fault once the revoke returned;
 *			a write succeeds only until the protect (if it found
 *			the page: else it changed nothing) or the revoke
 *			returned
 *	slots 2, 3	obj(r, p) or a fault, a fault once the revoke returned
 *	slot 4		new(r) once the remap returned; before, old(r) (until
 *			the clear returned), a fault, zero or new(r)
 *	slot 5		its own pattern, always
 *
 * A read of a revoked or unmapped frame after the call that dropped it
 * returned breaks a rule above, and so does the poison the revoker writes
 * into frames fresh from the allocator once its revoke returned. Seq:
 * 2r + 1 while round r is set up (nothing judged), 2r + 2 while it runs.
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
#include "mm/tlb.h"
#include "sched/sched.h"
#include "sched/thread.h"
#include "cpu/percpu.h"
#include "sync/spinlock.h"

/*
 * Rounds, sized for some 3 s under TCG with 4 CPUs: fewer with more CPUs
 * (every reader reads every slot of every round), a tenth on Bochs. This
 * case looks for what chance brings. It does not catch the two known
 * mistakes: the revoke's own flush of the object's other pages reaches
 * every reader together with the unmap's pending one. PND0001-2 catch
 * those every round.
 */
#define MIX_ROUNDS	     20
#define MIX_ROUNDS_CPUS	     4
#define MIX_BOCHS_DIVISOR    10
#define MIX_ROUNDS_MIN	     4
#define MIX_READERS_MAX	     16
#define MIX_PASSES_PER_YIELD 4 /* the mutators pinned beside it run too */

#define MIX_VA		 0x40000000ULL
#define MIX_OBJECT_PAGES 4
#define SLOT_UNMAP	 0
#define SLOT_PROTECT	 1
#define SLOT_REMAP	 4
#define SLOT_KEPT	 5
#define MIX_SLOTS	 6
#define WRITE_OFFSET	 8 /* the word write probes hit: never checked */
#define POISON_FRAMES	 8

#define OBJ_MAGIC    0x0b10000000000000ULL
#define OLD_MAGIC    0x01d0000000000000ULL
#define NEW_MAGIC    0x0e30000000000000ULL
#define KEPT_PATTERN 0x6b6570746b657074ULL
#define POISON	     0xdeadf4eedeadf4eeULL

#define MIX_LIMIT_NS 30000000000ULL

enum mutator {
	MUT_UNMAP,
	MUT_PROTECT,
	MUT_REVOKE,
	MUT_CLEAR,
	MUT_REMAP,
	MUT_COUNT
};

static const char *const mutator_names[MUT_COUNT] = {
	"unmap", "protect", "revoke", "clear", "remap"};

struct mix_reader {
	uint64_t passes; /* atomic: judged or not */
};

/* The first read no state explains. */
struct mix_failure {
	bool set;
	unsigned cpu, slot;
	bool write;
	int err;
	uint64_t value;
	uint64_t seq;
	uint32_t done[MUT_COUNT]; /* the counters the pass began with */
};

static struct {
	struct mm *mm;
	struct shm *shm; /* this round's object */
	uint32_t rounds;
	uint64_t seq;		  /* atomic: the coordinator's */
	uint32_t done[MUT_COUNT]; /* atomic: round + 1 once its call returned */
	uint32_t overlaps[MUT_COUNT]; /* revoke, remap: began in the pending
					 flush of unmap, clear */
	/* The protector's: round + 1, before done, when its mm_protect found
	 * the page revoked already: writes stay legal until the revoke
	 * returns. */
	uint32_t protect_missed;
	bool stop;	 /* atomic */
	unsigned exited; /* atomic */
	unsigned readers;
	struct mix_reader reader[MIX_READERS_MAX];
	uint64_t poisoned[POISON_FRAMES]; /* the revoker's, per round */
	unsigned npoisoned;
	struct spinlock failure_lock;
	struct mix_failure failure; /* under failure_lock */
	const char *stuck;
} mx;

static uint64_t obj(uint32_t round, unsigned page)
{
	return OBJ_MAGIC | (uint64_t)round << 8 | page;
}

static uint64_t old_pattern(uint32_t round)
{
	return OLD_MAGIC | round;
}

static uint64_t new_pattern(uint32_t round)
{
	return NEW_MAGIC | round;
}

static uint64_t slot_va(unsigned slot)
{
	return MIX_VA + slot * PAGE_SIZE;
}

static bool stopped(void)
{
	return __atomic_load_n(&mx.stop, __ATOMIC_ACQUIRE);
}

static void halt(const char *why)
{
	if (!__atomic_exchange_n(&mx.stop, true, __ATOMIC_ACQ_REL))
		mx.stuck = why;
}

static uint64_t load_seq(void)
{
	return __atomic_load_n(&mx.seq, __ATOMIC_ACQUIRE);
}

static bool wait_seq(uint64_t seq)
{
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(MIX_LIMIT_NS);

	while (load_seq() < seq) {
		if (stopped())
			return false;
		if (tsc_read_ordered() > deadline) {
			halt("a mutator waiting for its round");
			return false;
		}
		yield();
	}
	return true;
}

/* Whether a read of slot in round r is explained, given the calls done. */
static bool read_ok(unsigned slot, uint32_t r, const bool *done, int err,
		    uint64_t value)
{
	switch (slot) {
	case SLOT_UNMAP:
		return err || (value == obj(r, slot) && !done[MUT_UNMAP] &&
			       !done[MUT_REVOKE]);
	case SLOT_REMAP:
		if (done[MUT_REMAP])
			return !err && value == new_pattern(r);
		return err || value == 0 || value == new_pattern(r) ||
		       (value == old_pattern(r) && !done[MUT_CLEAR]);
	case SLOT_KEPT:
		return !err && value == KEPT_PATTERN;
	default: /* the object's other pages, protected or not */
		return err || (value == obj(r, slot) && !done[MUT_REVOKE]);
	}
}

static void fail(const uint32_t *counters, uint64_t seq, unsigned slot,
		 bool write, int err, uint64_t value)
{
	uint64_t flags = spin_lock_irqsave(&mx.failure_lock);

	if (!mx.failure.set) {
		mx.failure = (struct mix_failure){
			.set = true,
			.cpu = this_cpu_index(),
			.slot = slot,
			.write = write,
			.err = err,
			.value = value,
			.seq = seq,
		};
		memcpy(mx.failure.done, counters, sizeof(mx.failure.done));
	}
	spin_unlock_irqrestore(&mx.failure_lock, flags);
	__atomic_store_n(&mx.stop, true, __ATOMIC_RELEASE);
}

static void read_pass(void)
{
	uint64_t s1 = load_seq(), s2, values[MIX_SLOTS];
	uint32_t counters[MUT_COUNT], r = (uint32_t)(s1 / 2 - 1);
	bool done[MUT_COUNT];
	int errs[MIX_SLOTS], write_err;
	bool protected;

	for (unsigned m = 0; m < MUT_COUNT; m++) {
		counters[m] = __atomic_load_n(&mx.done[m], __ATOMIC_ACQUIRE);
		done[m] = counters[m] == r + 1;
	}
	/* After the acquire of done: its store came before done's. */
	protected =
		done[MUT_PROTECT] &&
		__atomic_load_n(&mx.protect_missed, __ATOMIC_RELAXED) != r + 1;
	for (unsigned s = 0; s < MIX_SLOTS; s++)
		errs[s] = test_probe_user_read(slot_va(s), &values[s]);
	write_err =
		test_probe_user_write(slot_va(SLOT_PROTECT) + WRITE_OFFSET, 0);
	s2 = load_seq();
	if (!s1 || s1 % 2 || s1 != s2)
		return; /* set-up, or a round boundary: nothing to judge */
	for (unsigned s = 0; s < MIX_SLOTS; s++) {
		if (!read_ok(s, r, done, errs[s], values[s]))
			fail(counters, s1, s, false, errs[s], values[s]);
	}
	if (!write_err && (protected || done[MUT_REVOKE]))
		fail(counters, s1, SLOT_PROTECT, true, 0, 0);
}

static void reader_main(void *arg)
{
	struct mix_reader *me = arg;

	while (!stopped()) {
		read_pass();
		if (__atomic_add_fetch(&me->passes, 1, __ATOMIC_RELEASE) %
			    MIX_PASSES_PER_YIELD ==
		    0)
			yield();
	}
	__atomic_add_fetch(&mx.exited, 1, __ATOMIC_RELEASE);
}

/* Until slot's PTE is clear: the unmap's (or clear's) edit is made. */
static void wait_cleared(unsigned slot)
{
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(MIX_LIMIT_NS);

	while (!pt_translate(mx.mm->root, slot_va(slot), NULL, NULL) &&
	       tsc_read_ordered() < deadline && !stopped())
		cpu_relax();
}

static void poison_frames(void)
{
	for (mx.npoisoned = 0; mx.npoisoned < POISON_FRAMES; mx.npoisoned++) {
		uint64_t frame = pmm_alloc_frame();

		if (!frame)
			break;
		__atomic_store_n((uint64_t *)phys_to_virt(frame), POISON,
				 __ATOMIC_RELAXED);
		mx.poisoned[mx.npoisoned] = frame;
	}
}

/* Whether the other call's flush may still be pending (it has not
 * returned): counted, to show how often the case meets the window. */
static void note_overlap(enum mutator me, enum mutator other, uint32_t r)
{
	if (__atomic_load_n(&mx.done[other], __ATOMIC_ACQUIRE) != r + 1)
		mx.overlaps[me]++;
}

/*
 * Writes new(r) into the remapped page as one 8-byte store, through the
 * direct map: readers judge the word while it is written, and mm_write's
 * byte copy would let them see its first bytes alone.
 */
static int store_new_pattern(uint32_t r)
{
	uint64_t pa;

	if (pt_translate(mx.mm->root, slot_va(SLOT_REMAP), &pa, NULL))
		return -EFAULT;
	__atomic_store_n((uint64_t *)phys_to_virt(pa), new_pattern(r),
			 __ATOMIC_RELAXED);
	return 0;
}

/* Mutator m's call of round r; 0, or what went wrong. */
static const char *mutate(enum mutator m, uint32_t r)
{
	int err;

	switch (m) {
	case MUT_UNMAP:
		mm_unmap(mx.mm, slot_va(SLOT_UNMAP), PAGE_SIZE);
		return NULL;
	case MUT_PROTECT:
		/* -ENOENT once the revoke cleared the page: it changed
		 * nothing, and the revoke's flush may still be pending. */
		err = mm_protect(mx.mm, slot_va(SLOT_PROTECT), PAGE_SIZE,
				 MM_PROT_READ);
		if (err == -ENOENT)
			__atomic_store_n(&mx.protect_missed, r + 1,
					 __ATOMIC_RELAXED);
		return err && err != -ENOENT ? "mm_protect failed" : NULL;
	case MUT_REVOKE:
		wait_cleared(SLOT_UNMAP);
		note_overlap(m, MUT_UNMAP, r);
		err = shm_revoke(mx.shm);
		poison_frames();
		return err ? "shm_revoke failed" : NULL;
	case MUT_CLEAR:
		mm_unmap(mx.mm, slot_va(SLOT_REMAP), PAGE_SIZE);
		return NULL;
	case MUT_REMAP:
		wait_cleared(SLOT_REMAP);
		note_overlap(m, MUT_CLEAR, r);
		if (mm_map_anon(mx.mm, slot_va(SLOT_REMAP), PAGE_SIZE,
				MM_PROT_READ | MM_PROT_WRITE) ||
		    store_new_pattern(r))
			return "mm_map_anon failed";
		return NULL;
	case MUT_COUNT:
		break;
	}
	return "no such mutator";
}

static void mutator_main(void *arg)
{
	enum mutator m = (enum mutator)(uintptr_t)arg;

	for (uint32_t r = 0; r < mx.rounds && wait_seq(2 * (uint64_t)r + 2);
	     r++) {
		const char *err = mutate(m, r);

		if (err) {
			halt(err);
			break;
		}
		__atomic_store_n(&mx.done[m], r + 1, __ATOMIC_RELEASE);
	}
	__atomic_add_fetch(&mx.exited, 1, __ATOMIC_RELEASE);
}

/* Round r's starting point; the previous round's leftovers go first. */
static bool set_up(struct ktest_context *t, uint32_t r)
{
	uint64_t word = old_pattern(r);

	__atomic_store_n(&mx.seq, 2 * (uint64_t)r + 1, __ATOMIC_RELEASE);
	mm_unmap(mx.mm, MIX_VA, SLOT_KEPT * PAGE_SIZE);
	if (mx.shm)
		shm_put(mx.shm);
	for (unsigned i = 0; i < mx.npoisoned; i++)
		pmm_free_frame(mx.poisoned[i]);
	mx.npoisoned = 0;
	mx.shm = shm_create(MIX_OBJECT_PAGES * PAGE_SIZE);
	if (!KEXPECT(mx.shm, "no object for round %u", r) ||
	    !KEXPECT(!mm_map_shared(mx.mm, mx.shm, MIX_VA,
				    MM_PROT_READ | MM_PROT_WRITE),
		     "mapping object %u", r) ||
	    !KEXPECT(!mm_map_anon(mx.mm, slot_va(SLOT_REMAP), PAGE_SIZE,
				  MM_PROT_READ | MM_PROT_WRITE),
		     "mapping slot %u", SLOT_REMAP))
		return false;
	for (unsigned p = 0; p < MIX_OBJECT_PAGES; p++) {
		uint64_t pattern = obj(r, p);

		mm_write(mx.mm, slot_va(p), &pattern, sizeof(pattern));
	}
	mm_write(mx.mm, slot_va(SLOT_REMAP), &word, sizeof(word));
	__atomic_store_n(&mx.seq, 2 * (uint64_t)r + 2, __ATOMIC_RELEASE);
	return true;
}

/* Every mutator returned, and then every reader made a whole pass. */
static bool wait_round(uint32_t r)
{
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(MIX_LIMIT_NS);
	uint64_t passes[MIX_READERS_MAX];

	for (unsigned m = 0; m < MUT_COUNT; m++) {
		while (__atomic_load_n(&mx.done[m], __ATOMIC_ACQUIRE) < r + 1) {
			if (stopped())
				return false;
			if (tsc_read_ordered() > deadline) {
				halt("waiting for a mutator");
				return false;
			}
			yield();
		}
	}
	for (unsigned i = 0; i < mx.readers; i++)
		passes[i] =
			__atomic_load_n(&mx.reader[i].passes, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < mx.readers; i++) {
		/* Two: the one under way may have begun before. */
		while (__atomic_load_n(&mx.reader[i].passes, __ATOMIC_ACQUIRE) <
		       passes[i] + 2) {
			if (stopped())
				return false;
			if (tsc_read_ordered() > deadline) {
				halt("waiting for a reader");
				return false;
			}
			yield();
		}
	}
	return true;
}

static void report(struct ktest_context *t)
{
	const struct mix_failure *f = &mx.failure;

	if (mx.stuck && !f->set)
		KEXPECT(false, "stopped: %s", mx.stuck);
	if (!f->set)
		return;
	KEXPECT(false,
		"cpu%u, state %llu, slot %u: %s %s %#llx%s; returned before "
		"the pass: unmap %u protect %u revoke %u clear %u remap %u "
		"(round + 1 each)",
		f->cpu, (unsigned long long)f->seq, f->slot,
		f->write ? "write" : "read", f->err ? "fault" : "value",
		(unsigned long long)f->value,
		f->write	     ? " (succeeded on a read-only page)"
		: f->value == POISON ? " (a freed frame, poisoned)"
				     : "",
		f->done[MUT_UNMAP], f->done[MUT_PROTECT], f->done[MUT_REVOKE],
		f->done[MUT_CLEAR], f->done[MUT_REMAP]);
}

static uint32_t rounds(void)
{
	uint32_t n = MIX_ROUNDS * MIX_ROUNDS_CPUS /
		     MAX(cpu_count, (unsigned)MIX_ROUNDS_CPUS);

	if (platform_get() == PLATFORM_BOCHS)
		n /= MIX_BOCHS_DIVISOR;
	return MAX(n, (uint32_t)MIX_ROUNDS_MIN);
}

KTEST(PND0003, pending,
      "unmap, map, protect and revoke at once, read on every CPU")
{
	unsigned threads_before = thread_count(), started = 0, wanted;
	uint64_t word = KEPT_PATTERN;
	uint32_t done = 0;

	if (cpu_count < 2) {
		ktest_skip(t, "needs 2 or more CPUs (boot with SMP=2 or more)");
		return;
	}
	memset(&mx, 0, sizeof(mx));
	mx.failure_lock = (struct spinlock)SPINLOCK_INIT;
	mx.rounds = rounds();
	mx.readers = MIN(cpu_count, (unsigned)MIX_READERS_MAX);
	mx.mm = mm_create();
	if (!KEXPECT(mx.mm, "no address space") ||
	    !KEXPECT(!mm_map_anon(mx.mm, slot_va(SLOT_KEPT), PAGE_SIZE,
				  MM_PROT_READ),
		     "mapping the kept page"))
		goto out;
	mm_write(mx.mm, slot_va(SLOT_KEPT), &word, sizeof(word));
	wanted = mx.readers + MUT_COUNT;
	for (unsigned i = 0; i < mx.readers; i++)
		started += test_thread_start(t, reader_main, &mx.reader[i], i,
					     "pnd-read", mx.mm);
	for (unsigned m = 0; m < MUT_COUNT; m++)
		started += test_thread_start(
			t, mutator_main, (void *)(uintptr_t)m, m % cpu_count,
			mutator_names[m], NULL);
	for (uint32_t r = 0; started == wanted && r < mx.rounds; r++) {
		if (!set_up(t, r) || !wait_round(r))
			break;
		done++;
	}
	test_threads_join(t, &mx.stop, &mx.exited, started, threads_before,
			  MIX_LIMIT_NS);
	report(t);
	ktest_note("%u of %u rounds, %u readers; the revoke began before the "
		   "unmap returned in %u, the remap before the clear returned "
		   "in %u; unmap_batch=%s lazy=%s pcid=%d",
		   done, mx.rounds, mx.readers, mx.overlaps[MUT_REVOKE],
		   mx.overlaps[MUT_REMAP],
		   tlb_unmap_batch_names[tlb_policy.unmap_batch],
		   tlb_lazy_names[tlb_policy.lazy], tlb_policy.pcid);
	KEXPECT(done == mx.rounds || t->failed, "stopped after %u of %u rounds",
		done, mx.rounds);
out:
	if (mx.shm)
		shm_put(mx.shm);
	for (unsigned i = 0; i < mx.npoisoned; i++)
		pmm_free_frame(mx.poisoned[i]);
	if (mx.mm)
		mm_put(mx.mm);
}
