// SPDX-License-Identifier: MIT
/*
 * The simulated MMU: what each CPU caches of the page tables, modelled on
 * the Intel SDM Vol. 3A, 4.10 ("Caching Translation Information").
 *
 * Page tables are two levels here: a root (CR3) whose entries point at
 * page tables of SIM_SLOTS pages each, one per 2 MiB region. The kernel
 * half is one table of SIM_KPAGES global pages, shared by every root. A
 * frame is never reused within a run, so a freed frame stays recognisable.
 *
 * Each CPU caches:
 *   TLB entries       {PCID, page, frame, writable, global}
 *   walk entries      {PCID, region, page table}: the paging-structure
 *                     (PDE) cache, which lets the walker skip the root and
 *                     read the page table directly
 * and drops them as the SDM says:
 *   MOV to CR3        without no-flush (or with CR4.PCIDE off): the loaded
 *                     PCID's non-global entries and walks; with no-flush:
 *                     nothing. PCID bits or no-flush with PCIDE off: a
 *                     failure (#GP on hardware; QEMU TCG hangs)
 *   INVLPG            the page in the current PCID, the page's global
 *                     entry, and every walk of the current PCID
 *   INVPCID 0         the page in the given PCID (not global), and every
 *                     walk of that PCID; 1: the PCID's non-global entries
 *                     and walks; 2: everything
 *   CR4.PGE toggle    everything; CR4.PCIDE 1 -> 0 likewise
 *   page fault        the faulting page's entry and walk (4.10.4.3)
 * Besides, the hardware may drop any entry at any time and fill entries
 * speculatively for the loaded PCID (SIM_RANDOM runs do both).
 *
 * What this file checks: CR3 values (a live root, PCID bits only with
 * PCIDE), INVPCID only when the policy has it, the walker never reading a
 * freed table, and that a frame being freed is not in use: no walk of a
 * loaded PCID goes through a freed table (the walker may follow it
 * speculatively at any moment), no entry of a CPU running user code in the
 * loaded PCID maps a freed page, no global entry maps a freed kernel page,
 * and no CR3 holds a freed root. Entries of other PCIDs may outlive their
 * frames: the protocol flushes them before the PCID is loaded again, which
 * the check at every CR3 load and every access verifies.
 */
#include "tests/host/tlb_sim.h"

#include <stdio.h>
#include <string.h>

/* Small, so that entries get evicted as on a real, full TLB. */
#define SIM_TLB_ENTRIES	 32
#define SIM_WALK_ENTRIES 8
/* The 2 MiB region of an address: what a walk entry caches. */
#define REGION_SHIFT 21

struct tlb_entry {
	bool valid, global, writable;
	uint16_t pcid;
	uint64_t vpn;
	uint32_t frame;
};

struct walk_entry {
	bool valid;
	uint16_t pcid;
	uint64_t region;
	uint32_t table;
};

struct sim_mmu {
	uint32_t root; /* CR3's page-table root */
	uint16_t pcid; /* CR3's PCID (0 with PCIDE off) */
	bool pcide;
	bool user_active;
	struct tlb_entry tlb[SIM_TLB_ENTRIES];
	struct walk_entry walk[SIM_WALK_ENTRIES];
	unsigned tlb_victim, walk_victim; /* round-robin replacement */
};

static struct sim_mmu mmus[SIM_CPUS_MAX];
static unsigned ncpus;
static struct sim_frame frames[SIM_FRAMES_MAX];
static uint32_t nframes;
static uint32_t kernel_root, kernel_table;

/* --- Frames -------------------------------------------------------------------- */

uint32_t mmu_alloc(enum sim_frame_kind kind, int owner)
{
	if (nframes + 1 >= SIM_FRAMES_MAX)
		sim_fail("the simulator ran out of frames (%d)",
			 SIM_FRAMES_MAX);
	frames[++nframes] = (struct sim_frame){.kind = (uint8_t)kind,
					       .owner = (int8_t)owner};
	return nframes;
}

