// SPDX-License-Identifier: MIT
/*
 * The TLB protocol: address-space switches and shootdowns.
 *
 * A CPU caches translations in its TLB and never notices when the page
 * tables change. After a change, every CPU that may hold the old
 * translation must drop it before the old page (or page table) is reused,
 * and this file decides who must drop what, and when. It reads top to
 * bottom: ID spaces, states, invariants; switching; flushing; how a TLB
 * learns of a change; global ASIDs and broadcasts; teardown.
 *
 * ID spaces
 *   context id  mm->context_id: 64 bits, never reused, names an address
 *               space for the life of the system (kernel_mm: 0).
 *   ASID        index of one of this CPU's slots, 0 .. asid_slots-1: which
 *               of the CPU's few tagged contexts an address space uses here.
 *               An address space may have different ASIDs on different CPUs.
 *   PCID        what CR3 carries (12 bits): ASID + 1. PCID 0 is the kernel
 *               mm, and the only PCID when PCID is off (pcid=off or not in
 *               CPUID): then every CR3 load flushes and slot 0 alone is used.
 *   global ASID with INVLPGB (AMD's broadcast invalidation): one PCID that
 *               names an address space on every CPU at once, from the
 *               range above the slots' (TLB_GLOBAL_PCID_FIRST and up:
 *               mm->global_pcid; "Global ASIDs", below).
 *   generation  mm->tlb_gen, bumped once per change that needs a flush;
 *               slot.tlb_gen: the generation this CPU's entries tagged with
 *               the slot's PCID are current to.
 *
 * Per-CPU states (struct tlb_cpu in mm/tlb_cpu.h; loaded_mm and is_lazy are
 * read by other CPUs, everything else only by the owner):
 *
 *   ACTIVE     loaded_mm = user mm, !is_lazy   a thread of the mm runs
 *   LAZY       loaded_mm = user mm, is_lazy    a kernel thread runs on the
 *                                              mm's tables (it never touches
 *                                              the user half), so switching
 *                                              back costs no CR3 load
 *   KERNEL     loaded_mm = &kernel_mm          PCID 0, empty user half
 *   SWITCHING  loaded_mm = TLB_MM_SWITCHING    inside switch_mm_irqs_off
 *
 * Invariants
 *   (I1) A slot {ctx, gen} on a CPU means: the CPU's TLB holds no
 *        translation of address space ctx older than generation gen.
 *   (I2) Whoever changes an address space's tables bumps its tlb_gen after
 *        the change, then flushes every CPU that could use the old entry
 *        without first comparing generations, waits for each, and only
 *        then frees the old pages and tables.
 *   A space running under its global ASID has no slot: (I1) and (I2) hold
 *   for its dynamic slots, and (G1) below takes their place for the global
 *   PCID.
 *   Example: CPU0 changes page P (gen 4 -> 5), then page Q (5 -> 6). CPU1,
 *   at gen 4, gets both requests. On the first it reads the mm's gen, 6:
 *   it is two behind, so it flushes the whole context and records 6, which
 *   covers Q as well. On the second it finds itself at 6 and does nothing.
 *
 * Switching (switch_mm_irqs_off, interrupts off; mm/tlb.h tells the cases
 * apart inline, and the address space that stays loaded costs only that)
 *   1. is_lazy = false, loaded_mm = SWITCHING.
 *   2. set our bit in next->cpu_mask (a locked BTS: a full barrier).
 *   3. read next->tlb_gen.
 *   4. choose a slot: the one holding next's context id (a hit), else the
 *      next one round-robin (a miss, recycling whatever it held).
 *   5. load CR3 with the slot's PCID, with the no-flush bit only on a hit
 *      whose gen is the one read in 3; record {ctx, gen} in the slot (I1).
 *   6. loaded_mm = next; clear our bit in prev->cpu_mask.
 *   A kernel thread (next == NULL) does not switch: the CPU goes LAZY, or,
 *   under lazy=off (and lazy=dynamic's back-off), switches to kernel_mm
 *   (lazy_keeps_mm: the lazy policy's three decisions are named below).
 *   Coming back to the LAZY mm compares generations and flushes if behind.
 *
 * Flushing (flush_tlb_mm_range)
 *   1. the caller changes the page tables;
 *   2. new_gen = ++mm->tlb_gen (a locked add: a full barrier after 1);
 *   3. choose the targets among mm->cpu_mask (below);
 *   4. send them the request, flush here if this CPU has mm loaded (while
 *      they flush, or after them with flush_concurrent=off), wait for all.
 *      A space with a global ASID is flushed by broadcast instead, and only
 *      during its transition gets requests too (Global ASIDs, below).
 *   A CPU handling the request (flush_tlb_here):
 *   - mm not loaded here any more: nothing (switching back compares gens);
 *   - LAZY: leave for kernel_mm (lazy=ipi, dynamic; or tables were freed);
 *   - its slot gen already equals the mm's: an earlier flush covered it;
 *   - exactly one behind, and this request is the newest (new_gen equals
 *     the mm's gen) and small (<= flush_ceiling pages): those pages only;
 *   - otherwise: the whole context, and record the mm's gen read first.
 *
 * Whom a flush skips, and why that is safe
 *   - CPUs not in mm->cpu_mask, and CPUs in it with another mm loaded:
 *     they never loaded mm or have left it (a CR3 load of another root).
 *     Their slot for mm, if any, records an older gen than new_gen, so
 *     switching back flushes first (step 5 of switching).
 *   - LAZY CPUs under lazy=skip, unless page tables were freed
 *     (lazy_skipped_by): the kernel thread there never touches user
 *     addresses, and returning to the mm compares generations first.
 *     When tables were freed they are flushed all the same: the page
 *     walker may walk the user half speculatively through the tables of
 *     the loaded PCID, and must not read a freed one.
 *   - CPUs running mm under its global ASID: a broadcast reaches them
 *     (Global ASIDs, below), and a flush that found no global ASID does
 *     not need them either: everything they cached under it was walked
 *     after that flush's page-table stores.
 *   Never skipped: a SWITCHING CPU. It may have read tlb_gen before our
 *   bump and be about to load CR3 with the no-flush bit; it has not yet
 *   published loaded_mm = mm. (Treating it as a non-target is the window
 *   behind CVE-2025-37964.)
 *
 * How a CPU's TLB learns of a change: five ways
 *   1. It made the change: the flusher flushes here too.
 *   2. A request reaches it (an IPI, alone or in a batch round), and
 *      flush_tlb_here compares generations.
 *   3. It switches to the mm: the slot's generation is compared with the
 *      mm's (step 5 of switching), or a recycled slot is flushed.
 *   4. It leaves LAZY: the same comparison (leave_lazy).
 *   5. A broadcast: the flusher's INVLPGB drops the entries of the mm's
 *      global PCID in every CPU's TLB, loaded or not, lazy or not, and
 *      TLBSYNC waits until it has. No request, no comparison: what replaces
 *      the generation rules is
 *      (G1) A TLB's entries tagged with a global PCID are never older than
 *           the last broadcast that completed: they were either walked
 *           after it, or dropped by it (it reaches every TLB).
 *      So a CPU loads a global PCID with the no-flush bit, always, and a
 *      request finds nothing to do there. (I2) becomes: bump tlb_gen after
 *      the change (CPUs still on dynamic ASIDs compare it), broadcast, wait
 *      for TLBSYNC, then free.
 *
 * Global ASIDs and broadcasts (tlb_policy.invlpgb: INVLPGB in CPUID, with
 * PCID; the allocator is mm/tlb_global_asid.c)
 *   When   a flush that had to reach at least global_asid_cpus CPUs by
 *          request (this one included) gives the space a global ASID, if
 *          one is free: broadcasting pays off for spaces that run on many CPUs at
 *          once, and the others keep the cheaper local flushes and IPIs
 *          to one or two CPUs (Linux's rule: four CPUs).
 *   How many  global_asids=N (all of PCIDs TLB_GLOBAL_PCID_FIRST to 4095
 *          unless told fewer); when all are held, spaces simply stay on
 *          dynamic ASIDs and IPIs.
 *   Kept   for the life of the space, freed at teardown into a "freed"
 *          set: TLBs may still hold entries tagged with it.
 *   Reclaimed  only when the allocator runs out of never-used ones: one
 *          wrap-around flush (an INVLPGB of every non-global entry of every
 *          PCID, then TLBSYNC) makes every freed one free again. Handing a
 *          freed one out earlier would give the next space the dead one's
 *          entries.
 *   Transition  CPUs that loaded the space under a dynamic ASID before it
 *          got its global one keep running on their slot's PCID, which no
 *          broadcast names. While mm->asid_transition is set, a broadcast
 *          flush also sends the request, with the usual rules, to the CPUs
 *          of the mask that run it under a dynamic ASID or are SWITCHING
 *          (a switcher may have read "no global ASID" and be about to load
 *          a dynamic PCID: never treat it as done). A flusher that sees no
 *          CPU of the mask in either state ends the transition.
 *   Flushing a space with a global ASID (flush_tlb_mm_range)
 *     1. the caller changes the page tables;
 *     2. new_gen = ++mm->tlb_gen: a locked add, so the page-table stores
 *        are visible before any INVLPGB below (a walk that refills after
 *        the broadcast reads the new entries);
 *     3. the targets as usual: a CPU under the global ASID is none;
 *     4. one INVLPGB of the PCID per invlpgb_max_pages pages, or one of
 *        the whole PCID beyond flush_ceiling pages; not "final
 *        translations only" when tables were freed, so it drops the cached
 *        walks as well; then TLBSYNC, on the same CPU (pinned from the
 *        first INVLPGB: TLBSYNC waits only for this CPU's);
 *     5. during the transition, the request to the targets of 3, and wait.
 *   LAZY CPUs need nothing more: the broadcast drops the global PCID's
 *   entries and cached walks from their TLBs as from every other, so no
 *   walk through a freed table survives it (the reason lazy=skip sends
 *   them requests when tables are freed).
 *   Kernel ranges (flush_tlb_kernel_range) go by broadcast whenever
 *   invlpgb is in use, with no global ASID needed: kernel entries are
 *   global and shared by every PCID, so the INVLPGBs name no PCID and
 *   include global entries, page by page or, beyond flush_ceiling, all of
 *   them; then TLBSYNC. No CPU is interrupted, where the IPI path
 *   interrupts every online one.
 *   Orderings of the transition (sync/shared.h; x86-TSO keeps the rest):
 *     giver:    asid_transition = true; release store of global_pcid;
 *     switcher: SWITCHING; locked BTS on the mask; acquire load of
 *               global_pcid (after publishing SWITCHING);
 *     flusher:  locked add on tlb_gen; acquire load of global_pcid; load
 *               asid_transition; loads of the mask and of loaded_mm.
 *   A switcher that read "none" did so before the giver's store, so its
 *   bit and SWITCHING were visible before any flusher saw the global ASID;
 *   that flusher sees asid_transition set (the release orders it first)
 *   and the switcher in the mask, and cannot end the transition. A CPU
 *   that joins after a flusher ended it reads the global ASID.
 *
 * Rights that grow need no flush
 *   A change that only gives rights (a page made writable, mapped where
 *   nothing was) needs no flush for safety: a stale entry gives fewer
 *   rights than the tables, so the worst it does is a spurious page fault,
 *   which mm/fault.c recognises and retries after one local INVLPG
 *   (flush_tlb_spurious_fault, below). mm_protect flushes every change all
 *   the same, since it cannot tell; its flush may reach a CPU after that
 *   CPU faulted on the old entry, so spurious faults happen either way.
 *
 * Orderings
 *   Switch: store loaded_mm = SWITCHING, locked BTS on the mask, load gen.
 *   Flush: store the PTEs, locked add on gen, load the mask and loaded_mm.
 *   Either the flusher's loads see our bit and SWITCHING (or next), and we
 *   get the request, or our load of gen sees its bump, and we flush at the
 *   switch. The same pairing covers a LAZY CPU coming back: it stores
 *   is_lazy = false, fences, loads gen; the flusher bumps gen, loads is_lazy.
 *   Each is a store followed by a load of another variable, the one order
 *   x86 does not keep by itself: a locked operation or MFENCE keeps it.
 *   Every shared access goes through sync/shared.h and names its order for
 *   the compiler as well: the stores of loaded_mm are releases (the state
 *   before them is visible first), the flusher's load of it an acquire.
 *   tests/host/tlb_sim runs this file on x86-TSO store buffers, with
 *   relaxed stores free to pass each other as the compiler may make them.
 */
