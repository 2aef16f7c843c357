/* SPDX-License-Identifier: MIT */
/*
 * Address spaces. Each has its own PML4 whose upper half points at the
 * kernel's PDPTs (shared by all: arch/layout.h) and whose lower half holds the
 * task's user mappings, built from 4 KiB pages.
 *
 * The TLB fields are the protocol's (mm/tlb.c): a context id that is never
 * reused, a generation bumped by every change that needs a flush, and the
 * mask of CPUs that may hold the address space's translations.
 */
#ifndef MM_MM_H
#define MM_MM_H

#include "lib/types.h"
#include "sync/cpumask.h"
#include "sync/shared.h"
#include "sync/spinlock.h"

/* Protection bits, as user programs pass them (uapi/syscall.h). */
#define MM_PROT_READ  0x1
#define MM_PROT_WRITE 0x2
#define MM_PROT_EXEC  0x4

#define MM_MAX_SHARED 16 /* shared-memory objects one address space maps */

/*
 * Steps of work one hold of an address space's lock may do (mm/mm.c,
 * "Bounded work with interrupts off"): a step is one user page handled or
 * one absent upper-level table entry stepped over. The lock is held with
 * interrupts off, so this bounds how long a CPU in a map, unmap, protect
 * or revoke leaves flush IPIs and the timer waiting. A step is at most a
 * page walk plus, for an unmap, the scans of the three tables it may have
 * emptied (about 1,500 entry reads), or, for a map, the allocation and
 * zeroing of four frames: 64 steps is at most about 1 MiB zeroed. Fewer
 * would take and let go the lock more often for no gain on a large unmap,
 * whose batch (TLB_BATCH_FRAMES, 256) then still covers four holds with
 * one flush. MM0010 and MM0011 print the longest hold in TSC cycles.
 */
#define MM_CHUNK_STEPS 64

/*
 * The longest anonymous mapping one call may make, 64 MiB (16,384 pages):
 * the call allocates and zeroes every frame, in chunks with interrupts on
 * between them, so its length is the bound on its work. Larger requests
 * fail with -EINVAL; a program maps big regions in several calls.
 */
#define MM_MAP_MAX_BYTES (64ULL << 20)
#define SHM_MAX_MAPPINGS 32 /* mappings of one object, in all spaces */
/*
 * Mappings of one object in one address space: a holder of the map right
 * cannot take every record of an object from the others (8 spaces fill
 * them). Mapping an object twice or more is rare: a window moved about.
 */
#define SHM_MAPPINGS_PER_MM 4

struct shm;

struct mm {
	uint64_t root;	     /* physical address of the PML4; set at creation */
	uint64_t context_id; /* unique for the life of the system */
	uint32_t refcount;   /* atomic: tasks, threads, lazy CPUs using it */
	/* Bumped (after the page-table change) by every flush, with a locked
	 * add; read by switching and flushing CPUs. */
	SHARED(uint64_t) tlb_gen;
	/* CPUs that may hold its translations: each sets and clears its own
	 * bit atomically; flushers read a snapshot. */
	struct shared_cpumask cpu_mask;
	/* Its global ASID's PCID (0: none), set once by a flusher and kept
	 * until teardown; and whether CPUs may still run it under a dynamic
	 * ASID (mm/tlb.c, "Global ASIDs"). */
	SHARED(uint16_t) global_pcid;
	SHARED(bool) asid_transition;

	struct spinlock lock; /* guards the user half's tables and below */
	/*
	 * Changes that cleared user PTEs and whose flush has not returned,
	 * and how many ever did (mm/mm.c, "Flushes still pending").
	 */
	uint32_t flush_pending;
	uint64_t clears;
	uint64_t pages; /* user pages mapped (anonymous and shared) */
	/* Frames it keeps: anonymous pages and user page tables, at most
	 * mm_memory_limit() (mm/mm.c, "Memory accounts"). */
	uint64_t charged;
	struct shm
		*shared[MM_MAX_SHARED]; /* objects mapped: a reference each */
	unsigned shared_count;
};