struct sim_frame *mmu_frame(uint32_t frame)
{
	return &frames[frame];
}

uint64_t mmu_phys(uint32_t frame)
{
	return SIM_PHYS_BASE + (uint64_t)frame * PAGE_SIZE;
}

/* The frame at phys, which must be one the simulator handed out. */
static uint32_t frame_at(uint64_t phys, const char *what)
{
	uint64_t n = (phys - SIM_PHYS_BASE) / PAGE_SIZE;

	if (phys < SIM_PHYS_BASE || !IS_ALIGNED(phys, PAGE_SIZE) || !n ||
	    n > nframes)
		sim_fail("%s: %#llx is no frame of the simulated machine", what,
			 (unsigned long long)phys);
	return (uint32_t)n;
}

const char *mmu_name(uint32_t frame, char *buf, size_t size)
{
	static const char *const kinds[] = {"unused", "page", "page table",
					    "root", "kernel page"};
	const struct sim_frame *f = &frames[frame];

	if (f->owner < 0)
		snprintf(buf, size, "frame %u (%s)", frame, kinds[f->kind]);
	else
		snprintf(buf, size, "frame %u (%s of mm%d)", frame,
			 kinds[f->kind], f->owner + 1);
	return buf;
}

void mmu_reset(unsigned cpus)
{
	ncpus = cpus;
	memset(mmus, 0, sizeof(mmus));
	nframes = 0;
	kernel_root = mmu_alloc(FRAME_ROOT, -1);
	kernel_table = mmu_alloc(FRAME_TABLE, -1);
}

uint32_t mmu_kernel_root(void)
{
	return kernel_root;
}

uint32_t mmu_kernel_table(void)
{
	return kernel_table;
}

uint32_t mmu_root(unsigned cpu)
{
	return mmus[cpu].root;
}

uint16_t mmu_pcid(unsigned cpu)
{
	return mmus[cpu].pcid;
}

void mmu_set_user_active(unsigned cpu, bool active)
{
	mmus[cpu].user_active = active;
}

/* --- Invalidation ------------------------------------------------------------- */

static bool user_va(uint64_t va, unsigned *table, unsigned *slot)
{
	uint64_t off = va - SIM_USER_BASE;

	*table = (unsigned)(off / LARGE_PAGE_SIZE);
	*slot = (unsigned)((off % LARGE_PAGE_SIZE) >> PAGE_SHIFT);
	return va >= SIM_USER_BASE && *table < SIM_TABLES && *slot < SIM_SLOTS;
}

static bool kernel_va(uint64_t va, unsigned *slot)
{
	*slot = (unsigned)((va - SIM_KERNEL_BASE) >> PAGE_SHIFT);
	return va >= SIM_KERNEL_BASE && *slot < SIM_KPAGES;
}

/* Drops the entries matching pcid (any if all), va's page (any if ~0). */
static void drop(struct sim_mmu *m, bool all_pcids, uint16_t pcid, uint64_t va,
		 bool globals)
{
	for (unsigned i = 0; i < SIM_TLB_ENTRIES; i++) {
		struct tlb_entry *e = &m->tlb[i];
		bool tagged = all_pcids || e->pcid == pcid;

		if (va != UINT64_MAX && e->vpn != va >> PAGE_SHIFT)
			continue;
		if (e->global ? globals : tagged)
			e->valid = false;
	}
	for (unsigned i = 0; i < SIM_WALK_ENTRIES; i++) {
		if (all_pcids || m->walk[i].pcid == pcid)
			m->walk[i].valid = false;
	}
}

static struct sim_mmu *this_mmu(void)
{
	return &mmus[sim_cpu()];
}

/* Whether the walk entries of the loaded PCID point at a freed table. */
static void check_loaded_walks(unsigned cpu, const char *when)
{
	const struct sim_mmu *m = &mmus[cpu];
	char name[64];

	for (unsigned i = 0; i < SIM_WALK_ENTRIES; i++) {
		const struct walk_entry *w = &m->walk[i];

		if (w->valid && w->pcid == m->pcid && frames[w->table].dead)
			sim_fail(
				"cpu%u %s PCID %u, whose cached walk for "
				"%#llx goes through freed %s: the walker "
				"may follow it at any moment",
				cpu, when, w->pcid,
				(unsigned long long)(w->region << REGION_SHIFT),
				mmu_name(w->table, name, sizeof(name)));
	}
}