#include "mm/tlb.h"
#include "cpu/cpu.h"
#include "trap/panic.h"
#include "arch/layout.h"
#include "mm/mm.h"
#include "mm/tlb_bug.h"
#include "mm/tlb_global_asid.h"
#include "mm/tlb_hw.h"
#include "mm/tlb_trace.h"
#include "sync/shared.h"

_Static_assert(TLB_ASID_SLOTS_MAX + 1 <= CR3_PCID_MASK,
	       "every slot needs a PCID (ASID + 1) that CR3 can carry");
_Static_assert(TLB_GLOBAL_PCID_FIRST > TLB_ASID_SLOTS_MAX &&
		       TLB_PCID_COUNT == CR3_PCID_MASK + 1,
	       "global PCIDs lie above every slot's, within CR3's 12 bits");

struct mm kernel_mm;
struct tlb_cpu tlb_cpus[MAX_CPUS];

static struct tlb_cpu *this_tlb(void)
{
	return tlb_hw_cpu_state();
}

/*
 * This CPU's own loaded_mm and is_lazy. Only the owner writes them, but
 * other CPUs read them, so every access goes through sync/shared.h (and
 * the owner sees its own latest store).
 */
static struct mm *loaded_mm(const struct tlb_cpu *c)
{
	return shared_load(&c->loaded_mm, __ATOMIC_RELAXED);
}

static bool is_lazy(const struct tlb_cpu *c)
{
	return shared_load(&c->is_lazy, __ATOMIC_RELAXED);
}

/* --- ID spaces ---------------------------------------------------------------- */

static uint16_t asid_to_pcid(uint16_t asid)
{
	/* LAB(L2) begin: the PCID an ASID slot is tagged with */
	if (!tlb_policy.pcid || asid == TLB_ASID_KERNEL)
		return 0;
	return (uint16_t)(asid + 1);
	/* LAB(L2) end */
}

/* The only place a CR3 value is built. No-flush needs PCID: see tlb_hw.h. */
static uint64_t cr3_make(uint64_t root, uint16_t pcid, bool keep_entries)
{
	/* LAB(L2) begin: a CR3 value: root, PCID, and the no-flush bit */
	uint64_t cr3 = root | pcid;

	if (tlb_policy.pcid && keep_entries)
		cr3 |= CR3_NOFLUSH;
	return cr3;
	/* LAB(L2) end */
}

/* Slots in use: all of them with PCID, slot 0 alone without. */
static unsigned slot_count(void)
{
	return tlb_policy.pcid ? tlb_policy.asid_slots : 1;
}

/*
 * mm's global PCID, or 0: none, or INVLPGB not in use. Acquire: pairs with
 * the release store that published it (mm/tlb_global_asid.c), so
 * asid_transition, read after this, is no older than that.
 */
static uint16_t global_pcid(struct mm *mm)
{
	if (!tlb_policy.invlpgb)
		return 0;
	return shared_load(&mm->global_pcid, __ATOMIC_ACQUIRE);
}

/* The generation of the loaded context's slot, for the trace: none for
 * the kernel mm, nor under a global ASID. */
static uint64_t loaded_slot_gen(const struct tlb_cpu *c)
{
	if (c->loaded_asid >= TLB_ASID_SLOTS_MAX)
		return TRACE_GEN_UNREAD;
	return c->slots[c->loaded_asid].tlb_gen;
}

