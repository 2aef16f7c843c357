// SPDX-License-Identifier: MIT
/*
 * The simulated MMU: physical memory, and what each CPU caches of the
 * page tables, modelled on the Intel SDM Vol. 3A, 4.10 ("Caching
 * Translation Information").
 *
 * Physical memory is an array of 4 KiB frames. The page tables in it are
 * real x86-64 4-level tables, built and changed by the kernel's own
 * mm/pagetable.c (through mm/mm.c, mm/kmap.c, mm/kstack.c); this file
 * only reads them, as the page walker does. A freed frame goes on a free
 * list and is the next one handed out (last in, first out, zeroed), as a
 * page or a page table of whoever asks next: a use after free reaches
 * someone else's memory, as on hardware. Each frame counts its lives
 * (gen); every TLB entry and paging-structure-cache entry records the
 * life of the frame it points to when it was filled, so that one filled
 * before a free is recognised after it, whether the frame is still free
 * or lives again ("frame 7 (reused as page of mm3, was page of mm1)").
 *
 * Each CPU caches (4.10.2, 4.10.3):
 *   TLB entries     {PCID, page number, frame, writable, user, global}
 *                   (4 KiB pages only: nothing here maps a larger one)
 *   PML4E cache     {PCID, VA 47:39, PDPT, rights}    4.10.3.1
 *   PDPTE cache     {PCID, VA 47:30, page directory}
 *   PDE cache       {PCID, VA 47:21, page table}
 * Paging-structure-cache entries are tagged with the PCID current when
 * they were filled, for both halves of the address space: the global bit
 * applies to TLB entries only (4.10.2.4). The walker uses the longest
 * matching paging-structure-cache entry of the current PCID (4.10.3.2),
 * then reads memory, and fails the run if it reads a freed table.
 *
 * What each operation invalidates (4.10.4.1), exactly and no more, since
 * dropping more than the SDM guarantees would hide bugs:
 *   MOV to CR3, PCIDE=0         PCID 0's non-global TLB entries and all of
 *                               PCID 0's paging-structure-cache entries
 *   MOV to CR3, PCIDE=1, b63=0  the same for the PCID in bits 11:0
 *   MOV to CR3, PCIDE=1, b63=1  nothing
 *   INVLPG va                   va's TLB entries of the current PCID, va's
 *                               global entries in every PCID, and every
 *                               paging-structure-cache entry of the
 *                               current PCID (whatever its address)
 *   INVPCID 0 (pcid, va)        va's non-global TLB entries of pcid and
 *                               pcid's paging-structure-cache entries that
 *                               would be used to translate va
 *   INVPCID 1 (pcid)            pcid's non-global entries, all its
 *                               paging-structure-cache entries
 *   INVPCID 2                   everything, global entries included
 *   INVPCID 3                   every PCID's non-global entries and all
 *                               paging-structure caches (no caller in
 *                               mm/tlb.c: modelled, not in mm/tlb_hw.h)
 *   MOV to CR4 changing PGE     everything, every PCID
 *   MOV to CR4, PCIDE 1 -> 0    everything, every PCID
 *   MOV to CR4, PCIDE 0 -> 1    nothing (not in the list of 4.10.4.1)
 *   page fault on va            va's TLB entries of the current PCID and
 *                               the paging-structure-cache entries of the
 *                               current PCID that would be used for va
 *                               (global ones for va too: the SDM says the
 *                               fault must not recur unless the tables in
 *                               memory cause it)
 * Illegal uses fail the run: PCID bits or bit 63 in CR3 with PCIDE off,
 * PCIDE set with a non-zero PCID loaded (#GP), INVPCID with the policy's
 * invpcid off (#UD on a CPU without it), a CR3 root that is no live
 * frame.
 *
 * Hardware freedom (4.10.2.1, 4.10.3.1): random runs evict any entry at
 * any time and fill any mapping for the loaded PCID, user or kernel half,
 * through the cached walks. The speculative-refill mode (mmu_set_refill)
 * does the most a CPU may: after every invalidation and CR3 load the
 * walker refills every mapping the simulated kernel uses, in the loaded
 * PCID, deterministically, so that exhaustive searches see it.
 *
 * What is checked when a frame is freed (mmu_free_frame): no CPU has it
 * as CR3 root; no paging-structure-cache entry of a CPU's loaded PCID
 * points at it (the walker may follow it at any moment, lazy CPU or not);
 * no global TLB entry maps it; no TLB entry of a loaded PCID maps it at a
 * kernel address, or at a user address on a CPU running user code; a
 * shared-memory page, no live address space's page tables still map it.
 * At every CR3 load: the newly loaded PCID caches no walk through a table
 * freed since the walk was cached. Together: a stale cached walk in a
 * PCID that is not loaded may outlive its table only if the PCID is
 * flushed before it is loaded again. Entries filled in an earlier life
 * of a frame are stale, never "the same frame": an access through one, or
 * a walk, fails the run even when the frame has a new owner.
 */
#include "tests/host/tlb_sim.h"
#include "mm/pagetable.h"

#include <stdio.h>
#include <string.h>

/* Small, so that entries get evicted as on a real, full TLB. */
#define SIM_TLB_ENTRIES 96
#define SIM_PSC_ENTRIES 32 /* per level */
#define LEVELS		4
#define PSC_LEVELS	3 /* PML4E, PDPTE and PDE caches */
#define INDEX_BITS	9
#define VA_BITS		48
#define ANY_VA		UINT64_MAX

struct tlb_entry {
	bool valid, global, writable, user;
	uint16_t pcid;
	uint64_t vpn;
	uint32_t frame;
	uint32_t gen; /* the frame's life when the entry was filled */
};

/* A paging-structure-cache entry: the table a walk of tag goes on to. */
struct psc_entry {
	bool valid, writable, user;
	uint16_t pcid;
	uint64_t tag;  /* VA 47:39, 47:30 or 47:21 */
	uint64_t next; /* physical address of the next table */
	uint32_t gen;  /* the next table's life when the entry was filled */
};

struct sim_mmu {
	uint32_t root; /* CR3's page-table root */
	uint16_t pcid; /* CR3's PCID (0 with PCIDE off) */
	bool pcide;
	bool user_active;
	struct tlb_entry tlb[SIM_TLB_ENTRIES];
	/* [0] PML4E cache, [1] PDPTE cache, [2] PDE cache */
	struct psc_entry psc[PSC_LEVELS][SIM_PSC_ENTRIES];
	unsigned tlb_victim, psc_victim[PSC_LEVELS]; /* round-robin */
};