void tlb_hw_load_cr3(uint64_t cr3)
{
	struct sim_mmu *m = this_mmu();
	uint16_t pcid = (uint16_t)(cr3 & CR3_PCID_MASK);
	bool keep = cr3 & CR3_NOFLUSH;
	uint32_t root;
	char name[64];

	sim_point();
	sim_memory_serialize();
	if (!m->pcide && (pcid || keep))
		sim_fail("CR3 load of %#llx: PCID or no-flush bits with "
			 "CR4.PCIDE off",
			 (unsigned long long)cr3);
	root = frame_at(cr3 & ~(CR3_PCID_MASK | CR3_NOFLUSH), "CR3 load");
	if (frames[root].kind != FRAME_ROOT || frames[root].dead)
		sim_fail("CR3 load of %s", mmu_name(root, name, sizeof(name)));
	if (!keep)
		drop(m, false, pcid, UINT64_MAX, false);
	m->root = root;
	m->pcid = pcid;
	if (frames[root].owner < 0)
		snprintf(name, sizeof(name), "the kernel");
	else
		snprintf(name, sizeof(name), "mm%d", frames[root].owner + 1);
	sim_trace("CR3 <- root of %s, PCID %u, %s", name, pcid,
		  keep ? "no-flush (keeps the PCID's entries)"
		       : "flush (drops the PCID's entries)");
	check_loaded_walks(sim_cpu(), "loads");
}

void tlb_hw_set_pcide(bool on)
{
	struct sim_mmu *m = this_mmu();

	sim_point();
	sim_memory_serialize();
	if (on && m->pcid)
		sim_fail("CR4.PCIDE set while CR3 holds PCID %u (#GP)",
			 m->pcid);
	if (m->pcide && !on)
		drop(m, true, 0, UINT64_MAX, true);
	m->pcide = on;
	sim_trace("CR4.PCIDE <- %d", on);
}

void tlb_hw_invlpg(uint64_t va)
{
	struct sim_mmu *m = this_mmu();

	sim_point();
	sim_memory_serialize();
	drop(m, false, m->pcid, va, true);
	sim_trace("INVLPG %#llx (PCID %u and global)", (unsigned long long)va,
		  m->pcid);
}

static void check_invpcid(unsigned type, uint16_t pcid)
{
	if (!tlb_policy.invpcid)
		sim_fail("INVPCID type %u with invpcid off (#UD where the "
			 "CPU lacks it)",
			 type);
	if (!this_mmu()->pcide && pcid)
		sim_fail("INVPCID type %u for PCID %u with CR4.PCIDE off (#GP)",
			 type, pcid);
}

void tlb_hw_invpcid_address(uint16_t pcid, uint64_t va)
{
	sim_point();
	sim_memory_serialize();
	check_invpcid(0, pcid);
	drop(this_mmu(), false, pcid, va, false);
	sim_trace("INVPCID address %#llx PCID %u", (unsigned long long)va,
		  pcid);
}

void tlb_hw_invpcid_context(uint16_t pcid)
{
	sim_point();
	sim_memory_serialize();
	check_invpcid(1, pcid);
	drop(this_mmu(), false, pcid, UINT64_MAX, false);
	sim_trace("INVPCID context PCID %u", pcid);
}

void tlb_hw_invpcid_all(void)
{
	sim_point();
	sim_memory_serialize();
	check_invpcid(2, 0);
	drop(this_mmu(), true, 0, UINT64_MAX, true);
	sim_trace("INVPCID all, globals included");
}

void tlb_hw_flush_everything(void)
{
	sim_point();
	sim_memory_serialize();
	drop(this_mmu(), true, 0, UINT64_MAX, true);
	sim_trace("CR4.PGE toggled: everything dropped");
}