/* --- The lazy policy's three decisions ----------------------------------------- */

/*
 * Everything lazy= changes is one of these three questions; the code below
 * asks them by name and nowhere compares tlb_policy.lazy itself.
 *
 *   lazy_keeps_mm       a CPU about to run a kernel thread: does it keep
 *                       the user mm loaded (LAZY), or switch to kernel_mm
 *                       now? Kept under skip, ipi and dynamic; not under
 *                       off, nor during dynamic's back-off.
 *   lazy_skipped_by     a flusher looking at a LAZY CPU: may it leave that
 *                       CPU out? Only under skip, and never when page tables
 *                       were freed (the walker may walk the loaded PCID's
 *                       user half speculatively, through a freed table).
 *                       The LAZY CPU catches up by generation on return.
 *   lazy_leave_backs_off a LAZY CPU that a flush IPI sent to kernel_mm:
 *                       does it stay non-lazy for lazy_backoff switches?
 *                       Only under dynamic (the 2018 back-off: a CPU that
 *                       gets IPIs while idle is likely on a busy mm).
 *
 * A LAZY CPU that gets a request always leaves the mm, under every policy:
 * only an ipi-like policy or freed tables send it one (or it went lazy
 * after being chosen as ACTIVE), and leaving is as cheap as flushing and
 * spares it the next requests.
 */
static inline bool lazy_keeps_mm(const struct tlb_cpu *c)
{
	/* LAB(L4) begin: does a CPU about to run a kernel thread stay LAZY? */
	return tlb_policy.lazy != TLB_LAZY_OFF &&
	       !(tlb_policy.lazy == TLB_LAZY_DYNAMIC && c->backoff);
	/* LAB(L4) end */
}

static inline bool lazy_skipped_by(const struct tlb_flush_request *r)
{
	/* LAB(L4) begin: may this request leave LAZY CPUs out? */
	return tlb_policy.lazy == TLB_LAZY_SKIP &&
	       (!r->freed_tables ||
		INJECTED(tlb, TLB_BUG_LAZY_SKIP_FREED_TABLES));
	/* LAB(L4) end */
}

static inline bool lazy_leave_backs_off(void)
{
	/* LAB(L4) begin: does a LAZY CPU sent away by a request back off? */
	return tlb_policy.lazy == TLB_LAZY_DYNAMIC;
	/* LAB(L4) end */
}

/* --- Flushing this CPU ---------------------------------------------------------- */

/*
 * The mm's generation. The store-to-load orderings around it (switching,
 * leaving LAZY) come from a locked operation or an explicit fence before
 * it, as each caller says; acquire keeps later accesses after it.
 */
static uint64_t read_gen(const struct mm *mm)
{
	return shared_load(&mm->tlb_gen, __ATOMIC_ACQUIRE);
}

/* Drops every non-global entry of the loaded context (PCID). */
static void flush_loaded_context(struct tlb_cpu *c)
{
	uint16_t pcid = asid_to_pcid(c->loaded_asid);

	if (tlb_policy.invpcid)
		tlb_hw_invpcid_context(pcid);
	else /* reloading CR3 without the no-flush bit drops the PCID's */
		tlb_hw_load_cr3(cr3_make(loaded_mm(c)->root, pcid, false));
	c->stats.flush_full++;
}

/* How flush_pages drops one page. */
enum page_flush {
	PAGE_FLUSH_INVLPG,  /* the current PCID, and the page's global entry */
	PAGE_FLUSH_INVPCID, /* INVPCID type 0 in one PCID: not global entries */
};

/* Drops [start, end) page by page, one page each 1 << stride_shift bytes. */
static void flush_pages(struct tlb_cpu *c, uint64_t start, uint64_t end,
			unsigned stride_shift, enum page_flush how,
			uint16_t pcid)
{
	for (uint64_t va = start; va < end; va += 1ULL << stride_shift) {
		if (how == PAGE_FLUSH_INVPCID)
			tlb_hw_invpcid_address(pcid, va);
		else
			tlb_hw_invlpg(va);
		c->stats.flush_pages++;
	}
	c->stats.flush_partial++;
}

/* Drops the entries of [start, end) in the loaded context. */
static void flush_loaded_pages(struct tlb_cpu *c, uint64_t start, uint64_t end,
			       unsigned stride_shift)
{
	flush_pages(c, start, end, stride_shift,
		    tlb_policy.invpcid ? PAGE_FLUSH_INVPCID : PAGE_FLUSH_INVLPG,
		    asid_to_pcid(c->loaded_asid));
}

/* --- Switching ------------------------------------------------------------------ */

/*
 * kernel_mm's mask is kept only under kernel_mm_mask=touch: no flush ever
 * targets kernel_mm (kernel mappings are flushed on every CPU), so its two
 * locked operations per switch buy nothing (the 2018 change).
 */
static bool mask_tracked(const struct mm *mm)
{
	return mm != &kernel_mm || tlb_policy.kernel_mm_mask_touch;
}

/*
 * Step 4 of switching: the slot for next, and whether the CR3 load must
 * flush it. Running out of slots is the normal case: the victim's address
 * space simply gets a new slot (and a flush) when it comes back.
 */
static uint16_t choose_asid(struct tlb_cpu *c, const struct mm *next,
			    uint64_t next_gen, bool *flush)
{
	/* LAB(L2) begin: the slot for next; must loading it flush?
	 * keeps: slot_count */
	unsigned slots = slot_count(), asid;

	for (asid = 0; asid < slots; asid++) {
		if (c->slots[asid].context_id != next->context_id)
			continue;
		c->stats.asid_hits++;
		*flush = c->slots[asid].tlb_gen < next_gen &&
			 !INJECTED(tlb, TLB_BUG_NO_GEN_CHECK);
		if (*flush) {
			trace("switch-behind", next, (uint16_t)asid,
			      c->slots[asid].tlb_gen, next_gen);
			c->stats.gen_catchups++;
		}
		return (uint16_t)asid;
	}
	asid = c->next_asid;
	c->next_asid = (uint16_t)(asid + 1 < slots ? asid + 1 : 0);
	c->stats.asid_misses++;
	/* The slot may hold another address space's entries: flush them. */
	*flush = !INJECTED(tlb, TLB_BUG_REUSE_ASID_NOFLUSH);
	return (uint16_t)asid;
	/* LAB(L2) end */
}

/*
 * Steps 1-6 of switching, to next (a user mm or kernel_mm). This and the
 * two below are the cases of switch_mm_irqs_off (mm/tlb.h: switch_mm_cases
 * tells them apart, inline).
 */
void load_mm(struct tlb_cpu *c, struct mm *next)
{
	struct mm *prev = loaded_mm(c);
	unsigned cpu = tlb_hw_cpu();
	uint16_t asid = TLB_ASID_KERNEL, pcid;
	uint64_t cr3;

	/* A flusher that sees SWITCHING targets this CPU without looking at
	 * is_lazy, and next is published below with a release (paired with
	 * cpu_needs_flush's acquire), so relaxed would do here; the release,
	 * free on x86, keeps the two stores in state order for the compiler. */
	shared_store(&c->is_lazy, false, __ATOMIC_RELAXED);
	shared_store(&c->loaded_mm, TLB_MM_SWITCHING, __ATOMIC_RELEASE);
	if (mask_tracked(next)) {
		/* A full barrier: orders the SWITCHING store before the load
		 * of tlb_gen below; pairs with the flusher's bump-then-look. */
		cpumask_set_atomic(&next->cpu_mask, cpu);
		c->stats.cpumask_atomics++;
	}
	if (next == &kernel_mm) {
		/* PCID 0 holds no user entries: nothing to flush. */
		cr3 = cr3_make(next->root, 0, true);
	} else if ((pcid = global_pcid(next))) {
		/* No slot, no generation: broadcasts keep every TLB's entries
		 * of a global PCID current (G1). Read after the BTS above:
		 * pairs with the flusher that ends a transition (Global
		 * ASIDs). */
		asid = TLB_ASID_GLOBAL;
		cr3 = cr3_make(next->root, pcid, true);
	} else {
		uint64_t gen = read_gen(next);
		bool flush;

		asid = choose_asid(c, next, gen, &flush);
		c->slots[asid].context_id = next->context_id;
		c->slots[asid].tlb_gen = gen;
		cr3 = cr3_make(next->root, asid_to_pcid(asid), !flush);
	}
	/* Seen with next: the release store of loaded_mm below orders it.
	 * Only this CPU writes it; stored only when it changes, which
	 * without global ASIDs is never. */
	if (shared_load(&c->on_global_asid, __ATOMIC_RELAXED) !=
	    (asid == TLB_ASID_GLOBAL))
		shared_store(&c->on_global_asid, asid == TLB_ASID_GLOBAL,
			     __ATOMIC_RELAXED);
	trace_switch(c, next, asid, cr3);
	tlb_hw_load_cr3(cr3);
	c->loaded_asid = asid;
	c->stats.mm_switches++;
	/* Release: the slot and CR3 are set up before anyone sees next. */
	shared_store(&c->loaded_mm, next, __ATOMIC_RELEASE);
	if (mask_tracked(prev)) {
		cpumask_clear_atomic(&prev->cpu_mask, cpu);
		c->stats.cpumask_atomics++;
	}
}

