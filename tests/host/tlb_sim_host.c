// SPDX-License-Identifier: MIT
/*
 * What the host-compiled kernel files (mm/mm.c, mm/kstack.c, mm/kmap.c,
 * mm/pagetable.c, mm/tlb.c, mm/tlb_batch.c) need from the rest of the
 * kernel, on the simulated machine:
 *
 *   mm/pmm.h     frames from tlb_sim_mmu.c's physical memory: zeroed,
 *                the last one freed handed out first (so a use after
 *                free reaches the next owner's memory); freeing one
 *                checks that no CPU can still use it (every kernel path
 *                that frees a frame, the batch's included, comes
 *                through here)
 *                Allocation k of a run's workload can be made to fail
 *                (sim_alloc_fail_at), so that the kernel's error paths
 *                run: pmm_alloc_frame returns 0, kzalloc NULL.
 *   arch/layout.h  phys_to_virt / virt_to_phys over that memory
 *   mm/heap.h    kmalloc / kzalloc / kfree over malloc; freeing a struct
 *                mm the simulator tracks checks that no CPU still uses it
 *                and keeps the memory until the run ends, so a late use
 *                is found through the CPUs' state, not by chance
 *   cpu/cpu.h boot_cpu: global pages, NX, PCID, INVPCID and INVLPGB
 *                present; INVLPGB takes at most 2 pages, so that a
 *                region's 4 pages need two requests
 *   mm/tlb.h     tlb_boot_init / tlb_load_kernel_root (mm/tlb_hw.c on
 *                hardware): the policy is already settled against
 *                boot_cpu (tlb_sim_policy.c, with tlb_policy_settle)
 *   linker.ld    the image symbols mm/kmap.c names (kmap_build, which
 *                reads them, never runs here)
 *
 * Each of these is a re-implementation for the host, marked as such:
 * the real ones manage the machine's RAM (mm/pmm.c, mm/heap.c) or are
 * filled by CPUID (cpu/cpu.c), and none of them takes part in the TLB
 * protocol.
 */
#include "tests/host/tlb_sim.h"
#include "cpu/cpu.h"
#include "trap/trap.h"
#include "mm/heap.h"
#include "mm/pmm.h"

#include <stdlib.h>
#include <string.h>

struct cpu_features boot_cpu = {.pge = true,
				.nx = true,
				.pcid = true,
				.invpcid = true,
				.invlpgb = true,
				.invlpgb_max_pages = 2};

/* Symbols of linker.ld that mm/kmap.c's boot-time code names. */
char kernel_text_start[1], kernel_text_end[1];
char kernel_rodata_start[1], kernel_rodata_end[1];
char kernel_data_start[1], kernel_data_end[1];
char kernel_ksyms_start[1], kernel_ksyms_end[1];
char boot_stack_guard[1];

/* --- Failure injection ------------------------------------------------------------ */

uint64_t sim_alloc_fail_at, sim_alloc_most;
static bool counting;	/* the workload runs: its allocations count */
static uint64_t allocs; /* made by this run's workload so far */

void sim_alloc_count(bool on)
{
	counting = on;
	allocs = 0;
}

bool sim_alloc_failed(void)
{
	return counting && sim_alloc_fail_at && allocs >= sim_alloc_fail_at;
}

/* Counts an allocation; true if it is the one to fail. */
static bool alloc_fails(const char *what)
{
	if (!counting)
		return false;
	allocs++;
	sim_alloc_most = MAX(sim_alloc_most, allocs);
	if (allocs != sim_alloc_fail_at)
		return false;
	sim_trace("%s: allocation %llu fails (injected)", what,
		  (unsigned long long)allocs);
	return true;
}

/* --- mm/pmm.h -------------------------------------------------------------------- */

uint64_t pmm_alloc_frame(void)
{
	if (alloc_fails("pmm_alloc_frame"))
		return 0;
	return mmu_alloc_frame();
}

/* The simulator has no reserve: a user frame is any frame. */
uint64_t pmm_alloc_user_frame(void)
{
	if (alloc_fails("pmm_alloc_user_frame"))
		return 0;
	return mmu_alloc_frame();
}

uint64_t pmm_alloc_frames(uint64_t count, uint64_t align)
{
	uint64_t first = 0;

	/* Fresh frames are handed out in order: contiguous. */
	if (align > 1)
		sim_fail("pmm_alloc_frames with alignment %llu: not simulated",
			 (unsigned long long)align);
	for (uint64_t i = 0; i < count; i++) {
		uint64_t frame = mmu_alloc_fresh_frame();

		first = i ? first : frame;
	}
	return first;
}

/* A scheduling point before and after: a free is a step other CPUs see. */
void pmm_free_frames(uint64_t phys, uint64_t count)
{
	bool on_a_cpu = sim_current() >= 0;

	if (on_a_cpu)
		sim_point();
	for (uint64_t i = 0; i < count; i++)
		mmu_free_frame(phys + i * PAGE_SIZE, "pmm_free_frame");
	if (on_a_cpu)
		sim_point();
}

uint64_t pmm_free_count(void)
{
	return SIM_FRAMES_MAX;
}

uint64_t pmm_total_count(void)
{
	return SIM_FRAMES_MAX;
}

/* --- arch/layout.h ----------------------------------------------------------------- */

void *sim_phys_to_virt(uint64_t phys)
{
	return mmu_phys_to_virt(phys);
}

uint64_t sim_virt_to_phys(const void *virt)
{
	return mmu_virt_to_phys(virt);
}

/* --- mm/heap.h ------------------------------------------------------------------- */

void *kmalloc(size_t size)
{
	return size ? malloc(size) : NULL;
}

void *kzalloc(size_t size)
{
	if (alloc_fails("kzalloc"))
		return NULL;
	return size ? calloc(1, size) : NULL;
}

void kfree(void *p)
{
	/* The simulator keeps a struct mm it tracks until the run ends. */
	if (p && kern_mm_freed(p))
		return;
	free(p);
}

void heap_stats(struct heap_stats *out)
{
	memset(out, 0, sizeof(*out));
}

/* --- mm/tlb.h (mm/tlb_hw.c on hardware) -------------------------------------- */

void tlb_boot_init(uint64_t kernel_root)
{
	tlb_init_cpu(kernel_root);
}

void tlb_load_kernel_root(uint64_t kernel_root)
{
	tlb_hw_load_cr3(kernel_root);
}