/* --- Freeing --------------------------------------------------------------------- */

void mmu_free(uint32_t frame, const char *why)
{
	struct sim_frame *f = &frames[frame];
	char name[64];

	mmu_name(frame, name, sizeof(name));
	if (f->dead)
		sim_fail("%s frees %s twice", why, name);
	for (unsigned cpu = 0; cpu < ncpus; cpu++) {
		const struct sim_mmu *m = &mmus[cpu];

		if (m->root == frame)
			sim_fail("%s frees %s, which cpu%u has in CR3", why,
				 name, cpu);
		for (unsigned i = 0; i < SIM_WALK_ENTRIES; i++) {
			const struct walk_entry *w = &m->walk[i];

			if (w->valid && w->table == frame && w->pcid == m->pcid)
				sim_fail("%s frees %s while cpu%u's loaded "
					 "PCID %u still caches a walk through "
					 "it: the walker may follow it at any "
					 "moment",
					 why, name, cpu, m->pcid);
		}
		for (unsigned i = 0; i < SIM_TLB_ENTRIES; i++) {
			const struct tlb_entry *e = &m->tlb[i];

			if (!e->valid || e->frame != frame)
				continue;
			if (e->global || (e->pcid == m->pcid && m->user_active))
				sim_fail("%s frees %s while cpu%u (running "
					 "%s) still maps %#llx to it in "
					 "%s",
					 why, name, cpu,
					 m->user_active ? "user code"
							: "the kernel",
					 (unsigned long long)(e->vpn
							      << PAGE_SHIFT),
					 e->global ? "a global entry"
						   : "its loaded PCID");
		}
	}
	f->dead = true;
	sim_counts.frees++;
	sim_trace("%s frees %s", why, name);
}

void tlb_hw_free_frame(uint64_t phys)
{
	sim_point();
	mmu_free(frame_at(phys, "tlb_hw_free_frame"), "tlb_hw_free_frame");
}

/* --- The page walker -------------------------------------------------------------- */

static void insert_tlb(struct sim_mmu *m, struct tlb_entry e)
{
	unsigned at = SIM_TLB_ENTRIES;

	for (unsigned i = 0; i < SIM_TLB_ENTRIES && at == SIM_TLB_ENTRIES;
	     i++) {
		const struct tlb_entry *old = &m->tlb[i];

		if (!old->valid || (old->vpn == e.vpn && old->pcid == e.pcid &&
				    old->global == e.global))
			at = i;
	}
	if (at == SIM_TLB_ENTRIES) {
		at = m->tlb_victim;
		m->tlb_victim = (m->tlb_victim + 1) % SIM_TLB_ENTRIES;
	}
	m->tlb[at] = e;
}

static void insert_walk(struct sim_mmu *m, struct walk_entry w)
{
	unsigned at = SIM_WALK_ENTRIES;

	for (unsigned i = 0; i < SIM_WALK_ENTRIES && at == SIM_WALK_ENTRIES;
	     i++) {
		if (!m->walk[i].valid || (m->walk[i].pcid == w.pcid &&
					  m->walk[i].region == w.region))
			at = i;
	}
	if (at == SIM_WALK_ENTRIES) {
		at = m->walk_victim;
		m->walk_victim = (m->walk_victim + 1) % SIM_WALK_ENTRIES;
	}
	m->walk[at] = w;
}

static const struct tlb_entry *lookup(const struct sim_mmu *m, uint64_t va)
{
	for (unsigned i = 0; i < SIM_TLB_ENTRIES; i++) {
		const struct tlb_entry *e = &m->tlb[i];

		if (e->valid && e->vpn == va >> PAGE_SHIFT &&
		    (e->global || e->pcid == m->pcid))
			return e;
	}
	return NULL;
}