/*
 * A kernel thread is about to run. It needs only the kernel half, which
 * every address space maps, so keeping the user mm loaded is enough (LAZY):
 * no CR3 load now, none when the mm comes back.
 */
void enter_lazy(struct tlb_cpu *c)
{
	/* LAB(L4) begin: go LAZY (or to kernel_mm when the policy says so)
	 * keeps: lazy_keeps_mm */
	struct mm *mm = loaded_mm(c);

	if (mm == &kernel_mm || is_lazy(c))
		return;
	if (!lazy_keeps_mm(c)) {
		if (c->backoff)
			c->backoff--;
		load_mm(c, &kernel_mm);
		return;
	}
	if (tlb_policy.lazy_mm == TLB_LAZY_MM_REFCOUNT) {
		/* switch_mm_finish drops every earlier one first. */
		KASSERT(!c->lazy_ref, "cpu%u still holds lazy mm%llu",
			tlb_hw_cpu(),
			(unsigned long long)c->lazy_ref->context_id);
		mm_get(mm);
		c->lazy_ref = mm;
	}
	/* No ordering needed: a flusher that still sees us ACTIVE only
	 * sends an IPI we did not need. */
	shared_store(&c->is_lazy, true, __ATOMIC_RELAXED);
	trace("enter-lazy", mm, c->loaded_asid, loaded_slot_gen(c),
	      TRACE_GEN_UNREAD);
	c->stats.lazy_entries++;
	/* LAB(L4) end */
}

/* A thread of the LAZY mm comes back: catch up on skipped flushes. */
void leave_lazy(struct tlb_cpu *c)
{
	struct tlb_asid_slot *slot;
	struct mm *mm = loaded_mm(c);
	uint64_t gen;

	/* LAB(L4) begin: stop being LAZY, before the generation is read */
	shared_store(&c->is_lazy, false, __ATOMIC_RELAXED);
	/* is_lazy = false before reading gen: a store followed by a load,
	 * which only a full fence keeps in order on x86. Pairs with the
	 * flusher's locked bump of gen before it reads is_lazy (Orderings,
	 * above). */
	tlb_hw_fence();
	/* LAB(L4) end */
	/* Nothing to catch up on under a global ASID: every broadcast
	 * reached this CPU while it was LAZY (G1). */
	if (c->loaded_asid == TLB_ASID_GLOBAL)
		return;
	slot = &c->slots[c->loaded_asid];
	/* LAB(L5) begin: catch up on the flushes skipped while LAZY
	 * keeps: slot, mm, gen */
	gen = read_gen(mm);
	trace("resume", mm, c->loaded_asid, slot->tlb_gen, gen);
	if (slot->tlb_gen < gen && !INJECTED(tlb, TLB_BUG_NO_GEN_CHECK)) {
		trace("catch-up", mm, c->loaded_asid, slot->tlb_gen, gen);
		flush_loaded_context(c);
		slot->tlb_gen = gen;
		c->stats.gen_catchups++;
	}
	/* LAB(L5) end */
}

void switch_mm_finish_held(void)
{
	struct tlb_cpu *c = this_tlb();
	struct mm *held = c->lazy_ref;

	/* Still lazily loaded here: keep the reference. */
	if (loaded_mm(c) == held && is_lazy(c))
		return;
	c->lazy_ref = NULL;
	mm_put(held); /* may be the last: frees the address space */
}

/* --- Flushing every CPU that needs it ------------------------------------------ */

static enum tlb_hw_wait wait_mode(void)
{
	if (INJECTED(tlb, TLB_BUG_NO_WAIT))
		return TLB_HW_NO_WAIT;
	return TLB_HW_WAIT;
}

/*
 * Does what request r (read already) asks of this CPU: the cases at the
 * top. A batch round (flush_multi_here) asks it once per address space.
 */
static void flush_tlb_here(struct tlb_cpu *c, const struct tlb_flush_request *r)
{
	struct tlb_asid_slot *slot;
	uint64_t local_gen, mm_gen, pages;

	if (loaded_mm(c) != r->mm) {
		trace_handling("not-loaded", r, TLB_ASID_KERNEL,
			       TRACE_GEN_UNREAD, TRACE_GEN_UNREAD);
		c->stats.ipis_not_loaded += r->sender != tlb_hw_cpu();
		return;
	}
	/* A broadcast, or a flush older than the global ASID, covered it
	 * (G1; Whom a flush skips, above). */
	if (c->loaded_asid == TLB_ASID_GLOBAL) {
		trace_handling("global", r, TLB_ASID_GLOBAL, TRACE_GEN_UNREAD,
			       TRACE_GEN_UNREAD);
		c->stats.flush_up_to_date++;
		c->stats.ipis_covered += r->sender != tlb_hw_cpu();
		return;
	}
	/* LAB(L4) begin: a LAZY CPU that gets a request
	 * keeps: lazy_leave_backs_off */
	if (is_lazy(c)) {
		trace_handling("leave-lazy", r, c->loaded_asid,
			       c->slots[c->loaded_asid].tlb_gen,
			       TRACE_GEN_UNREAD);
		if (lazy_leave_backs_off())
			c->backoff = tlb_policy.lazy_backoff;
		load_mm(c, &kernel_mm);
		c->stats.lazy_leaves++;
		return;
	}
	/* LAB(L4) end */
	/* LAB(L5) begin: up to date, these pages, or the whole context?
	 * keeps: slot, local_gen, mm_gen, pages, flush_loaded_pages,
	 * flush_loaded_context */
	slot = &c->slots[c->loaded_asid];
	local_gen = slot->tlb_gen;
	mm_gen = read_gen(r->mm);
	if (local_gen >= mm_gen) {
		trace_handling("up-to-date", r, c->loaded_asid, local_gen,
			       mm_gen);
		c->stats.flush_up_to_date++;
		c->stats.ipis_covered += r->sender != tlb_hw_cpu();
		return;
	}
	pages = (r->end - r->start) >> r->stride_shift;
	if (pages <= tlb_policy.flush_ceiling && r->new_gen == local_gen + 1 &&
	    r->new_gen == mm_gen) {
		trace_handling("flush-pages", r, c->loaded_asid, local_gen,
			       mm_gen);
		flush_loaded_pages(c, r->start, r->end, r->stride_shift);
		slot->tlb_gen = r->new_gen;
	} else {
		trace_handling("flush-all", r, c->loaded_asid, local_gen,
			       mm_gen);
		flush_loaded_context(c);
		slot->tlb_gen = mm_gen;
	}
	/* LAB(L5) end */
}

/*
 * A handler's first step: copies size bytes of the request the sender
 * placed, and counts it if another CPU sent it (sender points into the
 * copy). The sender's stores to the request are ordered before the call's
 * queueing (a release), this read after taking the call (an acquire).
 */