static struct sim_mmu mmus[SIM_CPUS_MAX];
/* Each CPU's INVLPGBs not completed yet, oldest first. */
struct broadcast_queue {
	struct tlb_hw_broadcast b[SIM_BROADCASTS_MAX];
	unsigned n;
};
static struct broadcast_queue outstanding[SIM_CPUS_MAX];
static unsigned ncpus;
static bool refill;

/* Physical memory: frame n at SIM_PHYS_BASE + n * PAGE_SIZE (0: none). */
static uint8_t ram[SIM_FRAMES_MAX][PAGE_SIZE] __aligned(PAGE_SIZE);
static struct sim_frame frames[SIM_FRAMES_MAX];
static uint32_t nframes; /* the highest frame ever handed out */
/* Freed frames, the last freed on top: handed out first. */
static uint32_t free_list[SIM_FRAMES_MAX];
static uint32_t nfree;
static uint64_t births;
static int alloc_owner[SIM_CPUS_MAX + 1]; /* [SIM_CPUS_MAX]: main */

/* --- Frames -------------------------------------------------------------------- */

static int *owner_slot(void)
{
	int cpu = sim_current();

	return &alloc_owner[cpu < 0 ? SIM_CPUS_MAX : cpu];
}

void mmu_set_owner(int owner)
{
	*owner_slot() = owner;
}

/* A frame never handed out before: the next one up. */
static uint32_t fresh_frame(void)
{
	if (nframes + 1 >= SIM_FRAMES_MAX)
		sim_fail("the simulator ran out of frames (%d)",
			 SIM_FRAMES_MAX);
	return ++nframes;
}

/* Starts a frame's next life: its old one is kept for messages. */
static uint64_t hand_out(uint32_t n)
{
	struct sim_frame *f = &frames[n];

	*f = (struct sim_frame){.kind = FRAME_DATA,
				.owner = (int8_t)*owner_slot(),
				.gen = f->gen + 1,
				.born = ++births,
				.was_kind = f->kind,
				.was_level = f->level,
				.was_owner = f->owner};
	memset(ram[n], 0, PAGE_SIZE);
	return mmu_phys(n);
}

uint64_t mmu_alloc_frame(void)
{
	return hand_out(nfree ? free_list[--nfree] : fresh_frame());
}

uint64_t mmu_alloc_fresh_frame(void)
{
	return hand_out(fresh_frame());
}

struct sim_frame *mmu_frame(uint32_t frame)
{
	return &frames[frame];
}

uint64_t mmu_phys(uint32_t frame)
{
	return SIM_PHYS_BASE + (uint64_t)frame * PAGE_SIZE;
}

uint32_t mmu_frame_at(uint64_t phys, const char *what)
{
	uint64_t n = (phys - SIM_PHYS_BASE) / PAGE_SIZE;

	if (phys < SIM_PHYS_BASE + PAGE_SIZE || !n || n > nframes)
		sim_fail("%s: %#llx is no frame of the simulated machine", what,
			 (unsigned long long)phys);
	return (uint32_t)n;
}

void *mmu_phys_to_virt(uint64_t phys)
{
	uint32_t n = mmu_frame_at(ALIGN_DOWN(phys, PAGE_SIZE), "phys_to_virt");

	return &ram[n][phys % PAGE_SIZE];
}

uint64_t mmu_virt_to_phys(const void *virt)
{
	const uint8_t *p = virt;

	if (p < ram[1] || p >= ram[nframes + 1])
		sim_fail("virt_to_phys: %p is not in simulated memory", virt);
	return SIM_PHYS_BASE + (uint64_t)(p - ram[0]);
}

void mmu_label(uint64_t phys, enum sim_frame_kind kind, int owner)
{
	struct sim_frame *f = &frames[mmu_frame_at(phys, "mmu_label")];

	f->kind = (uint8_t)kind;
	f->owner = (int8_t)owner;
}

/* "page of mm1", "page table (PD) of the kernel": what a frame holds. */
static void describe(char *buf, size_t size, uint8_t kind, uint8_t level,
		     int8_t owner)
{
	static const char *const kinds[] = {
		[FRAME_UNUSED] = "unused",	 [FRAME_DATA] = "frame",
		[FRAME_PAGE] = "page",		 [FRAME_TABLE] = "page table",
		[FRAME_ROOT] = "PML4",		 [FRAME_KPAGE] = "kernel page",
		[FRAME_KSTACK] = "kernel stack", [FRAME_SHARED] = "shared page",
	};
	static const char *const levels[] = {"", "PT", "PD", "PDPT", "PML4"};
	char what[32];

	if (kind == FRAME_TABLE)
		snprintf(what, sizeof(what), "page table (%s)", levels[level]);
	else
		snprintf(what, sizeof(what), "%s", kinds[kind]);
	if (owner >= 0)
		snprintf(buf, size, "%s of mm%d", what, owner + 1);
	else
		snprintf(buf, size, "%s%s", what,
			 kind == FRAME_TABLE || kind == FRAME_ROOT
				 ? " of the kernel"
				 : "");
}

const char *mmu_name(uint32_t frame, char *buf, size_t size)
{
	const struct sim_frame *f = &frames[frame];
	char what[48];

	describe(what, sizeof(what), f->kind, f->level, f->owner);
	snprintf(buf, size, "frame %u (%s)", frame, what);
	return buf;
}

const char *mmu_name_stale(uint32_t frame, char *buf, size_t size)
{
	const struct sim_frame *f = &frames[frame];
	char now[48], was[48];

	if (f->dead)
		return mmu_name(frame, buf, size);
	describe(now, sizeof(now), f->kind, f->level, f->owner);
	describe(was, sizeof(was), f->was_kind, f->was_level, f->was_owner);
	snprintf(buf, size, "frame %u (reused as %s, was %s)", frame, now, was);
	return buf;
}

uint64_t mmu_births(void)
{
	return births;
}

bool mmu_stale(uint32_t frame, uint32_t gen)
{
	return frames[frame].dead || frames[frame].gen != gen;
}

uint32_t mmu_frames_in_use(void)
{
	return nframes - nfree;
}

uint32_t mmu_frames_max(void)
{
	return nframes;
}

void mmu_reset(unsigned cpus)
{
	ncpus = cpus;
	memset(mmus, 0, sizeof(mmus));
	memset(outstanding, 0, sizeof(outstanding));
	memset(frames, 0, sizeof(frames[0]) * (nframes + 1));
	nframes = 0;
	nfree = 0;
	births = 0;
	refill = false;
	for (unsigned i = 0; i <= SIM_CPUS_MAX; i++)
		alloc_owner[i] = -1;
}