/* A new, empty address space (refcount 1), or NULL when out of memory. */
struct mm *mm_create(void);
void mm_get(struct mm *mm);
/* Drops a reference; the last one frees every page and table it owned. */
void mm_put(struct mm *mm);

/*
 * Maps len bytes at va (both page-aligned, in the user half, len at most
 * MM_MAP_MAX_BYTES) to fresh zeroed frames. Fails with -EEXIST if any page
 * is already mapped, -EBUSY past mm_memory_limit(), -ENOMEM, -EINVAL for a
 * bad range or protection. The
 * work is done in chunks with the lock dropped between them, so other
 * threads of the space may see (and use) pages of a call that then fails:
 * on failure, the call unmaps every page it mapped before it returns, and
 * nothing it mapped stays.
 */
int mm_map_anon(struct mm *mm, uint64_t va, uint64_t len, uint32_t prot);

/*
 * Unmaps every mapped page in [va, va+len); frees anonymous frames. Its
 * work grows with the tables present in the range, not with len: absent
 * tables are stepped over whole.
 */
int mm_unmap(struct mm *mm, uint64_t va, uint64_t len);

/*
 * Changes the protection of mapped pages in [va, va+len): -ENOENT for a
 * hole, -EPERM when a shared page would get more than it was mapped with.
 * Pages are changed in address order, in chunks, and a failure stops at
 * the page that failed: the pages below it keep their new protection
 * (as with Linux's mprotect), and are flushed before the call returns.
 */
int mm_protect(struct mm *mm, uint64_t va, uint64_t len, uint32_t prot);

/*
 * Copies n bytes to va in mm (pages already mapped), through the direct
 * map: for loading programs before they run. -EFAULT on an unmapped page.
 */
int mm_write(struct mm *mm, uint64_t va, const void *src, size_t n);

/*
 * The most TSC cycles any one hold of an address space's lock by a map,
 * unmap, protect or revoke took, since boot (system-wide): a report of
 * what MM_CHUNK_STEPS bounds, from taking the lock to letting go.
 */
uint64_t mm_hold_max_cycles(void);

/*
 * The most frames one address space may keep for its anonymous pages and
 * user page tables: a quarter of RAM (mm/mm.c, "Memory accounts"). A map
 * that would pass it fails with -EBUSY.
 */
uint64_t mm_memory_limit(void);

/* True when [va, va+len) lies in the user half and does not wrap. */
bool user_range_ok(uint64_t va, uint64_t len);

/*
 * Shared memory: an object of frames that several address spaces map.
 * NULL for a length of 0 or above the largest object, or out of memory.
 */
struct shm *shm_create(uint64_t len);
/* The frames an object of len bytes holds; 0 for a length shm_create refuses. */
uint64_t shm_frames_for(uint64_t len);
/* The frames shm holds (until a revoke frees them early). */
uint64_t shm_frames(const struct shm *shm);
void shm_put(struct shm *shm);
/*
 * Maps all of shm at va in mm (the mm keeps a reference to the object).
 * prot is also the most mm_protect may later give these pages.
 * -EIDRM once the object was revoked; -ENOMEM when mm maps MM_MAX_SHARED
 * objects or shm is mapped SHM_MAX_MAPPINGS times already; -EBUSY when mm
 * maps shm SHM_MAPPINGS_PER_MM times already, or its page tables would
 * pass mm_memory_limit().
 */
int mm_map_shared(struct mm *mm, struct shm *shm, uint64_t va, uint32_t prot);

/*
 * Revokes shm: unmaps its pages from every address space that maps it
 * (their other mappings stay), flushes every CPU that may hold one of those
 * translations (one round for all the spaces: unmap_batch=), and only then
 * frees the object's frames and the page tables the unmaps emptied. The
 * object itself lives on until its last reference goes, with no pages:
 * mapping it again fails with -EIDRM, and so does a second revoke
 * (otherwise 0). Call it with interrupts on and no lock held: it waits for
 * the other CPUs' acknowledgements.
 */
int shm_revoke(struct shm *shm);

#endif