static void take_request(struct tlb_cpu *c, void *copy, const void *placed,
			 size_t size, const unsigned *sender)
{
	shared_read(copy, placed, size);
	if (*sender != tlb_hw_cpu())
		c->stats.ipis_received++;
}

/* A user-range request arrives (the IPI, or this CPU's own call). */
static void flush_tlb_ipi(void *arg)
{
	struct tlb_flush_request request;
	struct tlb_cpu *c = this_tlb();

	take_request(c, &request, arg, sizeof(request), &request.sender);
	flush_tlb_here(c, &request);
}

/* Whether cpu (not this one) must get the request (the skip rules). */
static bool cpu_needs_flush(unsigned cpu, const struct tlb_flush_request *r,
			    struct tlb_stats *stats)
{
	const struct tlb_cpu *c = &tlb_cpus[cpu];
	/* Acquire: pairs with the release stores of loaded_mm in load_mm,
	 * so is_lazy below is no older than the loaded_mm seen. */
	struct mm *loaded = shared_load(&c->loaded_mm, __ATOMIC_ACQUIRE);

	/* LAB(L3) begin: a CPU that is switching, or has another mm loaded
	 * keeps: loaded */
	if (loaded == TLB_MM_SWITCHING)
		return true;
	if (loaded != r->mm)
		return false;
	/* LAB(L3) end */
	/* Under its global ASID: reached by the broadcast, or had nothing
	 * older than this change to drop (Whom a flush skips, above). */
	if (shared_load(&c->on_global_asid, __ATOMIC_RELAXED)) {
		stats->ipis_avoided++;
		return false;
	}
	/* LAB(L4) begin: a LAZY CPU the policy lets us skip
	 * keeps: lazy_skipped_by, stats */
	if (lazy_skipped_by(r) && shared_load(&c->is_lazy, __ATOMIC_RELAXED)) {
		stats->lazy_skips++;
		return false;
	}
	/* LAB(L4) end */
	return true;
}

/*
 * Step 3 of flushing: adds to targets every CPU of r->mm's mask, this one
 * (self) aside, that must get request r.
 */
static void choose_targets(struct cpumask *targets, unsigned self,
			   const struct tlb_flush_request *r,
			   struct tlb_stats *stats)
{
	/* LAB(L3) begin: the CPUs of the mm's mask that must get the request
	 * keeps: cpu_needs_flush */
	struct cpumask mask;
	unsigned cpu;

	cpumask_copy(&mask, &r->mm->cpu_mask);
	for_each_cpu (cpu, &mask) {
		if (cpu != self && !INJECTED(tlb, TLB_BUG_SKIP_REMOTE) &&
		    cpu_needs_flush(cpu, r, stats))
			cpumask_set(targets, cpu);
	}
	/* LAB(L3) end */
}

/*
 * Runs handler(arg) on targets, waiting as told. tlb_bug=ack_before_flush
 * holds single requests only (mm/tlb_bug_ack.c), so arg is then a
 * tlb_flush_request_placed.
 */
static void call_targets(const struct cpumask *targets, void (*handler)(void *),
			 void *arg)
{
	if (INJECTED(tlb, TLB_BUG_ACK_BEFORE_FLUSH)) {
		tlb_ack_call(targets, handler, arg);
		return;
	}
	tlb_hw_call(targets, handler, arg, wait_mode());
}

/*
 * Step 4 of flushing: the request to the targets, and here if here is set,
 * overlapping with them (flush_concurrent=on) or after them.
 *
 * flush_concurrent is read once: the benchmarks change the policy while
 * another CPU may be in a flush (its idle loop freeing a kernel stack),
 * and a flush that read "off" before the call and "on" after it would
 * flush here neither way, leaving this CPU a stale translation of the
 * stack the next thread made gets.
 */
static void send_request(struct tlb_cpu *c, unsigned self,
			 struct cpumask *targets, bool here,
			 void (*handler)(void *), void *r)
{
	/* LAB(L3) begin: send the request, flush here too, wait for all
	 * keeps: call_targets */
	/* One load, which the compiler may not repeat: the benchmarks
	 * store the policy with plain stores while flushes run. */
	bool concurrent =
		__atomic_load_n(&tlb_policy.flush_concurrent, __ATOMIC_RELAXED);

	c->stats.ipis_sent += cpumask_weight(targets);
	if (here && concurrent)
		cpumask_set(targets, self);
	call_targets(targets, handler, r);
	if (here && !concurrent) {
		cpumask_clear_all(targets);
		cpumask_set(targets, self);
		tlb_hw_call(targets, handler, r, TLB_HW_WAIT);
	}
	/* LAB(L3) end */
}

/*
 * Places the request where the targets read it: per-CPU (flush_info=percpu)
 * or on the caller's stack. A flush never starts inside another on the same
 * CPU (nothing that runs while a flush waits starts one): if it did, the
 * per-CPU request would be rewritten under the targets still reading it.
 */
static void *place_request(struct tlb_cpu *c, void *on_stack, void *per_cpu,
			   const void *request, size_t size)
{
	void *r = tlb_policy.flush_info_on_stack ? on_stack : per_cpu;

	KASSERT(!c->request_in_flight,
		"cpu%u starts a flush while its previous one is in flight",
		tlb_hw_cpu());
	c->request_in_flight = true;
	shared_write(r, request, size);
	return r;
}

/* Every target has handled the request (or was told not to wait). */
static void request_done(struct tlb_cpu *c)
{
	c->request_in_flight = false;
}

/* The larger of INVLPGB's two strides: 2 MiB pages. */
#define STRIDE_2M_SHIFT 21

/* Whom a broadcast names: the entries of global PCID p, on every CPU; */
#define BROADCAST_PCID(p) \
	(&(const struct tlb_hw_broadcast){.has_pcid = true, .pcid = (p)})
/* or the kernel half's: global, in every PCID (Global ASIDs, "Kernel
 * ranges"). */
#define BROADCAST_KERNEL \
	(&(const struct tlb_hw_broadcast){.include_global = true})

/*
 * Step 4 for a space with a global ASID (Global ASIDs, above): INVLPGBs
 * of request r's range among the entries whom names (BROADCAST_PCID or
 * BROADCAST_KERNEL), on every CPU. They complete in any order, at the
 * latest when this CPU's TLBSYNC returns (broadcast_wait).
 */
static void broadcast_range(struct tlb_cpu *c,
			    const struct tlb_flush_request *r,
			    const struct tlb_hw_broadcast *whom)
{
	/* LAB(L9) begin: INVLPGBs of r's range among whom's entries: per
	 * page run up to invlpgb_max_pages, or all of them */
	struct tlb_hw_broadcast b = *whom;
	uint64_t pages = (r->end - r->start) >> r->stride_shift;
	uint64_t step, va;

	/* Freed tables: their cached walks must go too. */
	b.final_only = !r->freed_tables;
	/* INVLPGB steps by 4 KiB or 2 MiB; any other stride, or a range
	 * beyond the ceiling, is one INVLPGB of all whom's entries. */
	if (pages > tlb_policy.flush_ceiling ||
	    (r->stride_shift != PAGE_SHIFT &&
	     r->stride_shift != STRIDE_2M_SHIFT)) {
		tlb_hw_invlpgb(&b);
		c->stats.broadcasts++;
		return;
	}
	b.has_va = true;
	b.stride_2m = r->stride_shift == STRIDE_2M_SHIFT;
	for (va = r->start; va < r->end; va += step) {
		b.va = va;
		b.pages = (unsigned)MIN((r->end - va) >> r->stride_shift,
					(uint64_t)tlb_policy.invlpgb_max_pages);
		step = (uint64_t)b.pages << r->stride_shift;
		tlb_hw_invlpgb(&b);
		c->stats.broadcasts++;
	}
	/* LAB(L9) end */
}

