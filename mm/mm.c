// SPDX-License-Identifier: MIT
/*
 * Address spaces: creation, user mappings, teardown.
 *
 * Who frees what: an anonymous page's frame belongs to the address space
 * that mapped it and is freed when it is unmapped or the space is torn down.
 * A shared page's frame belongs to its shared-memory object (marked in the
 * PTE with PTE_SOFT_SHARED) and is freed with the object, when the last
 * address space that mapped it goes away.
 *
 * Rights of shared pages: a shared page never allows more than the
 * mapping was made with, and the caller checked that protection against
 * its right to the object (proc/syscall.c). mm_map_shared records it in
 * each PTE's available bits (PTE_SOFT_MAX_WRITE, PTE_SOFT_MAX_EXEC; read
 * is always allowed, as x86 pages always are readable), and mm_protect
 * refuses, with -EPERM and before editing that page, a protection above
 * its record. A protect keeps the record. Anonymous
 * pages carry none: their owner may give them any protection.
 *
 * Unmapping follows the rule of mm/tlb.h: clear the entries, flush every
 * CPU that may hold them, and only then free the frames and the page tables
 * the unmap emptied; a struct tlb_batch (mm/tlb_batch.h) collects them so
 * one flush covers many pages. pt_unmap hands the tables it empties to the
 * batch itself: while the address space lives, a user-half table is freed
 * through a batch or not at all. The address-space lock covers the table
 * edits only, never the flush: a CPU waiting for that lock with interrupts
 * off would not answer the flush's IPI.
 *
 * Revocation (shm_revoke) takes an object's pages away from every address
 * space at once. The object records each mapping (mm, va) under its own
 * lock, taken inside mm->lock by mm_map_shared (which also checks that the
 * object is not revoked) and by mm_put (which drops the dying space's
 * records before freeing it), and alone by shm_revoke, which marks the
 * object revoked, takes the records and a reference to each space whose
 * count is not yet zero (a space at zero is being torn down: no thread
 * runs in it, its teardown frees its tables, and its record stays valid
 * until mm_put removes it under the same lock). Then, with no object lock
 * held, it unmaps the pages from each space under that space's lock into
 * one tlb_multi_batch, flushes them in one round, and frees the frames
 * only after that round returned: after every CPU that could hold one of
 * the translations, in any of the spaces, acknowledged dropping it.
 *
 * Flushes still pending (Linux's tlb_flush_pending, 2017)
 *   Because the lock is dropped before the flush, the tables can say
 *   "nothing here" while some CPU still translates the address the old
 *   way: between a change's unlock and the return of its flush, a cleared
 *   PTE is not yet a dropped translation. Any other path that reads the
 *   tables in that window and acts on what is absent would act too early:
 *   a revoke that skips the cleared PTEs frees frames a third CPU still
 *   writes through its TLB; a map at the address returns while CPUs
 *   (the caller's own too) still reach the old frame, so reads of the
 *   "fresh zeroed" page return old data and writes vanish. The rule:
 *   - A change that clears PTEs (unmap, revoke) raises mm->flush_pending
 *     under mm->lock before its first edit and lowers it after its flush
 *     returned; mm->clears counts the raises. A protect need not: its
 *     PTEs stay present, so nothing decides from their absence, and a
 *     protect fails on a hole rather than pass over it (-ENOENT).
 *   - A path that would act on an absent PTE while a flush is pending
 *     flushes the range itself first: a map (hold_lock_for_map), and an unmap
 *     that finds pages already cleared (their translations are its to
 *     drop too once it returns).
 *   - A revoke flushes every recorded range whole, present or not: the
 *     frames it frees may be reached through any PTE cleared before it.
 *   The flush the second path makes covers every PTE cleared before it
 *   (I2 of mm/tlb.c: a flush covers every change made before its bump of
 *   tlb_gen); it need not wait for the first change's own flush. The
 *   race needs no PCID: any TLB entry, tagged or not, outlives its PTE
 *   until its flush arrives, and the window is the flush's whole IPI
 *   round trip.
 *
 * Bounded work with interrupts off
 *   A CPU that holds mm->lock has interrupts off: it answers no flush IPI
 *   and no timer until it lets go. So no path here holds it for more than
 *   MM_CHUNK_STEPS steps (mm/mm.h says why 64). A step is one user page
 *   handled (checked, mapped, unmapped or protected), or one absent PML4,
 *   PDPT or PD entry stepped over whole by pt_next_mappable. A step costs
 *   a page walk (four entries), plus, for an unmap, the scans of up to
 *   three tables it emptied, and, for a map, the allocation and zeroing
 *   of up to four frames. Between chunks the lock is dropped with
 *   interrupts back on. Every hold records its steps and TSC cycles, and
 *   mm_hold_max_cycles reports the longest. MM0011 shows the bound works:
 *   a CPU in a whole-half unmap still answers cross-CPU calls.
 *   Each rule above holds across chunks:
 *   - An unmap raises flush_pending in its first hold after a flush and
 *     lowers it after the next flush, which may come several holds
 *     later: between them its cleared PTEs are pending like any other.
 *     The batch frees frames and tables only after its flush, as before.
 *   - A map takes every hold through hold_lock_for_map, so none maps over
 *     a PTE cleared by a change whose flush has not returned.
 *   - A shared map records the mapping in its first hold and checks in
 *     every hold that the object is not revoked: a revoke marks the
 *     object before it takes any mm->lock, so a hold that finds it
 *     unmarked comes before all of the revoke's unmapping, which then
 *     finds every page mapped so far. It takes its slot in mm->shared in
 *     its last hold, once it has checked that one is still free: other
 *     maps of the space may have taken them meanwhile.
 *   - A revoke unmaps a recorded range over several holds into one
 *     batch and frees the frames after the flush, as before.
 *   What the whole call does, then, is the sum of its chunks:
 *   - The work of an unmap grows with the tables present in its range:
 *     at most 256 PML4 entries, 512 for each present PDPT and PD, and
 *     512 for each present PT. unmap(0, USER_TOP) of an empty space is
 *     256 steps, four holds.
 *   - A protect stops at the first hole (-ENOENT), so its work is at
 *     most the pages mapped; the chunks before a failing one keep their
 *     new protection, and are flushed before the call returns.
 *   - A map first checks its range for a mapped page, by the same
 *     stepping, then maps; a chunk that finds a page mapped (another
 *     thread of the task mapped it meanwhile) or runs out of memory
 *     undoes the call through unmap_range. Its work is its length,
 *     capped by MM_MAP_MAX_BYTES; a shared map's, by SHM_MAX_PAGES.
 *   Threads of one task that race on one range get some interleaving of
 *   the chunks: the kernel stays safe (no frame freed while a CPU may
 *   translate to it, none leaked), the task's view of its own memory is
 *   its own concern.
 *
 * Memory accounts
 *   One task may not take every user frame from the others. mm->charged
 *   counts the frames an address space keeps: its anonymous pages and its
 *   user page tables (a sparse map needs up to three tables per page, so
 *   counting pages alone would not bound it). It changes under mm->lock
 *   only. A map checks, before it allocates a page, that the page and the
 *   most tables pt_map may add still fit under mm_memory_limit(), a
 *   quarter of RAM, and fails with -EBUSY when they do not; it then
 *   charges what pt_map really made. An unmap uncharges what it hands to
 *   its batch, pages and tables alike, and a revoke the tables it empties.
 *   The shared objects a task creates are charged to the task itself
 *   (proc/handle.h), since they may outlive its address space. The frame
 *   reserve (mm/pmm.c) bounds what all tasks together may take.
 */
