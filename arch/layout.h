/* SPDX-License-Identifier: MIT */
/*
 * The kernel's virtual address space (docs/memory-layout.md):
 *
 *   0x0000000000000000 - 0x00007fffffffffff  user space (lower half)
 *   0xffff800000000000 - ...                 direct map of physical memory
 *                                            (PML4 slot 256 and up)
 *   0xffffc00000000000 - 0xffffc07fffffffff  device mappings (ioremap; slot 384)
 *   0xffffc08000000000 - 0xffffc0ffffffffff  kernel stacks (slot 385)
 *   0xffffffff80000000 - 0xffffffffffffffff  kernel image (-2 GiB; slot 511)
 *
 * Every address space shares PML4 slots 256..511: they point to the same
 * kernel page-directory-pointer tables, all allocated at boot, so a change to
 * the kernel half is seen by every address space at once.
 */
#ifndef ARCH_LAYOUT_H
#define ARCH_LAYOUT_H

#include "lib/types.h"
#include "arch/consts.h"

#define PAGE_SHIFT	 12
#define LARGE_PAGE_SIZE	 (2ULL << 20) /* 2 MiB */
#define HUGE_PAGE_SIZE	 (1ULL << 30) /* 1 GiB */
#define IOREMAP_BASE	 0xffffc00000000000ULL
#define IOREMAP_SIZE	 (512ULL << 30)
#define KSTACK_BASE	 0xffffc08000000000ULL
#define KSTACK_WINDOW	 (512ULL << 30)
#define USER_TOP	 0x0000800000000000ULL /* first non-user address */
#define DIRECT_MAP_LIMIT (64ULL << 40)	       /* the direct map spans 64 TiB */

#define PML4_KERNEL_FIRST 256 /* first PML4 slot of the kernel half */
#define PML4_ENTRIES	  512

#ifndef SHOOTDOWN_SIM

static inline void *phys_to_virt(uint64_t phys)
{
	return (void *)(phys + DIRECT_MAP_BASE);
}

static inline uint64_t virt_to_phys(const void *virt)
{
	uint64_t v = (uint64_t)virt;

	/* The image is mapped at -2 GiB, everything else in the direct map. */
	if (v >= KERNEL_VMA)
		return v - KERNEL_VMA;
	return v - DIRECT_MAP_BASE;
}

#else
/*
 * The TLB simulator (tests/host/tlb_sim, built with SHOOTDOWN_SIM) runs
 * the kernel's page-table code in a host process, where physical memory
 * is an array of frames and the direct map is where the host put that
 * array: tests/host/tlb_sim_host.c converts, and fails the run for an
 * address that is not simulated RAM. Kernel builds never see this.
 */
void *sim_phys_to_virt(uint64_t phys);
uint64_t sim_virt_to_phys(const void *virt);

static inline void *phys_to_virt(uint64_t phys)
{
	return sim_phys_to_virt(phys);
}

static inline uint64_t virt_to_phys(const void *virt)
{
	return sim_virt_to_phys(virt);
}

#endif

#endif