/*
 * Waits for this CPU's INVLPGBs. The caller stayed pinned since the first:
 * on another CPU, TLBSYNC would wait for that CPU's INVLPGBs, not these.
 */
static void broadcast_wait(struct tlb_cpu *c)
{
	/* LAB(L9) begin: wait until this CPU's INVLPGBs have completed */
	if (INJECTED(tlb, TLB_BUG_TLBSYNC_SKIPPED))
		return;
	if (INJECTED(tlb, TLB_BUG_TLBSYNC_AFTER_MIGRATE)) {
		tlb_hw_unpin(); /* the scheduler may move the thread here */
		tlb_hw_pin();
	}
	tlb_hw_tlbsync();
	c->stats.tlbsyncs++;
	/* LAB(L9) end */
}

/*
 * Whether mm's transition goes on: some CPU of its mask may run it under a
 * dynamic ASID, or is SWITCHING and may be about to. If none, this flusher
 * ends it. Read after global_pcid's acquire (Global ASIDs, "Orderings").
 */
static bool transition_goes_on(struct tlb_cpu *c, struct mm *mm)
{
	struct cpumask mask;
	unsigned cpu;

	if (!shared_load(&mm->asid_transition, __ATOMIC_RELAXED))
		return false;
	cpumask_copy(&mask, &mm->cpu_mask);
	for_each_cpu (cpu, &mask) {
		const struct tlb_cpu *other = &tlb_cpus[cpu];
		/* Acquire: pairs with load_mm's release stores of loaded_mm,
		 * so on_global_asid is no older than the loaded_mm seen. */
		struct mm *loaded =
			shared_load(&other->loaded_mm, __ATOMIC_ACQUIRE);

		if (loaded == TLB_MM_SWITCHING &&
		    !INJECTED(tlb, TLB_BUG_TRANSITION_SKIPS_SWITCHING))
			return true;
		if (loaded == mm &&
		    !shared_load(&other->on_global_asid, __ATOMIC_RELAXED))
			return true;
	}
	/* Every CPU that joins from now on reads the global ASID. */
	shared_store(&mm->asid_transition, false, __ATOMIC_RELAXED);
	c->stats.transitions++;
	return false;
}

/*
 * After a flush of mm that reached `reached` CPUs by IPI or here: a space
 * that busy gets a global ASID, if one is free (Global ASIDs, "When").
 */
static void consider_global_asid(struct mm *mm, unsigned reached)
{
	if (tlb_policy.invlpgb && reached >= tlb_policy.global_asid_cpus)
		tlb_global_asid_give(mm);
}

void flush_tlb_mm_range(struct mm *mm, uint64_t start, uint64_t end,
			unsigned stride_shift, enum tlb_freed_tables freed)
{
	uint64_t stride = 1ULL << stride_shift;
	tlb_flush_request_placed on_stack;
	struct tlb_flush_request request = {
		.mm = mm,
		.start = ALIGN_DOWN(start, stride),
		.end = ALIGN_UP(end, stride),
		.stride_shift = stride_shift,
		.freed_tables = freed == TLB_TABLES_FREED,
	};
	struct cpumask targets;
	struct tlb_cpu *c;
	unsigned self, reached;
	uint16_t pcid;
	bool here;

	if (start >= end)
		return;
	tlb_hw_pin();
	self = tlb_hw_cpu();
	c = &tlb_cpus[self];
	request.sender = self;
	/* LAB(L3) begin: number the change in request.new_gen and choose
	 * the targets, in the order the protocol needs
	 * keeps: choose_targets, mm, targets, self, c */
	/* A locked add: a full barrier after the caller's page-table stores,
	 * before the loads of the mask and of other CPUs' states below
	 * (Orderings, above). */
	request.new_gen = shared_add_fetch(&mm->tlb_gen, 1, __ATOMIC_SEQ_CST);

	cpumask_clear_all(&targets);
	choose_targets(&targets, self, &request, &c->stats);
	/* LAB(L3) end */
	/* Under its global ASID, the broadcast flushes this CPU too. */
	here = loaded_mm(c) == mm && c->loaded_asid != TLB_ASID_GLOBAL;
	pcid = global_pcid(mm);
	if (pcid) {
		broadcast_range(c, &request, BROADCAST_PCID(pcid));
		broadcast_wait(c);
		/* Out of the transition, every CPU runs mm under the global
		 * ASID or will: the targets left are SWITCHING ones. */
		if (!transition_goes_on(c, mm)) {
			c->stats.ipis_avoided += cpumask_weight(&targets);
			cpumask_clear_all(&targets);
		}
	}
	reached = cpumask_weight(&targets) + here;
	trace_request(mm, here ? c->loaded_asid : TLB_ASID_KERNEL,
		      request.new_gen, &targets);
	send_request(c, self, &targets, here, flush_tlb_ipi,
		     place_request(c, &on_stack, &c->request, &request,
				   sizeof(request)));
	request_done(c);
	if (!pcid)
		consider_global_asid(mm, reached);
	tlb_hw_unpin();
}

/* --- Batches of address spaces ------------------------------------------------ */

/*
 * flush_tlb_mms: one change made in several address spaces at once (a
 * shared-memory object revoked: shm_revoke in mm/mm.c unmaps it from every
 * space that maps it through a struct tlb_multi_batch, mm/tlb_batch.h).
 * Flushing each space on its own sends one IPI round per space, to CPUs
 * that often run several of them; one round serves them all (the 2015
 * "one IPI per CPU after unmapping pages" of Linux's batched reclaim).
 *
 *   1. the caller changes the page tables of every space in the batch;
 *   2. for each space: new_gen = ++mm->tlb_gen (locked adds: full
 *      barriers after 1, before the loads of 3), its request built as
 *      flush_tlb_mm_range builds it;
 *   3. targets: the union, over the spaces, of the CPUs of each one's
 *      cpu_mask that cpu_needs_flush picks for that space's request (the
 *      same skip rules: another mm loaded, LAZY under lazy=skip unless that
 *      space freed tables; never a SWITCHING CPU);
 *   4. one request per target for the whole batch, here too if this CPU has
 *      one of them loaded; wait for all. Before it, the spaces holding a
 *      global ASID are flushed by INVLPGB, with one TLBSYNC for all of them
 *      (broadcast_batch); the round skips CPUs running those spaces under
 *      their global ASID, and reaches the others as in step 3.
 *   A CPU handling the round (flush_multi_here) runs flush_tlb_here for
 *   each space in turn: every space but the one loaded there is "not
 *   loaded", a no-op, and the loaded one gets the usual decision (up to
 *   date, pages, or all). Slots of the others on that CPU are behind their
 *   new generation, so switching to one of them flushes first: the
 *   generation rule covers the PCIDs that the round does not touch.
 *
 * unmap_batch= picks what a round asks for:
 *   pages   each space's range, flushed page by page up to flush_ceiling
 *           (the handler's rule), the whole context beyond;
 *   all     each space's whole user half: the range [0, USER_TOP) is beyond
 *           any ceiling, so the same handler flushes whole contexts (the
 *           2015 "batchdirty" flag: cheaper to send, dearer to refill);
 *   per_mm  one flush_tlb_mm_range per space, the loop batching replaces.
 * tlb_bug=ack_before_flush holds single-space requests only: under it a
 * batch goes space by space. tlb_bug=batch_first_mm_only takes the targets
 * of the first space alone: CPUs that run only the others keep their old
 * translations after the round, and the frames freed after it.
 */
static void flush_multi_here(void *arg)
{
	struct tlb_multi_request request;
	const tlb_multi_request_placed *sent = arg;
	struct tlb_cpu *c = this_tlb();
	uint64_t not_loaded = c->stats.ipis_not_loaded;

	/* Only the spaces the sender filled in are read: first the count,
	 * then the request up to its last space. */
	shared_read(&request, sent, offsetof(struct tlb_multi_request, mms));
	take_request(c, &request, sent,
		     offsetof(struct tlb_multi_request, mms) +
			     request.count * sizeof(request.mms[0]),
		     &request.sender);
	for (unsigned i = 0; i < request.count; i++)
		flush_tlb_here(c, &request.mms[i]);
	/* The round is one IPI: it found its mm left only if every space
	 * did. The spaces in it are distinct, so one loaded here is the
	 * round's single other outcome, counted by flush_tlb_here. */
	c->stats.ipis_not_loaded =
		not_loaded +
		(c->stats.ipis_not_loaded - not_loaded == request.count);
}