/* The page table a walk of va uses: a cached walk, or the root's entry. */
static uint32_t walk_table(unsigned cpu, struct sim_mmu *m, uint64_t va,
			   unsigned table_index)
{
	uint64_t region = va >> REGION_SHIFT;
	uint32_t table;
	char name[64];

	for (unsigned i = 0; i < SIM_WALK_ENTRIES; i++) {
		const struct walk_entry *w = &m->walk[i];

		if (w->valid && w->pcid == m->pcid && w->region == region) {
			table = w->table;
			goto found;
		}
	}
	table = frames[m->root].next[table_index];
	if (!table)
		return 0;
	insert_walk(m, (struct walk_entry){true, m->pcid, region, table});
found:
	if (frames[table].dead)
		sim_fail("cpu%u's page walker reads freed %s for %#llx (PCID "
			 "%u)",
			 cpu, mmu_name(table, name, sizeof(name)),
			 (unsigned long long)va, m->pcid);
	return table;
}

/* Translates va on cpu; fills the TLB from a walk when it misses. */
static struct sim_xlate walk(unsigned cpu, uint64_t va)
{
	struct sim_mmu *m = &mmus[cpu];
	const struct tlb_entry *e = lookup(m, va);
	struct sim_xlate x = {0};
	unsigned table_index, slot;
	const struct sim_frame *table;
	bool global = false;

	if (e)
		return (struct sim_xlate){true, e->frame, e->writable, true, 0};
	if (user_va(va, &table_index, &slot)) {
		x.via_table = walk_table(cpu, m, va, table_index);
	} else if (kernel_va(va, &slot)) {
		x.via_table = kernel_table;
		global = true;
	}
	if (!x.via_table)
		return x;
	table = &frames[x.via_table];
	x.frame = table->next[slot];
	x.writable = table->writable[slot];
	x.present = x.frame != 0;
	if (x.present)
		insert_tlb(m, (struct tlb_entry){true, global, x.writable,
						 global ? 0 : m->pcid,
						 va >> PAGE_SHIFT, x.frame});
	return x;
}

struct sim_xlate mmu_translate(unsigned cpu, uint64_t va, bool write)
{
	struct sim_xlate x = walk(cpu, va);

	if (!x.present || (write && !x.writable)) {
		/* A page fault drops what the failed translation used. */
		struct sim_mmu *m = &mmus[cpu];

		for (unsigned i = 0; i < SIM_TLB_ENTRIES; i++) {
			struct tlb_entry *e = &m->tlb[i];

			if (e->vpn == va >> PAGE_SHIFT &&
			    (e->global || e->pcid == m->pcid))
				e->valid = false;
		}
		for (unsigned i = 0; i < SIM_WALK_ENTRIES; i++) {
			if (m->walk[i].pcid == m->pcid &&
			    m->walk[i].region == va >> REGION_SHIFT)
				m->walk[i].valid = false;
		}
	}
	return x;
}

/* What the hardware may do on its own, equally often. */
enum hw_event {
	EVENT_EVICT_ENTRY, /* the TLB drops an entry */
	EVENT_EVICT_WALK,  /* the walk cache drops one */
	EVENT_FILL_USER,   /* the walker prefetches a user page... */
	EVENT_FILL_KERNEL, /* ...or a kernel page, for the loaded PCID */
	EVENT_KINDS
};

void mmu_random_event(void)
{
	unsigned cpu = (unsigned)sim_random(ncpus);
	struct sim_mmu *m = &mmus[cpu];

	switch ((enum hw_event)sim_random(EVENT_KINDS)) {
	case EVENT_EVICT_ENTRY:
		m->tlb[sim_random(SIM_TLB_ENTRIES)].valid = false;
		break;
	case EVENT_EVICT_WALK:
		m->walk[sim_random(SIM_WALK_ENTRIES)].valid = false;
		break;
	case EVENT_FILL_USER:
		if (m->root)
			walk(cpu, sim_page_va((unsigned)sim_random(SIM_PAGES)));
		break;
	case EVENT_FILL_KERNEL:
		if (m->root)
			walk(cpu,
			     sim_kpage_va((unsigned)sim_random(SIM_KPAGES)));
		break;
	case EVENT_KINDS:
		break;
	}
}