#include "mm/mm.h"
#include "cpu/cpu.h"
#include "arch/x86.h"
#include "lib/errno.h"
#include "trap/panic.h"
#include "lib/string.h"
#include "mm/heap.h"
#include "mm/kmap.h"
#include "arch/layout.h"
#include "mm/pagetable.h"
#include "mm/pmm.h"
#include "mm/tlb.h"
#include "mm/tlb_batch.h"

/* Frames one unmapped page may free: the page and the tables it empties. */
#define FRAMES_PER_UNMAP (1 + PT_UNMAP_TABLES_MAX)
#define SHM_MAX		 64   /* shared-memory objects in the system */
#define SHM_MAX_PAGES	 4096 /* 16 MiB per object */
#define TABLE_ENTRIES	 512

struct shm_mapping {
	struct mm *mm; /* no reference: mm_put removes the record first */
	uint64_t va;
};

struct shm {
	uint32_t refcount; /* atomic: creator's handle and each mapping mm */
	uint64_t pages;
	struct spinlock lock; /* guards the fields below (inside mm->lock) */
	bool revoked;	      /* frames freed by shm_revoke; no new mappings */
	unsigned map_count;
	struct shm_mapping maps[SHM_MAX_MAPPINGS];
	uint64_t frames[];
};

static uint64_t next_context_id = 1;
static uint32_t shm_live; /* atomic: objects in the system, SHM_MAX at most */