/* unmap_batch=per_mm (and ack_before_flush): a round per space. */
static void flush_mms_one_by_one(struct tlb_cpu *c,
				 const struct tlb_mm_range *ranges,
				 unsigned count)
{
	uint64_t sent = c->stats.ipis_sent;

	for (unsigned i = 0; i < count; i++) {
		if (ranges[i].start >= ranges[i].end)
			continue;
		flush_tlb_mm_range(ranges[i].mm, ranges[i].start, ranges[i].end,
				   PAGE_SHIFT, ranges[i].freed);
		c->stats.batch_rounds++;
		c->stats.batch_mms++;
	}
	c->stats.batch_ipis += c->stats.ipis_sent - sent;
}

/*
 * The spaces of a batch that hold a global ASID: their INVLPGBs, one
 * TLBSYNC for all, and each one's transition checked. The round that
 * follows skips CPUs running them under the global ASID (cpu_needs_flush)
 * and reaches the others, SWITCHING ones included, with the usual rules.
 */
static void broadcast_batch(struct tlb_cpu *c,
			    const struct tlb_multi_request *request)
{
	uint16_t pcids[TLB_MULTI_MMS_MAX];
	bool sent = false;

	for (unsigned i = 0; i < request->count; i++) {
		/* After step 2's locked adds, as in flush_tlb_mm_range. */
		pcids[i] = global_pcid(request->mms[i].mm);
		if (pcids[i]) {
			broadcast_range(c, &request->mms[i],
					BROADCAST_PCID(pcids[i]));
			sent = true;
		}
	}
	if (!sent)
		return;
	broadcast_wait(c);
	for (unsigned i = 0; i < request->count; i++) {
		if (pcids[i])
			transition_goes_on(c, request->mms[i].mm);
	}
}

void flush_tlb_mms(const struct tlb_mm_range *ranges, unsigned count)
{
	tlb_multi_request_placed on_stack, *placed;
	struct tlb_multi_request request = {0};
	bool whole = tlb_policy.unmap_batch == TLB_UNMAP_BATCH_ALL;
	struct cpumask targets;
	struct tlb_cpu *c;
	unsigned self, targets_of;
	bool here = false;

	KASSERT(count <= TLB_MULTI_MMS_MAX, "flush of %u address spaces",
		count);
	tlb_hw_pin();
	self = tlb_hw_cpu();
	c = &tlb_cpus[self];
	if (tlb_policy.unmap_batch == TLB_UNMAP_BATCH_PER_MM ||
	    INJECTED(tlb, TLB_BUG_ACK_BEFORE_FLUSH)) {
		flush_mms_one_by_one(c, ranges, count);
		tlb_hw_unpin();
		return;
	}
	/* LAB(L3) begin: steps 2 and 3 for a batch: one request per space
	 * with its new generation, then the union of their targets
	 * keeps: ranges, count, whole, targets_of, choose_targets */
	request.sender = self;
	for (unsigned i = 0; i < count; i++) {
		struct tlb_flush_request *r = &request.mms[request.count];

		if (ranges[i].start >= ranges[i].end)
			continue;
		*r = (struct tlb_flush_request){
			.mm = ranges[i].mm,
			.start = whole ? 0
				       : ALIGN_DOWN(ranges[i].start, PAGE_SIZE),
			.end = whole ? USER_TOP
				     : ALIGN_UP(ranges[i].end, PAGE_SIZE),
			.stride_shift = PAGE_SHIFT,
			.freed_tables = ranges[i].freed == TLB_TABLES_FREED,
			.sender = self,
		};
		/* Step 2: a locked add after the caller's page-table stores,
		 * before the loads of step 3 (as in flush_tlb_mm_range). */
		r->new_gen =
			shared_add_fetch(&r->mm->tlb_gen, 1, __ATOMIC_SEQ_CST);
		request.count++;
	}
	if (!request.count) {
		tlb_hw_unpin();
		return;
	}
	/* Step 3: the union of each space's targets. */
	cpumask_clear_all(&targets);
	targets_of =
		INJECTED(tlb, TLB_BUG_BATCH_FIRST_MM_ONLY) ? 1 : request.count;
	for (unsigned i = 0; i < targets_of; i++)
		choose_targets(&targets, self, &request.mms[i], &c->stats);
	/* LAB(L3) end */
	broadcast_batch(c, &request);
	for (unsigned i = 0; i < request.count; i++) {
		here = here || (loaded_mm(c) == request.mms[i].mm &&
				c->loaded_asid != TLB_ASID_GLOBAL);
		trace_request(request.mms[i].mm, TLB_ASID_KERNEL,
			      request.mms[i].new_gen, &targets);
	}
	/* Step 4, with the request where flush_info= says. */
	placed = place_request(c, &on_stack, &c->multi_request, &request,
			       offsetof(struct tlb_multi_request, mms) +
				       request.count * sizeof(request.mms[0]));
	c->stats.batch_rounds++;
	c->stats.batch_mms += request.count;
	c->stats.batch_ipis += cpumask_weight(&targets);
	send_request(c, self, &targets, here, flush_multi_here, placed);
	request_done(c);
	tlb_hw_unpin();
}

/* --- Kernel mappings ------------------------------------------------------------ */

/*
 * Kernel mappings are global whenever PCID is on (tlb_policy_settle turns
 * PCID on only with global pages, and kmap_map_page then refuses a kernel
 * mapping without PTE_GLOBAL: a non-global one would be tagged with the
 * PCID it was cached under, and INVLPG drops non-global entries of the
 * current PCID only). CR3 loads keep global entries, and INVLPG drops an
 * address's global entry whatever the PCID; dropping them all takes
 * INVPCID's all-contexts type or a CR4.PGE toggle.
 *
 * Paging-structure caches are not covered by the global bit: INVLPG here
 * drops the cached walks of this CPU's current PCID only (SDM Vol. 3A,
 * "Operations that Invalidate TLBs and Paging-Structure Caches"), and its
 * other PCIDs (user ASID slots, PCID 0) may keep walks through the kernel
 * half, used again after a no-flush CR3 load. That is safe because kernel
 * page tables are never freed (mm/pagetable.h; docs/tlb.md, "Page tables:
 * who frees them, and when"): above the leaves, a kernel-half entry only
 * ever goes from not present to present, and entries that are not present
 * are never cached, so a cached kernel walk, in any PCID, leads to the
 * live table a fresh walk would reach, whose leaf entry is read afresh.
 */
static void flush_kernel_here(void *arg)
{
	struct tlb_flush_request request, *r = &request;
	struct tlb_cpu *c = this_tlb();

	take_request(c, r, arg, sizeof(*r), &r->sender);
	c->stats.flush_kernel++;
	if (((r->end - r->start) >> PAGE_SHIFT) > tlb_policy.flush_ceiling) {
		if (tlb_policy.invpcid)
			tlb_hw_invpcid_all();
		else
			tlb_hw_flush_everything();
		c->stats.flush_full++;
		return;
	}
	/* INVLPG: kernel entries are global, which INVPCID type 0 keeps. */
	flush_pages(c, r->start, r->end, PAGE_SHIFT, PAGE_FLUSH_INVLPG, 0);
}

/*
 * A kernel range by broadcast: no CPU is interrupted. The request is only
 * the range, for broadcast_range; it says tables were freed so that the
 * cached walks go too, which costs a broadcast nothing.
 */
