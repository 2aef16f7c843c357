// SPDX-License-Identifier: MIT
/*
 * The early window: a framebuffer mapped into the boot page tables, so the
 * screen draws, and a panic reaches it, before the kernel page tables are
 * live. The boot tables map only the first 4 GiB (boot/entry.asm), and the
 * framebuffer of most laptops lies above (a 64-bit BAR), so it gets a
 * window of its own: one PDPT and EARLY_WINDOW_PDS page directories of
 * 2 MiB pages in .bss, linked at the PML4 slot of IOREMAP_BASE. The boot
 * tables have nothing there; the kernel tables map devices there once they
 * are live, and the boot tables, window and all, are then gone.
 */
#include "mm/kmap.h"
#include "arch/layout.h"
#include "cpu/cpu.h"
#include "arch/x86.h"

#define EARLY_WINDOW_PDS 2 /* 2 GiB: any framebuffer short of that */
#define TABLE_ENTRIES	 512
#define PML4_SHIFT	 39

extern uint64_t boot_pml4[TABLE_ENTRIES];

static uint64_t window_pdpt[TABLE_ENTRIES] __aligned(PAGE_SIZE);
static uint64_t window_pd[EARLY_WINDOW_PDS][TABLE_ENTRIES] __aligned(PAGE_SIZE);

void *kmap_early_window(uint64_t phys, uint64_t size)
{
	uint64_t first = ALIGN_DOWN(phys, LARGE_PAGE_SIZE);
	uint64_t end = phys + size;
	uint64_t pages, leaf;
	unsigned slot = (IOREMAP_BASE >> PML4_SHIFT) % TABLE_ENTRIES;

	if (!size || end < phys ||
	    (boot_cpu.phys_addr_bits && end > 1ULL << boot_cpu.phys_addr_bits))
		return NULL;
	/* The 2 MiB pages may reach past the framebuffer, but not past its
	 * BAR: a BAR of 2 MiB or more is aligned to its size. */
	pages = (ALIGN_UP(end, LARGE_PAGE_SIZE) - first) / LARGE_PAGE_SIZE;
	if (pages > EARLY_WINDOW_PDS * TABLE_ENTRIES)
		return NULL;
	/*
	 * Write-combining, as ioremap maps it later: PAT entry 1 becomes WC
	 * now rather than with the kernel tables (nothing in the boot
	 * tables uses it). Without a PAT, entry 1 is write-through, which
	 * suits a framebuffer that is never read.
	 */
	kmap_init_this_cpu();
	leaf = PTE_PRESENT | PTE_WRITE | PTE_HUGE | PTE_CACHE_WC |
	       (boot_cpu.nx ? PTE_NX : 0);
	for (uint64_t i = 0; i < pages; i++)
		window_pd[i / TABLE_ENTRIES][i % TABLE_ENTRIES] =
			(first + i * LARGE_PAGE_SIZE) | leaf;
	for (unsigned i = 0; i < EARLY_WINDOW_PDS; i++)
		window_pdpt[i] =
			virt_to_phys(window_pd[i]) | PTE_PRESENT | PTE_WRITE;
	boot_pml4[slot] = virt_to_phys(window_pdpt) | PTE_PRESENT | PTE_WRITE;
	/* The slot was empty, and the TLB caches no absent entries: the
	 * window is usable at once, without a flush. */
	return (void *)(IOREMAP_BASE + (phys - first));
}