void mmu_set_refill(bool on)
{
	refill = on;
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

/* --- Addresses ------------------------------------------------------------------ */

static unsigned level_shift(int level)
{
	return PAGE_SHIFT + INDEX_BITS * (unsigned)(level - 1);
}

static unsigned index_at(uint64_t va, int level)
{
	return (unsigned)(va >> level_shift(level)) & ((1U << INDEX_BITS) - 1);
}

/* The tag of cache k (0: PML4E, 1: PDPTE, 2: PDE) for va: VA 47:x. */
static uint64_t psc_tag(uint64_t va, unsigned k)
{
	return (va & ((1ULL << VA_BITS) - 1)) >> level_shift(LEVELS - (int)k);
}

/* The first address cache k's entry p covers (canonical). */
static uint64_t psc_va(const struct psc_entry *p, unsigned k)
{
	uint64_t va = p->tag << level_shift(LEVELS - (int)k);

	return (uint64_t)((int64_t)(va << (64 - VA_BITS)) >> (64 - VA_BITS));
}

static bool kernel_half(uint64_t va)
{
	return va >= USER_TOP;
}

/* --- Invalidation ------------------------------------------------------------- */

/*
 * Drops TLB entries of one PCID (or all) for va (or any): the non-global
 * ones if nonglobal, the global ones (whatever PCID) if global.
 */
static void drop_tlb(struct sim_mmu *m, bool all_pcids, uint16_t pcid,
		     uint64_t va, bool nonglobal, bool global)
{
	for (unsigned i = 0; i < SIM_TLB_ENTRIES; i++) {
		struct tlb_entry *e = &m->tlb[i];

		if (!e->valid || (va != ANY_VA && e->vpn != va >> PAGE_SHIFT))
			continue;
		if (e->global ? global
			      : nonglobal && (all_pcids || e->pcid == pcid))
			e->valid = false;
	}
}

/*
 * Drops paging-structure-cache entries of one PCID (or all): those that
 * would be used for va, or every one (ANY_VA).
 */
static void drop_psc(struct sim_mmu *m, bool all_pcids, uint16_t pcid,
		     uint64_t va)
{
	for (unsigned k = 0; k < PSC_LEVELS; k++) {
		for (unsigned i = 0; i < SIM_PSC_ENTRIES; i++) {
			struct psc_entry *p = &m->psc[k][i];

			if (!all_pcids && p->pcid != pcid)
				continue;
			if (va != ANY_VA && p->tag != psc_tag(va, k))
				continue;
			p->valid = false;
		}
	}
}

static void drop_everything(struct sim_mmu *m)
{
	drop_tlb(m, true, 0, ANY_VA, true, true);
	drop_psc(m, true, 0, ANY_VA);
}

static struct sim_mmu *this_mmu(void)
{
	return &mmus[sim_cpu()];
}

static void check_loaded_walks(unsigned cpu, const char *when)
{
	const struct sim_mmu *m = &mmus[cpu];
	static const char *const caches[] = {"PML4E", "PDPTE", "PDE"};
	char name[80];

	for (unsigned k = 0; k < PSC_LEVELS; k++) {
		for (unsigned i = 0; i < SIM_PSC_ENTRIES; i++) {
			const struct psc_entry *p = &m->psc[k][i];
			uint32_t f;

			if (!p->valid || p->pcid != m->pcid)
				continue;
			f = mmu_frame_at(p->next, "a cached walk");
			if (mmu_stale(f, p->gen))
				sim_fail("cpu%u %s PCID %u, whose %s cache "
					 "entry for %#llx goes through freed "
					 "%s: the walker may follow it at any "
					 "moment",
					 cpu, when, p->pcid, caches[k],
					 (unsigned long long)psc_va(p, k),
					 mmu_name_stale(f, name, sizeof(name)));
		}
	}
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

static void insert_psc(struct sim_mmu *m, unsigned k, struct psc_entry p)
{
	struct psc_entry *cache = m->psc[k];
	unsigned at = SIM_PSC_ENTRIES;

	for (unsigned i = 0; i < SIM_PSC_ENTRIES && at == SIM_PSC_ENTRIES;
	     i++) {
		if (!cache[i].valid ||
		    (cache[i].pcid == p.pcid && cache[i].tag == p.tag))
			at = i;
	}
	if (at == SIM_PSC_ENTRIES) {
		at = m->psc_victim[k];
		m->psc_victim[k] = (m->psc_victim[k] + 1) % SIM_PSC_ENTRIES;
	}
	cache[at] = p;
}

static const struct tlb_entry *lookup_tlb(const struct sim_mmu *m, uint64_t va)
{
	for (unsigned i = 0; i < SIM_TLB_ENTRIES; i++) {
		const struct tlb_entry *e = &m->tlb[i];

		if (e->valid && e->vpn == va >> PAGE_SHIFT &&
		    (e->global || e->pcid == m->pcid))
			return e;
	}
	return NULL;
}

static const struct psc_entry *lookup_psc(const struct sim_mmu *m, unsigned k,
					  uint64_t va)
{
	for (unsigned i = 0; i < SIM_PSC_ENTRIES; i++) {
		const struct psc_entry *p = &m->psc[k][i];

		if (p->valid && p->pcid == m->pcid && p->tag == psc_tag(va, k))
			return p;
	}
	return NULL;
}

/*
 * The table at phys, which the walker is about to read at level: in its
 * life gen when a cached walk leads there (0: a live entry or CR3 does).
 */
static const uint64_t *read_table(unsigned cpu, uint64_t phys, int level,
				  uint64_t va, uint32_t gen)
{
	uint32_t f = mmu_frame_at(phys, "the page walker");
	char name[80];

	if (mmu_stale(f, gen ? gen : frames[f].gen))
		sim_fail("cpu%u's page walker reads freed %s for %#llx (PCID "
			 "%u)",
			 cpu, mmu_name_stale(f, name, sizeof(name)),
			 (unsigned long long)va, mmus[cpu].pcid);
	if (frames[f].kind == FRAME_DATA) {
		frames[f].kind = FRAME_TABLE;
		frames[f].level = (uint8_t)level;
	}
	return (const uint64_t *)ram[f];
}

/*
 * Translates va on cpu: a TLB entry, else a walk from the longest
 * matching cached walk (4.10.3.2), filling the caches on the way.
 */
static struct sim_xlate walk(unsigned cpu, uint64_t va)
{
	struct sim_mmu *m = &mmus[cpu];
	const struct tlb_entry *e = lookup_tlb(m, va);
	struct sim_xlate x = {0};
	uint64_t table = mmu_phys(m->root);
	bool writable = true, user = true;
	int level = LEVELS;
	uint32_t gen = 0; /* of a cached walk's table */

	if (e)
		return (struct sim_xlate){true, e->writable, e->user,
					  true, e->frame,    e->gen};
	for (unsigned k = PSC_LEVELS; k-- > 0;) {
		const struct psc_entry *p = lookup_psc(m, k, va);

		if (p) {
			table = p->next;
			level = LEVELS - 1 - (int)k;
			writable = p->writable;
			user = p->user;
			gen = p->gen;
			break;
		}
	}
	for (; level >= 1; level--) {
		uint64_t entry = read_table(cpu, table, level, va,
					    gen)[index_at(va, level)];
		uint32_t next;

		if (!(entry & PTE_PRESENT))
			return x; /* not-present entries are never cached */
		if (level > 1 && (entry & PTE_HUGE))
			sim_fail("%#llx is mapped by a large page: the "
				 "simulator models 4 KiB pages only",
				 (unsigned long long)va);
		writable = writable && (entry & PTE_WRITE);
		user = user && (entry & PTE_USER);
		table = entry & PTE_ADDR_MASK;
		next = mmu_frame_at(table, "a page-table entry");
		gen = 0; /* read from memory, not a cache */
		if (level > 1) {
			insert_psc(
				m, (unsigned)(LEVELS - level),
				(struct psc_entry){
					true, writable, user, m->pcid,
					psc_tag(va, (unsigned)(LEVELS - level)),
					table, frames[next].gen});
			continue;
		}
		x = (struct sim_xlate){true,  writable, user,
				       false, next,	frames[next].gen};
		insert_tlb(m, (struct tlb_entry){true, entry & PTE_GLOBAL,
						 writable, user, m->pcid,
						 va >> PAGE_SHIFT, x.frame,
						 x.gen});
	}
	return x;
}

/* A page fault drops what a failed translation of va used (4.10.4.1). */
static void fault_drops(struct sim_mmu *m, uint64_t va)
{
	drop_tlb(m, false, m->pcid, va, true, true);
	drop_psc(m, false, m->pcid, va);
}

struct sim_xlate mmu_translate(unsigned cpu, uint64_t va, bool write)
{
	struct sim_xlate x = walk(cpu, va);

	if (!x.present || (write && !x.writable) ||
	    (!kernel_half(va) && !x.user))
		fault_drops(&mmus[cpu], va);
	return x;
}

/*
 * The speculative-refill mode: every mapping the kernel uses, walked on
 * cpu (this one after its own invalidations, every CPU after a broadcast).
 */
static void refill_cpu(unsigned cpu)
{
	uint64_t vas[SIM_FILL_VAS_MAX];
	size_t n;

	if (!refill || !mmus[cpu].root)
		return;
	n = kern_fill_vas(vas, SIM_FILL_VAS_MAX);
	for (size_t i = 0; i < n; i++)
		walk(cpu, vas[i]);
}

/* After each hardware effect: other CPUs may run, the walker refills. */
static void after_effect(void)
{
	refill_cpu(sim_cpu());
	sim_point();
}

/* --- Instructions ------------------------------------------------------------------ */

void tlb_hw_load_cr3(uint64_t cr3)
{
	struct sim_mmu *m = this_mmu();
	uint16_t pcid = (uint16_t)(cr3 & CR3_PCID_MASK);
	bool keep = cr3 & CR3_NOFLUSH;
	uint32_t root;
	char name[80];

	sim_point();
	/* Serializing (SDM Vol. 3A, 9.3): the store buffer drains. */
	sim_memory_serialize();
	if (!m->pcide && (pcid || keep))
		sim_fail("CR3 load of %#llx: PCID or no-flush bits with "
			 "CR4.PCIDE off",
			 (unsigned long long)cr3);
	root = mmu_frame_at(cr3 & ~(CR3_PCID_MASK | CR3_NOFLUSH), "CR3 load");
	if (frames[root].kind != FRAME_ROOT || frames[root].dead)
		sim_fail("CR3 load of %s", mmu_name(root, name, sizeof(name)));
	/* 4.10.4.1: with PCIDE off, pcid is 0 here. */
	if (!keep) {
		drop_tlb(m, false, pcid, ANY_VA, true, false);
		drop_psc(m, false, pcid, ANY_VA);
	}
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
	after_effect();
}

void tlb_hw_set_pcide(bool on)
{
	struct sim_mmu *m = this_mmu();

	sim_point();
	/* Serializing (SDM Vol. 3A, 9.3): the store buffer drains. */
	sim_memory_serialize();
	if (on && m->pcid)
		sim_fail("CR4.PCIDE set while CR3 holds PCID %u (#GP)",
			 m->pcid);
	/* 4.10.4.1: 1 -> 0 drops everything; 0 -> 1 drops nothing. */
	if (m->pcide && !on)
		drop_everything(m);
	m->pcide = on;
	sim_trace("CR4.PCIDE <- %d", on);
	after_effect();
}

void tlb_hw_invlpg(uint64_t va)
{
	struct sim_mmu *m = this_mmu();

	sim_point();
	/* Serializing (SDM Vol. 3A, 9.3): the store buffer drains. */
	sim_memory_serialize();
	drop_tlb(m, false, m->pcid, va, true, true);
	drop_psc(m, false, m->pcid, ANY_VA);
	sim_trace("INVLPG %#llx (PCID %u and global; PCID %u's cached walks)",
		  (unsigned long long)va, m->pcid, m->pcid);
	after_effect();
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
	/* Serializing (SDM Vol. 3A, 9.3): the store buffer drains. */
	sim_memory_serialize();
	check_invpcid(0, pcid);
	drop_tlb(this_mmu(), false, pcid, va, true, false);
	drop_psc(this_mmu(), false, pcid, va);
	sim_trace("INVPCID address %#llx PCID %u", (unsigned long long)va,
		  pcid);
	after_effect();
}

void tlb_hw_invpcid_context(uint16_t pcid)
{
	sim_point();
	/* Serializing (SDM Vol. 3A, 9.3): the store buffer drains. */
	sim_memory_serialize();
	check_invpcid(1, pcid);
	drop_tlb(this_mmu(), false, pcid, ANY_VA, true, false);
	drop_psc(this_mmu(), false, pcid, ANY_VA);
	sim_trace("INVPCID context PCID %u", pcid);
	after_effect();
}

void tlb_hw_invpcid_all(void)
{
	sim_point();
	/* Serializing (SDM Vol. 3A, 9.3): the store buffer drains. */
	sim_memory_serialize();
	check_invpcid(2, 0);
	drop_everything(this_mmu());
	sim_trace("INVPCID all, globals included");
	after_effect();
}

/* INVPCID type 3: no caller in mm/tlb.c yet, so not in mm/tlb_hw.h. */
void mmu_invpcid_all_nonglobal(void)
{
	sim_point();
	/* Serializing (SDM Vol. 3A, 9.3): the store buffer drains. */
	sim_memory_serialize();
	check_invpcid(3, 0);
	drop_tlb(this_mmu(), true, 0, ANY_VA, true, false);
	drop_psc(this_mmu(), true, 0, ANY_VA);
	sim_trace("INVPCID all, globals kept");
	after_effect();
}

void tlb_hw_flush_everything(void)
{
	sim_point();
	/* Serializing (SDM Vol. 3A, 9.3): the store buffer drains. */
	sim_memory_serialize();
	drop_everything(this_mmu());
	sim_trace("CR4.PGE toggled: everything dropped");
	after_effect();
}

/* --- Broadcasts --------------------------------------------------------------- */

/*
 * Drops what b names from m: each page (the 4 KiB translation at each
 * address, whatever the stride), or every address; non-global entries of
 * b's PCID or of every PCID; global entries only with include_global and
 * no PCID named (no source says a broadcast naming one PCID reaches the
 * global entries, which belong to none); the cached walks of those PCIDs
 * that would translate each page (or all of them) unless final_only.
 */
static void broadcast_drops(struct sim_mmu *m, const struct tlb_hw_broadcast *b)
{
	unsigned pages = b->has_va ? b->pages : 1;
	uint64_t stride = b->stride_2m ? 1ULL << level_shift(2) : PAGE_SIZE;

	for (unsigned i = 0; i < pages; i++) {
		uint64_t va = b->has_va ? b->va + i * stride : ANY_VA;

		drop_tlb(m, !b->has_pcid, b->pcid, va, true,
			 b->include_global && !b->has_pcid);
		if (!b->final_only)
			drop_psc(m, !b->has_pcid, b->pcid, va);
	}
}

/* "INVLPGB 0x400000 x2, PCID 3": one request, for traces. */
static const char *broadcast_name(const struct tlb_hw_broadcast *b, char *buf,
				  size_t size)
{
	char where[48] = "every address";
	char pcid[16] = "every PCID";

	if (b->has_va)
		snprintf(where, sizeof(where), "%#llx x%u%s",
			 (unsigned long long)b->va, b->pages,
			 b->stride_2m ? " 2 MiB apart" : "");
	if (b->has_pcid)
		snprintf(pcid, sizeof(pcid), "PCID %u", b->pcid);
	snprintf(buf, size, "INVLPGB %s, %s%s%s", where, pcid,
		 b->include_global ? " and globals" : "",
		 b->final_only ? ", cached walks kept" : "");
	return buf;
}

unsigned mmu_broadcasts(unsigned cpu)
{
	return outstanding[cpu].n;
}

void mmu_broadcast_complete(unsigned cpu, unsigned i, const char *why)
{
	struct broadcast_queue *q = &outstanding[cpu];
	struct tlb_hw_broadcast b = q->b[i];
	char name[96];

	memmove(&q->b[i], &q->b[i + 1], (q->n - i - 1) * sizeof(q->b[0]));
	q->n--;
	for (unsigned c = 0; c < ncpus; c++)
		broadcast_drops(&mmus[c], &b);
	sim_trace("cpu%u's %s completes everywhere (%s)", cpu,
		  broadcast_name(&b, name, sizeof(name)), why);
	for (unsigned c = 0; c < ncpus; c++)
		refill_cpu(c);
}

void mmu_broadcasts_complete_all(unsigned cpu, const char *why)
{
	while (outstanding[cpu].n)
		mmu_broadcast_complete(cpu, 0, why);
}

/*
 * What makes an INVLPGB wrong: the instruction missing (#UD); a PCID named
 * while CR4.PCIDE is clear, when PCIDs do not exist; a page count of 0
 * or beyond the CPU's limit (CPUID 8000_0008 EDX[15:0] + 1); a PCID over
 * 12 bits (EDX[31:28] are reserved); a misaligned address (RAX[11:0] are
 * the flags); a move to another CPU before the TLBSYNC. Whether the
 * hardware faults on each or does something else, the request is wrong
 * (docs/tlb-simulator.md, "INVLPGB and TLBSYNC", says what the sources
 * say).
 */
static void check_invlpgb(const struct tlb_hw_broadcast *b)
{
	if (!tlb_policy.invlpgb)
		sim_fail("INVLPGB with invlpgb off (#UD where the CPU lacks "
			 "it)");
	if (b->has_pcid && !this_mmu()->pcide)
		sim_fail("INVLPGB names PCID %u with CR4.PCIDE off (PCIDs "
			 "exist only with it)",
			 b->pcid);
	if (b->has_pcid && b->pcid > CR3_PCID_MASK)
		sim_fail("INVLPGB for PCID %#x: PCIDs have 12 bits", b->pcid);
	if (b->has_va && (!b->pages || b->pages > tlb_policy.invlpgb_max_pages))
		sim_fail("INVLPGB of %u pages: 1 to %u allowed (CPUID "
			 "8000_0008 EDX[15:0] + 1)",
			 b->pages, tlb_policy.invlpgb_max_pages);
	if (b->has_va && b->va % PAGE_SIZE)
		sim_fail("INVLPGB of %#llx, not page-aligned: its low bits "
			 "are the request's flags",
			 (unsigned long long)b->va);
	if (sim_movable())
		sim_fail("INVLPGB neither pinned nor with interrupts off: the "
			 "thread may move to another CPU before its TLBSYNC, "
			 "which waits only for that CPU's");
}

/*
 * Not serializing (only TLBSYNC is): this CPU's buffered stores stay
 * buffered. The request waits on this CPU until the scheduler completes
 * it (a BCAST move), a TLBSYNC here does, or the phase ends; a full queue
 * completes its oldest, which the hardware may do at any moment too.
 */
void tlb_hw_invlpgb(const struct tlb_hw_broadcast *b)
{
	struct broadcast_queue *q;
	char name[96];

	sim_point();
	check_invlpgb(b);
	q = &outstanding[sim_cpu()];
	if (q->n == SIM_BROADCASTS_MAX)
		mmu_broadcast_complete(sim_cpu(), 0, "the queue is full");
	q->b[q->n++] = *b;
	sim_counts.broadcasts++;
	sim_trace("%s issued (%u outstanding here)",
		  broadcast_name(b, name, sizeof(name)), q->n);
	sim_point();
}

/* Serializing: the store buffer drains, and every request of this CPU
 * completes, in the order issued (they commute). */
void tlb_hw_tlbsync(void)
{
	sim_point();
	sim_memory_serialize();
	sim_trace("TLBSYNC (%u outstanding here)", outstanding[sim_cpu()].n);
	mmu_broadcasts_complete_all(sim_cpu(), "TLBSYNC");
	after_effect();
}

/* --- Freeing --------------------------------------------------------------------- */

static void check_unused(uint32_t frame, const char *why, const char *name)
{
	for (unsigned cpu = 0; cpu < ncpus; cpu++) {
		const struct sim_mmu *m = &mmus[cpu];

		if (m->root == frame)
			sim_fail("%s frees %s, which cpu%u has in CR3", why,
				 name, cpu);
		for (unsigned k = 0; k < PSC_LEVELS; k++) {
			for (unsigned i = 0; i < SIM_PSC_ENTRIES; i++) {
				const struct psc_entry *p = &m->psc[k][i];

				if (p->valid && p->pcid == m->pcid &&
				    p->next == mmu_phys(frame) &&
				    p->gen == frames[frame].gen)
					sim_fail("%s frees %s while cpu%u's "
						 "loaded PCID %u still caches "
						 "a walk of %#llx through it: "
						 "the walker may follow it at "
						 "any moment",
						 why, name, cpu, m->pcid,
						 (unsigned long long)psc_va(p,
									    k));
			}
		}
		for (unsigned i = 0; i < SIM_TLB_ENTRIES; i++) {
			const struct tlb_entry *e = &m->tlb[i];
			uint64_t va = e->vpn << PAGE_SHIFT;

			/* An older life's entry is stale already. */
			if (!e->valid || e->frame != frame ||
			    e->gen != frames[frame].gen)
				continue;
			if (e->global || (e->pcid == m->pcid &&
					  (kernel_half(va) || m->user_active)))
				sim_fail("%s frees %s while cpu%u (running "
					 "%s) still maps %#llx to it in "
					 "%s",
					 why, name, cpu,
					 m->user_active ? "user code"
							: "the kernel",
					 (unsigned long long)va,
					 e->global ? "a global entry"
						   : "its loaded PCID");
		}
	}
}

void mmu_free_frame(uint64_t phys, const char *why)
{
	uint32_t frame = mmu_frame_at(phys, why);
	struct sim_frame *f = &frames[frame];
	char name[80];

	mmu_name(frame, name, sizeof(name));
	if (f->dead)
		sim_fail("%s frees %s twice", why, name);
	/* Outside a run (cleaning up after a failed one) nothing runs. */
	if (sim_current() >= 0) {
		check_unused(frame, why, name);
		if (f->kind == FRAME_SHARED)
			kern_check_unmapped(frame, why, name);
	}
	f->dead = true;
	free_list[nfree++] = frame;
	sim_counts.frees++;
	sim_trace("%s frees %s", why, name);
}

/* --- The hardware on its own --------------------------------------------------- */

/* What the hardware may do on its own, equally often. */
enum hw_event {
	EVENT_EVICT_ENTRY, /* the TLB drops an entry */
	EVENT_EVICT_WALK,  /* a paging-structure cache drops one */
	EVENT_FILL,	   /* the walker prefetches a mapping */
	EVENT_KINDS
};

void mmu_random_event(void)
{
	unsigned cpu = (unsigned)sim_random(ncpus);
	struct sim_mmu *m = &mmus[cpu];
	uint64_t vas[SIM_FILL_VAS_MAX];
	size_t n;

	switch ((enum hw_event)sim_random(EVENT_KINDS)) {
	case EVENT_EVICT_ENTRY:
		m->tlb[sim_random(SIM_TLB_ENTRIES)].valid = false;
		break;
	case EVENT_EVICT_WALK:
		m->psc[sim_random(PSC_LEVELS)][sim_random(SIM_PSC_ENTRIES)]
			.valid = false;
		break;
	case EVENT_FILL:
		n = kern_fill_vas(vas, SIM_FILL_VAS_MAX);
		if (m->root && n)
			walk(cpu, vas[sim_random(n)]);
		break;
	case EVENT_KINDS:
		break;
	}
}

/* --- Self-test ------------------------------------------------------------------- */

static unsigned count_tlb(const struct sim_mmu *m, int pcid, uint64_t va,
			  bool global)
{
	unsigned n = 0;

	for (unsigned i = 0; i < SIM_TLB_ENTRIES; i++) {
		const struct tlb_entry *e = &m->tlb[i];

		n += e->valid && e->global == global &&
		     (global || pcid < 0 || e->pcid == pcid) &&
		     e->vpn == va >> PAGE_SHIFT;
	}
	return n;
}

/* Paging-structure-cache entries of pcid (-1: any) that would translate va. */
static unsigned count_psc(const struct sim_mmu *m, int pcid, uint64_t va)
{
	unsigned n = 0;

	for (unsigned k = 0; k < PSC_LEVELS; k++) {
		for (unsigned i = 0; i < SIM_PSC_ENTRIES; i++) {
			const struct psc_entry *p = &m->psc[k][i];

			n += p->valid && (pcid < 0 || p->pcid == pcid) &&
			     p->tag == psc_tag(va, k);
		}
	}
	return n;
}

static void expect(const char *step, const char *what, unsigned got,
		   unsigned want)
{
	if (got != want)
		sim_fail("MMU self-test, after %s: %s: %u entries, expected %u",
			 step, what, got, want);
}

/*
 * Fills PCID 1 and 2 with a user page u (non-global, all three cache
 * levels) and a global kernel page k, then checks what each invalidation
 * leaves, against the table of 4.10.4.1 at the top of this file.
 */
static void fill(uint64_t root1, uint64_t root2, uint64_t u, uint64_t k)
{
	struct sim_mmu *m = this_mmu();

	drop_everything(m);
	tlb_hw_load_cr3(root1 | 1);
	walk(sim_cpu(), u);
	walk(sim_cpu(), k);
	tlb_hw_load_cr3(root2 | 2);
	walk(sim_cpu(), u);
	walk(sim_cpu(), k);
}

void mmu_selftest(uint64_t root1, uint64_t root2, uint64_t u, uint64_t k)
{
	struct sim_mmu *m = this_mmu();
	bool saved = refill;

	refill = false;
	fill(root1, root2, u, k);
	expect("filling", "u in PCID 1", count_tlb(m, 1, u, false), 1);
	expect("filling", "u in PCID 2", count_tlb(m, 2, u, false), 1);
	expect("filling", "k global", count_tlb(m, -1, k, true), 1);
	expect("filling", "u's walks in PCID 1", count_psc(m, 1, u), 3);
	expect("filling", "k's walks in PCID 1", count_psc(m, 1, k), 3);
	/* PCID 2 found k's global entry: no walk. */
	expect("filling", "k's walks in PCID 2", count_psc(m, 2, k), 0);

	tlb_hw_invlpg(u); /* current PCID 2 */
	expect("INVLPG u", "u in PCID 2", count_tlb(m, 2, u, false), 0);
	expect("INVLPG u", "u in PCID 1", count_tlb(m, 1, u, false), 1);
	expect("INVLPG u", "PCID 2's walks of u", count_psc(m, 2, u), 0);
	expect("INVLPG u", "PCID 1's walks of u", count_psc(m, 1, u), 3);
	expect("INVLPG u", "k global", count_tlb(m, -1, k, true), 1);
	tlb_hw_invlpg(k);
	expect("INVLPG k", "k global", count_tlb(m, -1, k, true), 0);

	fill(root1, root2, u, k);
	tlb_hw_invpcid_address(1, u);
	expect("INVPCID 0", "u in PCID 1", count_tlb(m, 1, u, false), 0);
	expect("INVPCID 0", "u in PCID 2", count_tlb(m, 2, u, false), 1);
	expect("INVPCID 0", "PCID 1's walks of u", count_psc(m, 1, u), 0);
	expect("INVPCID 0", "PCID 1's walks of k", count_psc(m, 1, k), 3);
	expect("INVPCID 0", "k global", count_tlb(m, -1, k, true), 1);

	fill(root1, root2, u, k);
	tlb_hw_invpcid_context(1);
	expect("INVPCID 1", "u in PCID 1", count_tlb(m, 1, u, false), 0);
	expect("INVPCID 1", "PCID 1's walks of k", count_psc(m, 1, k), 0);
	expect("INVPCID 1", "PCID 2's walks of u", count_psc(m, 2, u), 3);
	expect("INVPCID 1", "k global", count_tlb(m, -1, k, true), 1);

	fill(root1, root2, u, k);
	mmu_invpcid_all_nonglobal();
	expect("INVPCID 3", "u in any PCID", count_tlb(m, -1, u, false), 0);
	expect("INVPCID 3", "walks of k", count_psc(m, -1, k), 0);
	expect("INVPCID 3", "k global", count_tlb(m, -1, k, true), 1);

	fill(root1, root2, u, k);
	tlb_hw_invpcid_all();
	expect("INVPCID 2", "k global", count_tlb(m, -1, k, true), 0);
	expect("INVPCID 2", "walks of u", count_psc(m, -1, u), 0);

	fill(root1, root2, u, k);
	tlb_hw_load_cr3(root1 | 1 | CR3_NOFLUSH);
	expect("CR3 no-flush", "u in PCID 1", count_tlb(m, 1, u, false), 1);
	expect("CR3 no-flush", "PCID 1's walks", count_psc(m, 1, u), 3);
	tlb_hw_load_cr3(root1 | 1);
	expect("CR3 flush", "u in PCID 1", count_tlb(m, 1, u, false), 0);
	expect("CR3 flush", "PCID 1's walks", count_psc(m, 1, k), 0);
	expect("CR3 flush", "u in PCID 2", count_tlb(m, 2, u, false), 1);
	expect("CR3 flush", "PCID 2's walks", count_psc(m, 2, u), 3);
	expect("CR3 flush", "k global", count_tlb(m, -1, k, true), 1);

	fill(root1, root2, u, k);
	fault_drops(m, u); /* current PCID 2 */
	expect("a fault on u", "u in PCID 2", count_tlb(m, 2, u, false), 0);
	expect("a fault on u", "PCID 2's walks of u", count_psc(m, 2, u), 0);
	expect("a fault on u", "PCID 1's walks of u", count_psc(m, 1, u), 3);
	expect("a fault on u", "u in PCID 1", count_tlb(m, 1, u, false), 1);

	fill(root1, root2, u, k);
	tlb_hw_load_cr3(mmu_phys(m->root) & ~CR3_PCID_MASK);
	tlb_hw_set_pcide(false);
	expect("PCIDE 1 -> 0", "walks", count_psc(m, -1, u), 0);
	expect("PCIDE 1 -> 0", "k global", count_tlb(m, -1, k, true), 0);
	walk(sim_cpu(), u);
	tlb_hw_set_pcide(true);
	expect("PCIDE 0 -> 1", "u in PCID 0", count_tlb(m, 0, u, false), 1);

	fill(root1, root2, u, k);
	tlb_hw_flush_everything();
	expect("CR4.PGE toggle", "k global", count_tlb(m, -1, k, true), 0);
	expect("CR4.PGE toggle", "walks", count_psc(m, -1, u), 0);
	refill = saved;
	sim_trace("MMU self-test passed");
}

/*
 * cpu's CR3 and CR4.PCIDE set as a CR3 load of root with pcid would (no
 * checks: the self-test sets up a CPU that is not the one running), then
 * the walks of vas, which fill its TLB and paging-structure caches.
 */
static void fill_cpu(unsigned cpu, uint64_t root, uint16_t pcid,
		     const uint64_t *vas, size_t n)
{
	struct sim_mmu *m = &mmus[cpu];

	m->pcide = true;
	m->root = mmu_frame_at(root, "the broadcast self-test");
	m->pcid = pcid;
	for (size_t i = 0; i < n; i++)
		walk(cpu, vas[i]);
}

/* Both CPUs: PCID 1 then PCID 2 hold u, the next two pages, and k. */
static void fill_both(unsigned here, unsigned there, uint64_t root1,
		      uint64_t root2, const uint64_t *vas, size_t n)
{
	drop_everything(&mmus[here]);
	drop_everything(&mmus[there]);
	fill_cpu(here, root1, 1, vas, n);
	fill_cpu(here, root2, 2, vas, n);
	fill_cpu(there, root1, 1, vas, n);
	fill_cpu(there, root2, 2, vas, n);
}

/* Issues b and, with sync, the TLBSYNC that completes it. */
static void broadcast(struct tlb_hw_broadcast b, bool sync)
{
	tlb_hw_invlpgb(&b);
	if (sync)
		tlb_hw_tlbsync();
}

void mmu_broadcast_selftest(uint64_t root1, uint64_t root2, uint64_t u,
			    uint64_t k)
{
	const uint64_t vas[] = {u, u + PAGE_SIZE, u + 2 * PAGE_SIZE, k};
	unsigned here = sim_cpu(), there = (here + 1) % ncpus;
	struct sim_mmu *m = &mmus[there];
	struct sim_mmu there_before = *m;
	bool saved = refill;

	if (ncpus < 2)
		sim_fail("the broadcast self-test needs two CPUs");
	refill = false;
	tlb_hw_pin();

	/* Issued, not completed: every CPU keeps u until the TLBSYNC. */
	fill_both(here, there, root1, root2, vas, ARRAY_SIZE(vas));
	broadcast((struct tlb_hw_broadcast){.va = u,
					    .pages = 1,
					    .has_va = true,
					    .has_pcid = true,
					    .pcid = 2},
		  false);
	expect("INVLPGB u PCID 2", "outstanding", mmu_broadcasts(here), 1);
	expect("INVLPGB u PCID 2", "u in PCID 2 there",
	       count_tlb(m, 2, u, false), 1);
	expect("INVLPGB u PCID 2", "u in PCID 2 here",
	       count_tlb(&mmus[here], 2, u, false), 1);
	expect("INVLPGB u PCID 2", "there, u translates from the TLB",
	       mmu_translate(there, u, false).tlb_hit, 1);
	tlb_hw_tlbsync();
	expect("its TLBSYNC", "outstanding", mmu_broadcasts(here), 0);
	expect("its TLBSYNC", "u in PCID 2 there", count_tlb(m, 2, u, false),
	       0);
	expect("its TLBSYNC", "u in PCID 2 here",
	       count_tlb(&mmus[here], 2, u, false), 0);
	expect("its TLBSYNC", "PCID 2's walks of u there", count_psc(m, 2, u),
	       0);
	expect("its TLBSYNC", "u in PCID 1 there", count_tlb(m, 1, u, false),
	       1);
	expect("its TLBSYNC", "PCID 1's walks of u there", count_psc(m, 1, u),
	       3);
	expect("its TLBSYNC", "k global there", count_tlb(m, -1, k, true), 1);

	/* Every PCID, globals included. */
	fill_both(here, there, root1, root2, vas, ARRAY_SIZE(vas));
	broadcast((struct tlb_hw_broadcast){.va = k,
					    .pages = 1,
					    .has_va = true,
					    .include_global = true},
		  true);
	expect("INVLPGB k, globals", "k global there",
	       count_tlb(m, -1, k, true), 0);
	expect("INVLPGB k, globals", "walks of k there", count_psc(m, -1, k),
	       0);
	expect("INVLPGB k, globals", "u in PCID 1 there",
	       count_tlb(m, 1, u, false), 1);
	expect("INVLPGB k, globals", "walks of u there", count_psc(m, -1, u),
	       6);

	/* A PCID named: its non-global entries only, never the globals. */
	fill_both(here, there, root1, root2, vas, ARRAY_SIZE(vas));
	broadcast((struct tlb_hw_broadcast){.va = k,
					    .pages = 1,
					    .has_va = true,
					    .has_pcid = true,
					    .pcid = 1,
					    .include_global = true},
		  true);
	expect("INVLPGB k PCID 1, globals", "k global there",
	       count_tlb(m, -1, k, true), 1);
	expect("INVLPGB k PCID 1, globals", "PCID 1's walks of k there",
	       count_psc(m, 1, k), 0);

	/* Final translations only: the cached walks stay. */
	fill_both(here, there, root1, root2, vas, ARRAY_SIZE(vas));
	broadcast((struct tlb_hw_broadcast){.va = u,
					    .pages = 1,
					    .has_va = true,
					    .has_pcid = true,
					    .pcid = 1,
					    .final_only = true},
		  true);
	expect("INVLPGB u PCID 1, final only", "u in PCID 1 there",
	       count_tlb(m, 1, u, false), 0);
	expect("INVLPGB u PCID 1, final only", "PCID 1's walks of u there",
	       count_psc(m, 1, u), 3);

	/* No address: the whole PCID, globals kept. */
	fill_both(here, there, root1, root2, vas, ARRAY_SIZE(vas));
	broadcast((struct tlb_hw_broadcast){.has_pcid = true, .pcid = 1}, true);
	expect("INVLPGB PCID 1", "u + 4 KiB in PCID 1 there",
	       count_tlb(m, 1, u + PAGE_SIZE, false), 0);
	expect("INVLPGB PCID 1", "PCID 1's walks of k there",
	       count_psc(m, 1, k), 0);
	expect("INVLPGB PCID 1", "u in PCID 2 there", count_tlb(m, 2, u, false),
	       1);
	expect("INVLPGB PCID 1", "k global there", count_tlb(m, -1, k, true),
	       1);

	/* Two pages, 4 KiB apart: the third stays. */
	fill_both(here, there, root1, root2, vas, ARRAY_SIZE(vas));
	broadcast((struct tlb_hw_broadcast){.va = u,
					    .pages = 2,
					    .has_va = true,
					    .has_pcid = true,
					    .pcid = 2},
		  true);
	expect("INVLPGB u x2", "u + 4 KiB in PCID 2 there",
	       count_tlb(m, 2, u + PAGE_SIZE, false), 0);
	expect("INVLPGB u x2", "u + 8 KiB in PCID 2 there",
	       count_tlb(m, 2, u + 2 * PAGE_SIZE, false), 1);

	/* Two pages 2 MiB apart: u, not the page after it. */
	fill_both(here, there, root1, root2, vas, ARRAY_SIZE(vas));
	broadcast((struct tlb_hw_broadcast){.va = u,
					    .pages = 2,
					    .stride_2m = true,
					    .has_va = true,
					    .has_pcid = true,
					    .pcid = 2},
		  true);
	expect("INVLPGB u x2 2 MiB apart", "u in PCID 2 there",
	       count_tlb(m, 2, u, false), 0);
	expect("INVLPGB u x2 2 MiB apart", "u + 4 KiB in PCID 2 there",
	       count_tlb(m, 2, u + PAGE_SIZE, false), 1);

	/* TLBSYNC waits for this CPU's requests, not for another's. */
	fill_both(here, there, root1, root2, vas, ARRAY_SIZE(vas));
	outstanding[there] = (struct broadcast_queue){.b = {{.va = u,
							     .pages = 1,
							     .has_va = true,
							     .has_pcid = true,
							     .pcid = 2}},
						      .n = 1};
	tlb_hw_tlbsync();
	expect("TLBSYNC here", "the other CPU's outstanding",
	       mmu_broadcasts(there), 1);
	expect("TLBSYNC here", "u in PCID 2 there", count_tlb(m, 2, u, false),
	       1);
	mmu_broadcasts_complete_all(there, "the self-test");
	expect("the other CPU's completes", "u in PCID 2 there",
	       count_tlb(m, 2, u, false), 0);

	tlb_hw_unpin();
	*m = there_before;
	refill = saved;
	sim_trace("broadcast self-test passed");
}
