// SPDX-License-Identifier: MIT
/*
 * Boot-time setup of the frame allocator and the locked interface the rest
 * of the kernel uses. The bookkeeping itself is mm/frame_alloc.c.
 *
 * The bitmap lives in the first usable range that can hold it below 4 GiB:
 * until mm/kmap.c switches to the kernel page tables, only the first 4 GiB
 * are reachable through the boot direct map. Frames are handed out lowest
 * first, so the page tables kmap allocates are reachable too.
 *
 * The reserve
 *   A hostile task may map memory until none is left. The kernel must still
 *   be able to make a thread's stack, a heap object or a kernel table for
 *   the calls that follow (and for the teardown that gives the memory
 *   back), so user memory may not take the last frames, the reserve:
 *   pmm_alloc_user_frame refuses while no more than those are free,
 *   and pmm_alloc_frame, the kernel's, may use them. The check and the
 *   allocation are one step under the lock, so two CPUs cannot both pass
 *   the check for the last frame above the reserve.
 *   The size: 1/32 of RAM, and never less than 1 MiB. What the kernel
 *   allocates per system call is bounded and small (a 16 KiB stack for a
 *   thread, a task's root table and structure, a shared object's frame
 *   list of at most 32 KiB), so 1 MiB already covers dozens of such calls
 *   made while user memory is full; a share of RAM scales it with the
 *   machine, where more tasks run at once. 1/32 keeps 97% of RAM for user
 *   programs (4 MiB of the tests' 128 MiB).
 */
#include "mm/pmm.h"
#include "mm/frame_alloc.h"
#include "arch/layout.h"
#include "console/kprintf.h"
#include "trap/panic.h"
#include "lib/string.h"
#include "lib/errno.h"
#include "sync/spinlock.h"

#define MAX_USABLE_RANGES 128
#define MAX_RESERVED	  (MB2_MAX_MODULES + 4)
#define LOW_MEMORY_END	  MiB(1)
#define BOOT_MAP_LIMIT	  GiB(4)
#define PMM_RESERVE_MIN	  (MiB(1) / PAGE_SIZE) /* "The reserve", above */
#define PMM_RESERVE_SHARE 32		       /* 1/32 of the usable frames */

extern char kernel_phys_start[], kernel_phys_end[];

/* lock guards allocator; the ranges are written once at boot. */
static struct spinlock lock = SPINLOCK_INIT;
static struct frame_alloc allocator;
static struct phys_range usable[MAX_USABLE_RANGES];
static size_t usable_count;
static uint64_t total_frames;
static uint64_t reserve_frames; /* written once at boot */

static size_t collect_reserved(const struct boot_info *boot, uint64_t mbi_phys,
			       struct phys_range *r)
{
	size_t n = 0;

	r[n++] = (struct phys_range){0, LOW_MEMORY_END};
	r[n++] = (struct phys_range){(uint64_t)kernel_phys_start,
				     (uint64_t)kernel_phys_end};
	r[n++] = (struct phys_range){mbi_phys, mbi_phys + boot->total_size};
	if (boot->fb.kind != FB_KIND_NONE)
		r[n++] = (struct phys_range){boot->fb.phys,
					     boot->fb.phys +
						     (uint64_t)boot->fb.pitch *
							     boot->fb.height};
	for (size_t i = 0; i < boot->module_count; i++)
		r[n++] = (struct phys_range){boot->modules[i].start,
					     boot->modules[i].end};
	return n;
}

/* Where the bitmap goes: the start of a usable range below 4 GiB. */
static uint64_t place_bitmap(uint64_t bytes)
{
	for (size_t i = 0; i < usable_count; i++) {
		uint64_t start = usable[i].start;

		if (usable[i].end - start >= bytes &&
		    start + bytes <= BOOT_MAP_LIMIT)
			return start;
	}
	panic("pmm: no usable range below 4 GiB can hold the %llu-byte "
	      "frame bitmap",
	      (unsigned long long)bytes);
}