/* The longest hold of mm->lock (mm_hold_max_cycles): raised by any CPU. */
static shared_u64 hold_max_cycles;

/* One hold of mm->lock by a chunked path ("Bounded work", above). */
struct hold {
	uint64_t flags; /* interrupts, to restore */
	uint64_t since; /* TSC when the lock was taken */
	unsigned steps; /* left in this hold */
};

static void hold_start(struct hold *h, uint64_t flags)
{
	h->flags = flags;
	h->since = rdtsc();
	h->steps = MM_CHUNK_STEPS;
}

static void hold_lock(struct mm *mm, struct hold *h)
{
	hold_start(h, spin_lock_irqsave(&mm->lock));
}

/* Raises *max to v. Relaxed: a statistic, ordered with nothing. */
static void raise_max(shared_u64 *max, uint64_t v)
{
	uint64_t old = shared_load(max, __ATOMIC_RELAXED);

	while (v > old &&
	       !shared_cas(max, &old, v, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static void hold_unlock(struct mm *mm, struct hold *h)
{
	uint64_t cycles = rdtsc() - h->since;

	KASSERT(h->steps <= MM_CHUNK_STEPS,
		"a hold of mm->lock has %u steps left of %u", h->steps,
		MM_CHUNK_STEPS);
	spin_unlock_irqrestore(&mm->lock, h->flags);
	/* Out of the hold: it is not lengthened by the atomic. */
	raise_max(&hold_max_cycles, cycles);
}

uint64_t mm_hold_max_cycles(void)
{
	return shared_load(&hold_max_cycles, __ATOMIC_RELAXED);
}

/* "Memory accounts", above: a quarter of RAM. */
#define MM_MEMORY_SHARE 4

uint64_t mm_memory_limit(void)
{
	return pmm_total_count() / MM_MEMORY_SHARE;
}

/* Whether frames more, and the tables one pt_map may add, fit mm's share. */
static bool charge_fits(const struct mm *mm, uint64_t frames)
{
	return mm->charged + frames + PT_MAP_TABLES_MAX <= mm_memory_limit();
}

bool user_range_ok(uint64_t va, uint64_t len)
{
	return va < USER_TOP && len <= USER_TOP - va;
}

static bool range_ok(uint64_t va, uint64_t len)
{
	return len && IS_ALIGNED(va, PAGE_SIZE) && IS_ALIGNED(len, PAGE_SIZE) &&
	       user_range_ok(va, len);
}

static uint64_t pte_flags(uint32_t prot)
{
	uint64_t flags = PTE_USER;

	if (prot & MM_PROT_WRITE)
		flags |= PTE_WRITE;
	if (!(prot & MM_PROT_EXEC) && boot_cpu.nx)
		flags |= PTE_NX;
	return flags;
}

/* The PTE bits that mark a shared page and record its ceiling. */
#define PTE_SOFT_SHM_BITS \
	(PTE_SOFT_SHARED | PTE_SOFT_MAX_WRITE | PTE_SOFT_MAX_EXEC)

/* A shared page's PTE bits for a mapping made with prot. */
static uint64_t shared_pte_flags(uint32_t prot)
{
	uint64_t flags = pte_flags(prot) | PTE_SOFT_SHARED;

	if (prot & MM_PROT_WRITE)
		flags |= PTE_SOFT_MAX_WRITE;
	if (prot & MM_PROT_EXEC)
		flags |= PTE_SOFT_MAX_EXEC;
	return flags;
}

/* Whether prot stays within what the page whose PTE is pte may allow. */
static bool prot_within_ceiling(uint64_t pte, uint32_t prot)
{
	if (!(pte & PTE_SOFT_SHARED))
		return true; /* anonymous: every right */
	if ((prot & MM_PROT_WRITE) && !(pte & PTE_SOFT_MAX_WRITE))
		return false;
	return !(prot & MM_PROT_EXEC) || (pte & PTE_SOFT_MAX_EXEC);
}

static bool prot_ok(uint32_t prot)
{
	/* Readable always (x86 pages are); never writable and executable. */
	return !(prot & ~(MM_PROT_READ | MM_PROT_WRITE | MM_PROT_EXEC)) &&
	       !((prot & MM_PROT_WRITE) && (prot & MM_PROT_EXEC));
}

struct mm *mm_create(void)
{
	struct mm *mm = kzalloc(sizeof(*mm));
	uint64_t *root;

	if (!mm)
		return NULL;
	mm->root = pmm_alloc_frame();
	if (!mm->root) {
		kfree(mm);
		return NULL;
	}
	/* The kernel half: the same PDPTs as every address space. */
	root = phys_to_virt(mm->root);
	memcpy(root + PML4_KERNEL_FIRST,
	       (uint64_t *)phys_to_virt(kernel_root) + PML4_KERNEL_FIRST,
	       (PML4_ENTRIES - PML4_KERNEL_FIRST) * sizeof(uint64_t));
	mm->context_id =
		__atomic_fetch_add(&next_context_id, 1, __ATOMIC_RELAXED);
	mm->refcount = 1;
	mm->lock = (struct spinlock)SPINLOCK_INIT;
	return mm;
}

void mm_get(struct mm *mm)
{
	__atomic_add_fetch(&mm->refcount, 1, __ATOMIC_RELAXED);
}

/* Frees a user page table at level (3: PDPT .. 1: PT) and all below it. */
static void free_tables(uint64_t table, int level)
{
	uint64_t *entries = phys_to_virt(table);

	for (int i = 0; i < TABLE_ENTRIES; i++) {
		uint64_t e = entries[i];

		if (!(e & PTE_PRESENT))
			continue;
		if (level > 1)
			free_tables(e & PTE_ADDR_MASK, level - 1);
		else if (!(e & PTE_SOFT_SHARED))
			pmm_free_frame(e & PTE_ADDR_MASK);
	}
	pmm_free_frame(table);
}

/* forget_mappings: every mapping of the address space. */
#define EVERY_VA UINT64_MAX

/*
 * Drops shm's record of mm mapping it at va (one: the space may have
 * mapped it there again meanwhile), or every record of mm (EVERY_VA).
 */
static void forget_mappings(struct shm *shm, const struct mm *mm, uint64_t va)
{
	uint64_t flags = spin_lock_irqsave(&shm->lock);

	for (unsigned i = 0; i < shm->map_count;) {
		if (shm->maps[i].mm != mm ||
		    (va != EVERY_VA && shm->maps[i].va != va)) {
			i++;
			continue;
		}
		shm->maps[i] = shm->maps[--shm->map_count];
		if (va != EVERY_VA)
			break;
	}
	spin_unlock_irqrestore(&shm->lock, flags);
}

void mm_put(struct mm *mm)
{
	uint64_t *root;

	if (__atomic_sub_fetch(&mm->refcount, 1, __ATOMIC_ACQ_REL))
		return;
	/* No thread runs on it; CPUs that still have it loaded let go. */
	tlb_mm_teardown(mm);
	root = phys_to_virt(mm->root);
	for (int slot = 0; slot < PML4_KERNEL_FIRST; slot++) {
		if (root[slot] & PTE_PRESENT)
			free_tables(root[slot] & PTE_ADDR_MASK, 3);
	}
	for (unsigned i = 0; i < mm->shared_count; i++) {
		/* shm_revoke must not find it once it is freed. */
		forget_mappings(mm->shared[i], mm, EVERY_VA);
		shm_put(mm->shared[i]);
	}
	pmm_free_frame(mm->root);
	kfree(mm);
}

static bool mapped(struct mm *mm, uint64_t va)
{
	return pt_translate(mm->root, va, NULL, NULL) == 0;
}

/*
 * A change is about to clear PTEs; caller holds mm->lock.
 * Both counts are the lock's: a path that reads them under it sees the
 * count raised with the change's first edit, or sees none of its edits.
 */
static void flush_pending_raise(struct mm *mm)
{
	mm->flush_pending++;
	mm->clears++;
}

/*
 * The change's flush returned. Under the lock, so that a reader that sees
 * the count drop comes after every CPU's acknowledgement of the flush.
 */
static void flush_pending_lower(struct mm *mm)
{
	uint64_t flags = spin_lock_irqsave(&mm->lock);

	mm->flush_pending--;
	spin_unlock_irqrestore(&mm->lock, flags);
}

/*
 * Takes mm->lock for mapping [va, end), once no change of the space that
 * cleared PTEs before now may still have CPUs translating through them:
 * with one pending, it drops the lock and flushes the range itself, which
 * covers every PTE cleared before the flush. Another clear meanwhile
 * (mm->clears moved) may have been of this range again: flush again. The
 * loop goes on only while other threads of the space keep unmapping, each
 * pass with interrupts on. A map takes every hold this way.
 */
static void hold_lock_for_map(struct mm *mm, struct hold *h, uint64_t va,
			      uint64_t end)
{
	uint64_t flags = spin_lock_irqsave(&mm->lock);
	uint64_t clears;

	while (mm->flush_pending && !INJECTED(tlb, TLB_BUG_MAP_NO_WAIT)) {
		clears = mm->clears;
		spin_unlock_irqrestore(&mm->lock, flags);
		flush_tlb_mm_range(mm, va, end, PAGE_SHIFT, TLB_TABLES_KEPT);
		flags = spin_lock_irqsave(&mm->lock);
		if (mm->clears == clears)
			break;
	}
	hold_start(h, flags);
}

/*
 * Whether a page of [va, end) is mapped, stepping over absent tables, in
 * holds of MM_CHUNK_STEPS. A first answer only, to fail before allocating:
 * the lock is dropped before the map, which finds a page mapped meanwhile
 * when pt_map refuses it.
 */
static bool range_has_page(struct mm *mm, uint64_t va, uint64_t end)
{
	bool found = false;

	while (!found && va < end) {
		struct hold h;

		hold_lock(mm, &h);
		while (!found &&
		       (va = pt_next_mappable(mm->root, va, end, &h.steps)) <
			       end &&
		       h.steps) {
			h.steps--;
			found = mapped(mm, va);
			va += PAGE_SIZE;
		}
		hold_unlock(mm, &h);
	}
	return found;
}

/*
 * Unmaps [va, end); frames of anonymous pages are freed. Absent tables are
 * stepped over whole. One flush per batch, which may span several holds
 * ("Bounded work", above): a batch fills up only on very large unmaps.
 * When another change's flush is pending, the rest of the range joins the
 * flush, holes included: pages it cleared are this unmap's to drop too.
 */
static void unmap_range(struct mm *mm, uint64_t va, uint64_t end)
{
	struct tlb_batch batch;
	bool raised = false;

	tlb_batch_begin(&batch, mm);
	while (va < end) {
		struct hold h;

		hold_lock(mm, &h);
		if (mm->flush_pending > (raised ? 1u : 0u)) {
			tlb_batch_page(&batch, va);
			tlb_batch_page(&batch, end - PAGE_SIZE);
		}
		if (!raised)
			flush_pending_raise(mm);
		raised = true;
		while (!tlb_batch_full(&batch, FRAMES_PER_UNMAP) &&
		       (va = pt_next_mappable(mm->root, va, end, &h.steps)) <
			       end &&
		       h.steps) {
			size_t batched = batch.count;
			uint64_t old;

			h.steps--;
			if (!pt_unmap(mm->root, va, &old, &batch)) {
				mm->pages--;
				if (!(old & PTE_SOFT_SHARED))
					tlb_batch_free_page(
						&batch, old & PTE_ADDR_MASK);
			}
			/* Its pages and tables: "Memory accounts". */
			mm->charged -= batch.count - batched;
			va += PAGE_SIZE;
		}
		hold_unlock(mm, &h);
		if (va >= end || tlb_batch_full(&batch, FRAMES_PER_UNMAP)) {
			tlb_batch_flush(&batch);
			flush_pending_lower(mm);
			raised = false;
		}
	}
}

int mm_map_anon(struct mm *mm, uint64_t va, uint64_t len, uint32_t prot)
{
	uint64_t pte = pte_flags(prot), done = va, end = va + len;
	int err = 0;

	if (!range_ok(va, len) || len > MM_MAP_MAX_BYTES || !prot_ok(prot))
		return -EINVAL;
	if (range_has_page(mm, va, end))
		return -EEXIST;
	while (!err && done < end) {
		struct hold h;

		hold_lock_for_map(mm, &h, done, end);
		while (h.steps && done < end) {
			unsigned tables = 0;
			uint64_t frame;

			h.steps--;
			if (!charge_fits(mm, 1)) {
				err = -EBUSY; /* its share: "Memory accounts" */
				break;
			}
			frame = pmm_alloc_user_frame();
			if (!frame) {
				err = -ENOMEM;
				break;
			}
			err = pt_map(mm->root, done, frame, PAGE_4K, pte,
				     &tables);
			mm->charged += tables; /* linked even on failure */
			if (err) { /* -EEXIST: mapped since range_has_page */
				pmm_free_frame(frame);
				break;
			}
			mm->charged++;
			mm->pages++;
			done += PAGE_SIZE;
		}
		hold_unlock(mm, &h);
	}
	if (err)
		unmap_range(mm, va, done); /* nothing half-done stays */
	return err;
}

int mm_unmap(struct mm *mm, uint64_t va, uint64_t len)
{
	if (!range_ok(va, len))
		return -EINVAL;
	unmap_range(mm, va, va + len);
	return 0;
}

int mm_protect(struct mm *mm, uint64_t va, uint64_t len, uint32_t prot)
{
	uint64_t p = va, end = va + len;
	int err = 0;

	if (!range_ok(va, len) || !prot_ok(prot))
		return -EINVAL;
	/* Stops at the first hole: an absent table fails at once. */
	while (!err && p < end) {
		struct hold h;

		hold_lock(mm, &h);
		for (; h.steps && p < end; p += PAGE_SIZE) {
			uint64_t old = 0;

			h.steps--;
			if (pt_translate(mm->root, p, NULL, &old))
				err = -ENOENT;
			else if (!prot_within_ceiling(old, prot))
				err = -EPERM; /* "Rights of shared pages" */
			else
				err = pt_protect(
					mm->root, p,
					pte_flags(prot) |
						(old & PTE_SOFT_SHM_BITS));
			if (err)
				break;
		}
		hold_unlock(mm, &h);
	}
	/* Rights may have shrunk: nobody may keep using the old ones. */
	if (p > va)
		flush_tlb_mm_range(mm, va, p, PAGE_SHIFT, TLB_TABLES_KEPT);
	return err;
}

int mm_write(struct mm *mm, uint64_t va, const void *src, size_t n)
{
	const uint8_t *from = src;

	while (n) {
		uint64_t pa, chunk = MIN(n, PAGE_SIZE - (va % PAGE_SIZE));

		if (pt_translate(mm->root, va, &pa, NULL))
			return -EFAULT;
		memcpy(phys_to_virt(pa), from, chunk);
		va += chunk;
		from += chunk;
		n -= chunk;
	}
	return 0;
}

uint64_t shm_frames_for(uint64_t len)
{
	/* Checked before rounding up, which would wrap a huge len to 0. */
	if (!len || len > SHM_MAX_PAGES * PAGE_SIZE)
		return 0;
	return ALIGN_UP(len, PAGE_SIZE) / PAGE_SIZE;
}

uint64_t shm_frames(const struct shm *shm)
{
	return shm->pages;
}

struct shm *shm_create(uint64_t len)
{
	uint64_t pages = shm_frames_for(len);
	struct shm *shm;

	if (!pages)
		return NULL;
	/* Counted first, so that shm_put's uncount balances every path. */
	if (__atomic_add_fetch(&shm_live, 1, __ATOMIC_RELAXED) > SHM_MAX) {
		__atomic_sub_fetch(&shm_live, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	shm = kzalloc(sizeof(*shm) + pages * sizeof(uint64_t));
	if (!shm) {
		__atomic_sub_fetch(&shm_live, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	shm->pages = pages;
	shm->refcount = 1;
	shm->lock = (struct spinlock)SPINLOCK_INIT;
	for (uint64_t i = 0; i < pages; i++) {
		shm->frames[i] = pmm_alloc_user_frame();
		if (!shm->frames[i]) {
			shm->pages = i;
			shm_put(shm);
			return NULL;
		}
	}
	return shm;
}

void shm_put(struct shm *shm)
{
	if (__atomic_sub_fetch(&shm->refcount, 1, __ATOMIC_ACQ_REL))
		return;
	/* Revoked: shm_revoke freed the frames. */
	for (uint64_t i = 0; !shm->revoked && i < shm->pages; i++)
		pmm_free_frame(shm->frames[i]);
	kfree(shm);
	__atomic_sub_fetch(&shm_live, 1, __ATOMIC_RELAXED);
}

/*
 * Records that mm maps shm at va, unless shm was revoked. Caller holds
 * mm->lock, before mapping the pages: a revoke that comes after this finds
 * the record and waits for mm->lock before unmapping them, and one that
 * came before has freed the frames, which must then not be mapped.
 */
static int record_mapping(struct shm *shm, struct mm *mm, uint64_t va)
{
	uint64_t flags = spin_lock_irqsave(&shm->lock);
	unsigned mine = 0;
	int err = 0;

	for (unsigned i = 0; i < shm->map_count; i++)
		mine += shm->maps[i].mm == mm;
	if (shm->revoked)
		err = -EIDRM;
	else if (mine == SHM_MAPPINGS_PER_MM) /* its share of the records */
		err = -EBUSY;
	else if (shm->map_count == SHM_MAX_MAPPINGS)
		err = -ENOMEM;
	else
		shm->maps[shm->map_count++] = (struct shm_mapping){mm, va};
	spin_unlock_irqrestore(&shm->lock, flags);
	return err;
}

/* Whether shm was revoked. Caller holds mm->lock ("Bounded work"). */
static bool shm_revoked(struct shm *shm)
{
	uint64_t flags = spin_lock_irqsave(&shm->lock);
	bool revoked = shm->revoked;

	spin_unlock_irqrestore(&shm->lock, flags);
	return revoked;
}

int mm_map_shared(struct mm *mm, struct shm *shm, uint64_t va, uint32_t prot)
{
	uint64_t len = shm->pages * PAGE_SIZE, end;
	uint64_t pte = shared_pte_flags(prot);
	uint64_t done = va;
	bool recorded = false;
	unsigned tables;
	struct hold h;
	int err = 0;

	if (!range_ok(va, len) || !prot_ok(prot))
		return -EINVAL;
	end = va + len;
	if (range_has_page(mm, va, end))
		return -EEXIST;
	hold_lock_for_map(mm, &h, va, end);
	if (mm->shared_count == MM_MAX_SHARED)
		err = -ENOMEM;
	if (!err) {
		err = record_mapping(shm, mm, va);
		recorded = !err;
	}
	while (!err && done < end) {
		if (!h.steps) { /* the next chunk: "Bounded work", above */
			hold_unlock(mm, &h);
			hold_lock_for_map(mm, &h, done, end);
			if (shm_revoked(shm)) {
				err = -EIDRM;
				break;
			}
		}
		h.steps--;
		/* The object's frames are not the space's; its tables are. */
		if (!charge_fits(mm, 0)) {
			err = -EBUSY;
			break;
		}
		tables = 0;
		err = pt_map(mm->root, done,
			     shm->frames[(done - va) / PAGE_SIZE], PAGE_4K, pte,
			     &tables);
		mm->charged += tables;
		if (!err) {
			mm->pages++;
			done += PAGE_SIZE;
		}
	}
	/* Other maps of the space may have filled the slots meanwhile. */
	if (!err && mm->shared_count == MM_MAX_SHARED)
		err = -ENOMEM;
	if (!err) {
		mm->shared[mm->shared_count++] = shm;
		__atomic_add_fetch(&shm->refcount, 1, __ATOMIC_RELAXED);
	}
	hold_unlock(mm, &h);
	/*
	 * The record goes only once the pages it names are unmapped and
	 * flushed: a revoke that came in between must still find them, or
	 * it would free frames that present PTEs map.
	 */
	if (err && done > va)
		unmap_range(mm, va, done);
	if (err && recorded)
		forget_mappings(shm, mm, va);
	return err;
}

/*
 * One of mm's references to shm (one per mapping) moves to the revoke,
 * which drops it after its flush: the slot in mm->shared is free again.
 * False when mm holds none: a mapping that failed after it was recorded
 * (mm_map_shared's error path). Caller holds mm->lock.
 */
static bool take_shared(struct mm *mm, const struct shm *shm)
{
	for (unsigned i = 0; i < mm->shared_count; i++) {
		if (mm->shared[i] == shm) {
			mm->shared[i] = mm->shared[--mm->shared_count];
			return true;
		}
	}
	return false;
}

/*
 * Unmaps, into b, the pages of shm mapped in m->mm at m->va that still map
 * shm's frames (the space may have unmapped them, or mapped others there),
 * and batches every page of the range for the flush, present or not: a
 * PTE another change cleared may still be cached until that change's
 * flush returns, and the frames are freed after this one's. Raises the
 * space's flush_pending on the first call for m (*pending), for the caller
 * to lower after the flush. One hold of mm->lock, of MM_CHUNK_STEPS pages
 * at most. Returns REVOKE_BATCH_FULL or REVOKE_HOLD_ENDED, with the rest
 * left mapped, when b has no room left or the hold used up its steps;
 * REVOKE_DONE once done, with *taken set when mm's reference to shm moved
 * to the caller.
 */
enum revoke_progress {
	REVOKE_DONE,
	REVOKE_BATCH_FULL, /* flush what is batched, then go on */
	REVOKE_HOLD_ENDED, /* go on: the lock was let go between chunks */
};

static enum revoke_progress revoke_mapping(struct shm *shm,
					   const struct shm_mapping *m,
					   struct tlb_batch *b,
					   uint64_t *next_page, bool *pending,
					   bool *taken)
{
	enum revoke_progress progress = REVOKE_DONE;
	struct mm *mm = m->mm;
	size_t batched;
	struct hold h;

	hold_lock(mm, &h);
	if (!*pending)
		flush_pending_raise(mm);
	*pending = true;
	for (; *next_page < shm->pages; ++*next_page) {
		uint64_t va = m->va + *next_page * PAGE_SIZE, pa, old;

		if (tlb_batch_full(b, FRAMES_PER_UNMAP)) {
			progress = REVOKE_BATCH_FULL;
			break;
		}
		if (!h.steps) {
			progress = REVOKE_HOLD_ENDED;
			break;
		}
		h.steps--;
		if (!INJECTED(tlb, TLB_BUG_REVOKE_SKIPS_CLEARED))
			tlb_batch_page(b, va);
		if (pt_translate(mm->root, va, &pa, &old) ||
		    !(old & PTE_SOFT_SHARED) || pa != shm->frames[*next_page])
			continue;
		batched = b->count;
		if (!pt_unmap(mm->root, va, &old, b))
			mm->pages--;
		mm->charged -= b->count - batched; /* the tables it emptied */
	}
	if (progress == REVOKE_DONE)
		*taken = take_shared(mm, shm);
	hold_unlock(mm, &h);
	return progress;
}

int shm_revoke(struct shm *shm)
{
	struct tlb_multi_batch mb;
	struct shm_mapping maps[SHM_MAX_MAPPINGS];
	bool pending[SHM_MAX_MAPPINGS] = {0};
	bool taken[SHM_MAX_MAPPINGS] = {0};
	unsigned count = 0;
	uint64_t flags;

	flags = spin_lock_irqsave(&shm->lock);
	if (shm->revoked) {
		spin_unlock_irqrestore(&shm->lock, flags);
		return -EIDRM;
	}
	shm->revoked = true;
	for (unsigned i = 0; i < shm->map_count; i++) {
		struct mm *mm = shm->maps[i].mm;
		uint32_t refs =
			__atomic_load_n(&mm->refcount, __ATOMIC_RELAXED);

		/* A reference unless it is already zero (a space being torn
		 * down, which nothing runs in any more). */
		while (refs && !__atomic_compare_exchange_n(
				       &mm->refcount, &refs, refs + 1, false,
				       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			;
		if (refs)
			maps[count++] = shm->maps[i];
	}
	shm->map_count = 0;
	spin_unlock_irqrestore(&shm->lock, flags);

	tlb_multi_batch_begin(&mb);
	for (unsigned i = 0; i < count; i++) {
		uint64_t page = 0;
		struct tlb_batch *b;

		for (;;) {
			enum revoke_progress progress = REVOKE_BATCH_FULL;

			b = tlb_multi_batch_add(&mb, maps[i].mm);
			if (b)
				progress =
					revoke_mapping(shm, &maps[i], b, &page,
						       &pending[i], &taken[i]);
			if (progress == REVOKE_DONE)
				break;
			/* Out of room: flush what is batched, go on. */
			if (progress == REVOKE_BATCH_FULL)
				tlb_multi_batch_flush(&mb);
		}
	}
	tlb_multi_batch_flush(&mb);
	/* Every CPU that held a translation to them has dropped it. */
	for (uint64_t i = 0; i < shm->pages; i++)
		pmm_free_frame(shm->frames[i]);
	for (unsigned i = 0; i < count; i++) {
		if (pending[i])
			flush_pending_lower(maps[i].mm);
		mm_put(maps[i].mm);
		if (taken[i]) /* the mapping's reference (take_shared) */
			shm_put(shm);
	}
	return 0;
}