static void broadcast_kernel_range(struct tlb_cpu *c, uint64_t start,
				   uint64_t end)
{
	const struct tlb_flush_request r = {
		.start = start,
		.end = end,
		.stride_shift = PAGE_SHIFT,
		.freed_tables = true,
	};

	broadcast_range(c, &r, BROADCAST_KERNEL);
	broadcast_wait(c);
	c->stats.flush_kernel++;
	c->stats.ipis_avoided += cpumask_weight(tlb_hw_online()) - 1;
}

void flush_tlb_kernel_range(uint64_t start, uint64_t end)
{
	tlb_flush_request_placed on_stack;
	struct cpumask targets;
	struct tlb_cpu *c;
	unsigned self;

	if (start >= end)
		return;
	tlb_hw_pin();
	self = tlb_hw_cpu();
	c = &tlb_cpus[self];
	if (tlb_policy.invlpgb) {
		broadcast_kernel_range(c, ALIGN_DOWN(start, PAGE_SIZE),
				       ALIGN_UP(end, PAGE_SIZE));
		tlb_hw_unpin();
		return;
	}
	/* Every CPU may cache the kernel half, lazy or not. */
	cpumask_clear_all(&targets);
	if (!INJECTED(tlb, TLB_BUG_SKIP_REMOTE))
		cpumask_copy(&targets, tlb_hw_online());
	cpumask_clear(&targets, self);
	send_request(
		c, self, &targets, true, flush_kernel_here,
		place_request(c, &on_stack, &c->request,
			      &(struct tlb_flush_request){
				      .start = ALIGN_DOWN(start, PAGE_SIZE),
				      .end = ALIGN_UP(end, PAGE_SIZE),
				      .stride_shift = PAGE_SHIFT,
				      .sender = self,
			      },
			      sizeof(on_stack)));
	request_done(c);
	tlb_hw_unpin();
}

/* --- Spurious faults ------------------------------------------------------------ */

/*
 * mm/fault.c found the page tables allow an access that faulted here: the
 * entry the CPU used was older than a change that gave rights (a change
 * still in flight, whose request has not reached this CPU yet, or one
 * never flushed). One INVLPG, whatever tlb_policy.invpcid says: it drops
 * va in the loaded PCID and every cached walk of that PCID, where INVPCID
 * type 0 drops only the walks for va (mm/fault.c says why that matters).
 * The slot's generation stays: a request still on its way finds the CPU
 * behind, as it would have without the fault.
 */
void flush_tlb_spurious_fault(struct mm *mm, uint64_t va)
{
	struct tlb_cpu *c = this_tlb();

	KASSERT(loaded_mm(c) == mm && !is_lazy(c),
		"cpu%u: spurious fault in mm%llu, which is not loaded and "
		"active here",
		tlb_hw_cpu(), (unsigned long long)mm->context_id);
	tlb_hw_invlpg(va);
	c->stats.spurious_faults++;
	trace_spurious(mm, c->loaded_asid, loaded_slot_gen(c), va);
}

/* --- Teardown ------------------------------------------------------------------- */

static void leave_dead_mm_here(void *arg)
{
	struct tlb_cpu *c = this_tlb();

	/* tlb_bug=ack_before_flush: no held request outlives its mm. */
	if (INJECTED(tlb, TLB_BUG_ACK_BEFORE_FLUSH))
		tlb_ack_flush_held();
	if (loaded_mm(c) != arg)
		return;
	KASSERT(is_lazy(c), "cpu%u runs a thread of mm%llu, which has no users",
		tlb_hw_cpu(),
		(unsigned long long)((struct mm *)arg)->context_id);
	load_mm(c, &kernel_mm);
	c->stats.lazy_shootdowns++;
}

/*
 * No thread uses mm any more, but CPUs that ran it may still have it loaded
 * lazily. lazy_mm=refcount: each of them holds a reference, so this is the
 * last of them letting go. lazy_mm=shootdown: send them to kernel_mm now
 * (one IPI round at exit instead of two atomics on a shared counter at
 * every lazy switch, the 2023 trade).
 */
void tlb_mm_teardown(struct mm *mm)
{
	struct cpumask left;

	if (tlb_policy.lazy_mm == TLB_LAZY_MM_SHOOTDOWN) {
		struct cpumask targets;

		tlb_hw_pin();
		cpumask_copy(&targets, &mm->cpu_mask);
		tlb_hw_call(&targets, leave_dead_mm_here, mm, TLB_HW_WAIT);
		tlb_hw_unpin();
	}
	/*
	 * Every CPU has let go: a CPU switching away clears its bit (step 6)
	 * before the thread it ran is retired and drops its reference, and
	 * a lazy CPU before it acknowledges the shootdown (or, with
	 * refcount, before it drops its lazy reference).
	 */
	cpumask_copy(&left, &mm->cpu_mask);
	KASSERT(cpumask_empty(&left),
		"mm%llu torn down while %u CPUs still have it loaded",
		(unsigned long long)mm->context_id, cpumask_weight(&left));
	/* TLBs may keep its global PCID's entries: reused after a wrap. */
	tlb_global_asid_take_back(mm);
}

/* --- Bring-up ------------------------------------------------------------------- */

/*
 * What the CPU allows of what was asked (mm/tlb.h). PCID only with global
 * pages: kernel entries must survive CR3 loads, and INVLPG must reach them
 * in every PCID (Kernel mappings, above). INVPCID only with PCID: without
 * it there is one context, and INVLPG or a CR3 load does the job. Usable
 * means in CPUID and not taken away by a known erratum (cpu/cpu_quirks.c:
 * on some Alder and Raptor Lake parts INVLPG misses global entries while
 * PCID is on, which is exactly what the second rule relies on). INVLPGB
 * only with PCID: its broadcasts name address spaces by PCID, and with
 * CR4.PCIDE clear there are no PCIDs to name.
 */
struct tlb_policy tlb_policy_settle(const struct tlb_policy *asked,
				    const struct cpu_features *cpu)
{
	struct tlb_policy p = *asked;

	p.pcid = asked->pcid && cpu_pcid_usable(cpu) && cpu->pge;
	p.invpcid = asked->invpcid && p.pcid && cpu_invpcid_usable(cpu);
	p.invlpgb = asked->invlpgb && cpu->invlpgb &&
		    (p.pcid || INJECTED(tlb, TLB_BUG_INVLPGB_WITHOUT_PCID));
	p.invlpgb_max_pages = cpu->invlpgb_max_pages;
	return p;
}

/*
 * tlb_policy.pcid changed at run time (the benchmarks switch it between
 * rows) while this CPU runs on kernel_mm with CR3's PCID 0, which setting
 * CR4.PCIDE requires: PCID follows the policy, and the TLB and every slot
 * start empty, so no slot claims entries made in the other mode.
 */
void tlb_pcid_changed_here(void)
{
	struct tlb_cpu *c = this_tlb();

	KASSERT(loaded_mm(c) == &kernel_mm && !is_lazy(c),
		"cpu%u changes PCID with a user address space loaded",
		tlb_hw_cpu());
	tlb_hw_set_pcide(tlb_policy.pcid);
	tlb_hw_flush_everything();
	for (unsigned asid = 0; asid < TLB_ASID_SLOTS_MAX; asid++)
		c->slots[asid] = (struct tlb_asid_slot){0};
	c->next_asid = 0;
}

void tlb_init_cpu(uint64_t kernel_root)
{
	struct tlb_cpu *c = &tlb_cpus[tlb_hw_cpu()];

	tlb_hw_cpu_state_set(c);
	kernel_mm.root = kernel_root;
	kernel_mm.refcount = 1; /* never freed */
	shared_store(&c->loaded_mm, &kernel_mm, __ATOMIC_RELEASE);
	c->loaded_asid = TLB_ASID_KERNEL;
	/* CR3's PCID must be 0 when CR4.PCIDE is set. */
	tlb_hw_load_cr3(cr3_make(kernel_root, 0, false));
	tlb_hw_set_pcide(tlb_policy.pcid);
	if (mask_tracked(&kernel_mm))
		cpumask_set_atomic(&kernel_mm.cpu_mask, tlb_hw_cpu());
}