void pmm_init(const struct boot_info *boot, uint64_t mbi_phys)
{
	struct phys_range reserved[MAX_RESERVED];
	size_t n_reserved = collect_reserved(boot, mbi_phys, reserved);
	uint64_t first, last, bytes, bitmap_phys, bitmap_end;
	bool truncated;

	usable_count = memmap_usable(boot->mmap, boot->mmap_count, reserved,
				     n_reserved, usable, MAX_USABLE_RANGES,
				     &truncated);
	if (truncated)
		kprintf("pmm: warning: memory map too fragmented; some RAM "
			"is left unused\n");
	if (!usable_count)
		panic("pmm: the memory map has no usable RAM above 1 MiB "
		      "(%zu entries)",
		      boot->mmap_count);

	first = usable[0].start >> PAGE_SHIFT;
	last = usable[usable_count - 1].end >> PAGE_SHIFT;
	bytes = ALIGN_UP(frame_alloc_bitmap_bytes(last - first), PAGE_SIZE);
	bitmap_phys = place_bitmap(bytes);
	bitmap_end = bitmap_phys + bytes;
	frame_alloc_init(&allocator, phys_to_virt(bitmap_phys), first,
			 last - first);

	for (size_t i = 0; i < usable_count; i++) {
		uint64_t start = usable[i].start;
		int err;

		/* The bitmap sits at the start of its range. */
		if (start == bitmap_phys)
			start = bitmap_end;
		if (start >= usable[i].end)
			continue;
		err = frame_alloc_add_free(&allocator, start >> PAGE_SHIFT,
					   (usable[i].end - start) >>
						   PAGE_SHIFT);
		KASSERT(!err, "usable ranges overlap: range %zu [%#llx, %#llx)",
			i, (unsigned long long)start,
			(unsigned long long)usable[i].end);
	}
	total_frames = allocator.free_count;
	reserve_frames = MAX(PMM_RESERVE_MIN, total_frames / PMM_RESERVE_SHARE);
	kprintf("pmm: %llu MiB usable in %zu ranges, frames %#llx-%#llx, "
		"bitmap %llu KiB at %#llx\n",
		(unsigned long long)(total_frames >> (20 - PAGE_SHIFT)),
		usable_count, (unsigned long long)first,
		(unsigned long long)last, (unsigned long long)(bytes >> 10),
		(unsigned long long)bitmap_phys);
	kprintf("pmm: %llu KiB reserved for the kernel's own allocations\n",
		(unsigned long long)(reserve_frames << (PAGE_SHIFT - 10)));
}

/* count frames, leaving at least keep free (the reserve, or none). */
static uint64_t alloc_keeping(uint64_t count, uint64_t align, uint64_t keep)
{
	uint64_t flags = spin_lock_irqsave(&lock);
	uint64_t frame;
	int err = -ENOMEM;

	if (allocator.free_count >= keep + count)
		err = frame_alloc_range(&allocator, count, align, &frame);
	spin_unlock_irqrestore(&lock, flags);
	if (err)
		return 0;
	memset(phys_to_virt(frame << PAGE_SHIFT), 0, count * PAGE_SIZE);
	return frame << PAGE_SHIFT;
}

uint64_t pmm_alloc_frames(uint64_t count, uint64_t align)
{
	return alloc_keeping(count, align, 0);
}

uint64_t pmm_alloc_frame(void)
{
	return alloc_keeping(1, 1, 0);
}

uint64_t pmm_alloc_user_frame(void)
{
	return alloc_keeping(1, 1, reserve_frames);
}

void pmm_free_frames(uint64_t phys, uint64_t count)
{
	uint64_t flags;
	int err;

	KASSERT(IS_ALIGNED(phys, PAGE_SIZE), "freeing unaligned frame %#llx",
		(unsigned long long)phys);
	flags = spin_lock_irqsave(&lock);
	err = frame_alloc_free(&allocator, phys >> PAGE_SHIFT, count);
	spin_unlock_irqrestore(&lock, flags);
	if (err)
		panic("pmm: freeing %llu frames at %#llx: %s",
		      (unsigned long long)count, (unsigned long long)phys,
		      err == -EINVAL ? "double free" : "not managed here");
}

uint64_t pmm_free_count(void)
{
	return __atomic_load_n(&allocator.free_count, __ATOMIC_RELAXED);
}

uint64_t pmm_total_count(void)
{
	return total_frames;
}

uint64_t pmm_reserve_count(void)
{
	return reserve_frames;
}

const struct phys_range *pmm_usable_ranges(size_t *count)
{
	*count = usable_count;
	return usable;
}
