// SPDX-License-Identifier: MIT
/*
 * The global-ASID allocator (mm/tlb_global_asid.h; mm/tlb.c, "Global
 * ASIDs", says why it works this way).
 *
 * Global ASID i is PCID TLB_GLOBAL_PCID_FIRST + i, for i below
 * tlb_policy.global_asids. Each is in one of three states:
 *   free   never handed out since the last wrap-around: no TLB holds an
 *          entry tagged with it;
 *   held   an address space has it (until its teardown): bit set in
 *          taken, counted in held_count;
 *   freed  its space is gone, but TLBs may still hold entries tagged
 *          with it, from that space's last days: bit set in taken and in
 *          freed_set.
 * Free ones are handed out in increasing order from `next_free`. When none is
 * left above `next_free`, the wrap-around: one INVLPGB drops every non-global
 * entry of every PCID on every CPU, TLBSYNC waits for it, and every freed
 * one becomes free again. One broadcast per wrap, not one per teardown.
 */
#include "mm/tlb_global_asid.h"
#include "mm/mm.h"
#include "mm/tlb.h"
#include "mm/tlb_bug.h"
#include "mm/tlb_hw.h"
#include "sync/spinlock.h"

#define WORD_BITS 64
#define WORDS	  ((TLB_GLOBAL_ASIDS_MAX + WORD_BITS - 1) / WORD_BITS)

/* All guarded by asids_lock. */
static struct spinlock asids_lock = SPINLOCK_INIT;
static uint64_t taken[WORDS];	  /* held or freed: not free */
static uint64_t freed_set[WORDS]; /* freed: waiting for a wrap-around */
static unsigned next_free;	  /* where the search for a free one starts */
static unsigned held_count;	  /* at most tlb_policy.global_asids */

static bool is_set(const uint64_t *bits, unsigned i)
{
	return bits[i / WORD_BITS] >> (i % WORD_BITS) & 1;
}

static void set_bit(uint64_t *bits, unsigned i)
{
	bits[i / WORD_BITS] |= 1ULL << (i % WORD_BITS);
}

/* The first free one at or after from, or count if none. */
static unsigned first_free(unsigned from, unsigned count)
{
	while (from < count && is_set(taken, from))
		from++;
	return from;
}

/*
 * Every freed one becomes free: first no TLB may hold an entry tagged
 * with it, which only a broadcast of every PCID reaches (the CPUs that cached
 * them may run anything now). Global entries stay: kernel mappings, never
 * tagged with a user PCID.
 */
static void wrap_around(struct tlb_cpu *c)
{
	/* LAB(L9) begin: make every freed global ASID free again, after no
	 * TLB can hold an entry tagged with one */
	if (!INJECTED(tlb, TLB_BUG_GLOBAL_ASID_REUSE_NOFLUSH)) {
		tlb_hw_invlpgb(&(struct tlb_hw_broadcast){0});
		tlb_hw_tlbsync();
		c->stats.broadcasts++;
		c->stats.tlbsyncs++;
	}
	for (unsigned w = 0; w < WORDS; w++) {
		taken[w] &= ~freed_set[w];
		freed_set[w] = 0;
	}
	next_free = 0;
	c->stats.global_asid_wraps++;
	/* LAB(L9) end */
}

/* A free one's PCID, taken; or 0 if all are held. Under asids_lock. */
static uint16_t take_one(struct tlb_cpu *c)
{
	/* LAB(L9) begin: hand out the next free global ASID, wrapping around
	 * when none is left above next_free; 0 when all are held
	 * keeps: wrap_around, first_free, set_bit, next_free */
	unsigned count = tlb_policy.global_asids, i;

	if (held_count >= count)
		return 0;
	i = first_free(next_free, count);
	if (i == count) {
		wrap_around(c);
		/* Fewer held than count: the wrap-around freed one. */
		i = first_free(0, count);
	}
	set_bit(taken, i);
	next_free = i + 1;
	held_count++;
	c->stats.global_asid_gets++;
	return (uint16_t)(TLB_GLOBAL_PCID_FIRST + i);
	/* LAB(L9) end */
}

void tlb_global_asid_give(struct mm *mm)
{
	struct tlb_cpu *c = tlb_hw_cpu_state();
	uint64_t flags = spin_lock_irqsave(&asids_lock);
	uint16_t pcid;

	/* Under the lock: two flushers of mm may both want to give one. */
	if (!shared_load(&mm->global_pcid, __ATOMIC_RELAXED)) {
		pcid = take_one(c);
		if (pcid) {
			shared_store(&mm->asid_transition, true,
				     __ATOMIC_RELAXED);
			/* Release: the transition is visible first. Pairs
			 * with the acquire loads of global_pcid in load_mm
			 * and the flushers (mm/tlb.c, Global ASIDs). */
			shared_store(&mm->global_pcid, pcid, __ATOMIC_RELEASE);
		}
	}
	spin_unlock_irqrestore(&asids_lock, flags);
}

void tlb_global_asid_take_back(struct mm *mm)
{
	/* No CPU has mm loaded and no flusher holds it: nothing races. */
	uint16_t pcid = shared_load(&mm->global_pcid, __ATOMIC_RELAXED);
	uint64_t flags;

	if (!pcid)
		return;
	flags = spin_lock_irqsave(&asids_lock);
	set_bit(freed_set, (unsigned)(pcid - TLB_GLOBAL_PCID_FIRST));
	held_count--;
	tlb_hw_cpu_state()->stats.global_asid_puts++;
	spin_unlock_irqrestore(&asids_lock, flags);
	shared_store(&mm->global_pcid, 0, __ATOMIC_RELAXED);
}
