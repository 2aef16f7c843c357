// SPDX-License-Identifier: MIT
/*
 * The oracle: judges every simulated access.
 *
 * An access is checked against the page tables of the address space it is
 * made in (or the kernel root, for the kernel half), as they are at that
 * moment: the real 4-level tables, read with pt_translate (mm/pagetable.c).
 * The translation the simulated hardware produced must agree with them:
 * the same frame, and write permission for a write. One exception: while
 * the flush for a change has not yet returned on the CPU that made it, the
 * translation from before the change is still allowed. The change leaves
 * a permit {address space, page, old frame, old permission} when it edits
 * the tables; the permit goes when its flush returns. After that no CPU
 * may use the old translation, in any PCID, ever.
 *
 * The oracle is strict about later calls too: once any map, unmap,
 * protect or revoke of an address has returned (or a kernel stack was
 * handed out), no translation permitted before that call began is allowed
 * there any more, whichever change's permit it was (oracle_settled). A
 * map that returns while an earlier unmap's flush is still under way must
 * have flushed that unmap's entries itself. Permits given after the call
 * began stay: a change begun since may still be clearing what the call
 * left (a second remap of a kernel page, an unmap that had not taken the
 * lock yet), and its old translation is allowed until it returns.
 *
 * A translation to a freed frame is never allowed, permit or not: pages
 * are freed only after their flush returned, so nothing can reach them.
 * Nor is one made before the frame was freed and handed out again (the
 * MMU tells a frame's lives apart): through it a CPU reads or writes the
 * memory of the frame's new owner.
 * A fault is never wrong here (a stale read-only or absent entry only
 * costs the kernel a spurious fault); it is counted. Whether the kernel
 * retries it is the kernel's own rule, mm/fault.c, which access() in
 * tlb_sim_kernel.c runs and checks before the access comes here.
 */
#include "tests/host/tlb_sim.h"

#include <stdio.h>

/* Changes in flight at once: a few per CPU at most. */
#define SIM_PERMITS_MAX 256

/* A translation still allowed: its change's flush has not returned. */
struct permit {
	int owner;
	uint64_t va;
	uint32_t frame;
	bool writable;
	unsigned token; /* the change */
	unsigned given; /* oracle_mark's count when it was given */
	/* oracle_permit_new: any frame of owner born after this */
	bool any_new;
	uint64_t born_after;
};

static struct permit permits[SIM_PERMITS_MAX];
static unsigned npermits, last_token, moments;

struct sim_counts sim_counts;

void oracle_reset(void)
{
	npermits = 0;
	last_token = 0;
	moments = 0;
}

unsigned oracle_begin_change(void)
{
	return ++last_token;
}

void oracle_permit(unsigned token, int owner, uint64_t va, uint32_t frame,
		   bool writable)
{
	if (npermits == SIM_PERMITS_MAX)
		sim_fail("more than %d changes in flight", SIM_PERMITS_MAX);
	permits[npermits++] = (struct permit){owner, va,	frame, writable,
					      token, ++moments, false, 0};
}

void oracle_permit_new(unsigned token, int owner, uint64_t va)
{
	oracle_permit(token, owner, va, 0, true);
	permits[npermits - 1].any_new = true;
	permits[npermits - 1].born_after = mmu_births();
}

void oracle_mapped(int owner, uint64_t va, uint32_t frame, bool writable)
{
	unsigned n = npermits;

	for (unsigned i = 0; i < n; i++) {
		bool seen = false;

		if (permits[i].owner != owner || permits[i].va != va)
			continue;
		for (unsigned j = 0; j < i && !seen; j++)
			seen = permits[j].token == permits[i].token &&
			       permits[j].owner == owner && permits[j].va == va;
		if (!seen)
			oracle_permit(permits[i].token, owner, va, frame,
				      writable);
	}
}

void oracle_end_change(unsigned token, const struct mm *mm)
{
	unsigned kept = 0;

	for (unsigned i = 0; i < npermits; i++) {
		if (permits[i].token != token)
			permits[kept++] = permits[i];
	}
	npermits = kept;
	sim_counts.flushes++;
	if (mm)
		sim_trace("  flush returned, mm%llu gen %llu",
			  (unsigned long long)mm->context_id,
			  (unsigned long long)SIM_PEEK(&mm->tlb_gen));
	else
		sim_trace("  kernel flush returned");
}

unsigned oracle_mark(void)
{
	return ++moments;
}

void oracle_settled(int owner, uint64_t va, unsigned since)
{
	unsigned kept = 0;

	/* Marks (frame 0) stay: their changes are still running. */
	for (unsigned i = 0; i < npermits; i++) {
		if (permits[i].owner != owner || permits[i].va != va ||
		    !permits[i].frame || permits[i].given > since)
			permits[kept++] = permits[i];
	}
	npermits = kept;
}

unsigned oracle_pending(void)
{
	return npermits;
}

static bool permitted(int owner, uint64_t va, uint32_t frame, bool write)
{
	for (unsigned i = 0; i < npermits; i++) {
		const struct permit *p = &permits[i];

		if (p->owner != owner || p->va != va || (write && !p->writable))
			continue;
		if (p->frame == frame)
			return true;
		if (p->any_new && mmu_frame(frame)->owner == owner &&
		    mmu_frame(frame)->born > p->born_after)
			return true;
	}
	return false;
}

void oracle_judge(unsigned cpu, int owner, uint64_t va, const char *what,
		  bool write, struct sim_xlate x, uint32_t now,
		  bool now_writable)
{
	const char *verb = write ? "writes" : "reads";
	char got[80], want[80];

	sim_counts.accesses++;
	if (!x.present || (write && !x.writable)) {
		sim_counts.faults++;
		sim_trace("%s %s: page fault", verb, what);
		return;
	}
	if (mmu_stale(x.frame, x.gen))
		sim_fail("cpu%u %s %s (%#llx) through %s (PCID %u): %s was "
			 "freed",
			 cpu, verb, what, (unsigned long long)va,
			 x.tlb_hit ? "a TLB entry" : "a walk", mmu_pcid(cpu),
			 mmu_name_stale(x.frame, got, sizeof(got)));
	mmu_name(x.frame, got, sizeof(got));
	if (x.frame == now && (!write || now_writable)) {
		sim_trace("%s %s: %s%s", verb, what, got,
			  x.tlb_hit ? " (TLB hit)" : "");
		return;
	}
	if (permitted(owner, va, x.frame, write)) {
		sim_counts.stale_ok++;
		sim_trace("%s %s: stale %s, allowed (its change is running)",
			  verb, what, got);
		return;
	}
	if (now)
		mmu_name(now, want, sizeof(want));
	else
		snprintf(want, sizeof(want), "no mapping");
	sim_fail("cpu%u %s %s (%#llx) through %s (PCID %u, %s): got %s%s, "
		 "but the page tables say %s%s, and no flush of that change "
		 "is still running",
		 cpu, verb, what, (unsigned long long)va,
		 x.tlb_hit ? "a TLB entry" : "a walk", mmu_pcid(cpu),
		 SIM_PEEK(&tlb_cpus[cpu].is_lazy) ? "lazy" : "active", got,
		 x.writable ? " writable" : "", want,
		 now && !now_writable ? " read-only" : "");
}
