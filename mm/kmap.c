// SPDX-License-Identifier: MIT
/*
 * Building the kernel page tables.
 *
 * 1. One PML4 and all 256 kernel-half PDPTs, allocated now and never freed,
 *    so every address space can share them (arch/layout.h).
 * 2. The direct map: each RAM region of the memory map (available, ACPI,
 *    NVS), widened to 2 MiB, with 1 GiB pages where a whole aligned GiB is
 *    covered and the CPU has them. Read-write, not executable, global.
 *    Device memory is not direct-mapped: it gets its memory type through
 *    ioremap instead (a write-back alias of a device would be wrong).
 * 3. The kernel image at -2 GiB, 4 KiB pages, each section with its rights:
 *    text read-only and executable, rodata read-only, data and bss
 *    read-write; everything but text not executable. The boot stack's guard
 *    page stays unmapped.
 * 4. The PAT: entry 1 becomes write-combining (for framebuffers); entries 0
 *    (write-back) and 3 (uncached) keep their power-on values.
 */
#include "mm/kmap.h"
#include "arch/layout.h"
#include "mm/kstack.h"
#include "mm/pagetable.h"
#include "mm/pmm.h"
#include "mm/tlb.h"
#include "cpu/cpu.h"
#include "lib/errno.h"
#include "console/kprintf.h"
#include "trap/panic.h"
#include "trap/trap.h"
#include "arch/x86.h"
#include "sync/spinlock.h"

extern char kernel_text_start[], kernel_text_end[];
extern char kernel_rodata_start[], kernel_rodata_end[];
extern char kernel_data_start[], kernel_data_end[];
extern char kernel_ksyms_start[], kernel_ksyms_end[];
extern char boot_stack_guard[];

/* PAT memory types (SDM Vol. 3A, table 11-10) and the layout we program. */
#define PAT_UC		   0x00ULL
#define PAT_WC		   0x01ULL
#define PAT_WT		   0x04ULL
#define PAT_WB		   0x06ULL
#define PAT_UC_WEAK	   0x07ULL
#define PAT_ENTRY(i, type) ((type) << ((i)*8))
#define PAT_LAYOUT                                          \
	(PAT_ENTRY(0, PAT_WB) | PAT_ENTRY(1, PAT_WC) |      \
	 PAT_ENTRY(2, PAT_UC_WEAK) | PAT_ENTRY(3, PAT_UC) | \
	 PAT_ENTRY(4, PAT_WB) | PAT_ENTRY(5, PAT_WT) |      \
	 PAT_ENTRY(6, PAT_UC_WEAK) | PAT_ENTRY(7, PAT_UC))

uint64_t kernel_root;
static uint64_t global_bit; /* PTE_GLOBAL when the CPU has global pages */
static uint64_t nx_bit;	    /* PTE_NX when the CPU has NX */

static struct spinlock ioremap_lock = SPINLOCK_INIT;
static uint64_t ioremap_next = IOREMAP_BASE; /* guarded by ioremap_lock */
/* Guards the kernel half's page tables once other CPUs run. */
static struct spinlock kernel_tables_lock = SPINLOCK_INIT;

static void map_or_panic(uint64_t va, uint64_t pa, enum page_size size,
			 uint64_t flags)
{
	int err = pt_map(kernel_root, va, pa, size, flags, NULL);

	if (err)
		panic("kmap: mapping %#llx -> %#llx failed (%d)",
		      (unsigned long long)va, (unsigned long long)pa, err);
}

static bool is_ram(uint32_t type)
{
	return type == MB2_MMAP_AVAILABLE ||
	       type == MB2_MMAP_ACPI_RECLAIMABLE || type == MB2_MMAP_ACPI_NVS;
}

static bool direct_mapped(uint64_t pa)
{
	return pt_translate(kernel_root, DIRECT_MAP_BASE + pa, NULL, NULL) == 0;
}

/* True when no 2 MiB piece of the GiB at pa is mapped yet. */
static bool gib_unmapped(uint64_t pa)
{
	for (uint64_t off = 0; off < HUGE_PAGE_SIZE; off += LARGE_PAGE_SIZE) {
		if (direct_mapped(pa + off))
			return false;
	}
	return true;
}

static void direct_map_range(uint64_t start, uint64_t end)
{
	uint64_t flags = PTE_WRITE | nx_bit | global_bit;

	start = ALIGN_DOWN(start, LARGE_PAGE_SIZE);
	end = MIN(ALIGN_UP(end, LARGE_PAGE_SIZE), DIRECT_MAP_LIMIT);
	for (uint64_t pa = start; pa < end;) {
		if (boot_cpu.gbpages && IS_ALIGNED(pa, HUGE_PAGE_SIZE) &&
		    end - pa >= HUGE_PAGE_SIZE && gib_unmapped(pa)) {
			map_or_panic(DIRECT_MAP_BASE + pa, pa, PAGE_1G, flags);
			pa += HUGE_PAGE_SIZE;
			continue;
		}
		/* Regions widened to 2 MiB can overlap: map each page once. */
		if (!direct_mapped(pa))
			map_or_panic(DIRECT_MAP_BASE + pa, pa, PAGE_2M, flags);
		pa += LARGE_PAGE_SIZE;
	}
}

static void map_image_section(const char *start, const char *end,
			      uint64_t flags)
{
	for (uint64_t va = (uint64_t)start; va < (uint64_t)end;
	     va += PAGE_SIZE) {
		if (va == (uint64_t)boot_stack_guard)
			continue;
		map_or_panic(va, va - KERNEL_VMA, PAGE_4K, flags | global_bit);
	}
}

void kmap_build(const struct boot_info *boot)
{
	uint64_t *root;
	uint64_t mapped = 0;

	global_bit = boot_cpu.pge ? PTE_GLOBAL : 0;
	nx_bit = boot_cpu.nx ? PTE_NX : 0;
	kmap_init_this_cpu();

	kernel_root = pmm_alloc_frame();
	if (!kernel_root)
		panic("kmap: no memory for the kernel PML4");
	root = phys_to_virt(kernel_root);
	for (int slot = PML4_KERNEL_FIRST; slot < PML4_ENTRIES; slot++) {
		uint64_t pdpt = pmm_alloc_frame();

		if (!pdpt)
			panic("kmap: no memory for kernel PDPT %d", slot);
		root[slot] = pdpt | PTE_PRESENT | PTE_WRITE;
	}

	/* The first 2 MiB always: BIOS areas, the AP trampoline page. */
	direct_map_range(0, LARGE_PAGE_SIZE);
	for (size_t i = 0; i < boot->mmap_count; i++) {
		const struct mb2_region *r = &boot->mmap[i];

		if (!is_ram(r->type))
			continue;
		if (r->base >= DIRECT_MAP_LIMIT) {
			kprintf("kmap: RAM at %#llx is beyond the direct map "
				"and is not used\n",
				(unsigned long long)r->base);
			continue;
		}
		direct_map_range(r->base, r->base + r->length);
		mapped += r->length;
	}

	map_image_section(kernel_text_start, kernel_text_end, 0);
	map_image_section(kernel_rodata_start, kernel_rodata_end, nx_bit);
	map_image_section(kernel_data_start, kernel_data_end,
			  PTE_WRITE | nx_bit);
	map_image_section(kernel_ksyms_start, kernel_ksyms_end, nx_bit);
	kprintf("kmap: direct map covers %llu MiB of RAM (%s pages), image "
		"%llu KiB\n",
		(unsigned long long)(mapped >> 20),
		boot_cpu.gbpages ? "1 GiB/2 MiB" : "2 MiB",
		(unsigned long long)(((uint64_t)kernel_ksyms_end -
				      (uint64_t)kernel_text_start) >>
				     10));
}

void kmap_init_this_cpu(void)
{
	if (boot_cpu.pat)
		wrmsr(MSR_PAT, PAT_LAYOUT);
}

void kmap_activate(void)
{
	tlb_boot_init(kernel_root);
}

void *ioremap(uint64_t phys, uint64_t size, uint64_t cache)
{
	uint64_t first = ALIGN_DOWN(phys, PAGE_SIZE);
	uint64_t bytes = ALIGN_UP(phys + size, PAGE_SIZE) - first;
	uint64_t flags, va;

	flags = spin_lock_irqsave(&ioremap_lock);
	va = ioremap_next;
	if (bytes > IOREMAP_BASE + IOREMAP_SIZE - va)
		panic("ioremap: device window full mapping %#llx (+%#llx)",
		      (unsigned long long)phys, (unsigned long long)size);
	ioremap_next += bytes;
	spin_unlock_irqrestore(&ioremap_lock, flags);

	for (uint64_t off = 0; off < bytes; off += PAGE_SIZE) {
		int err =
			kmap_map_page(va + off, first + off,
				      PTE_WRITE | nx_bit | global_bit | cache);

		if (err)
			panic("ioremap: mapping %#llx failed (%d)",
			      (unsigned long long)(first + off), err);
	}
	return (void *)(va + (phys - first));
}

int kmap_map_page(uint64_t va, uint64_t pa, uint64_t flags)
{
	uint64_t irq;
	int err;

	/* Refused before any table is allocated: see kmap.h. */
	if (va < USER_TOP || (flags & global_bit) != global_bit)
		return -EINVAL;
	irq = spin_lock_irqsave(&kernel_tables_lock);
	err = pt_map(kernel_root, va, pa, PAGE_4K, flags, NULL);
	spin_unlock_irqrestore(&kernel_tables_lock, irq);
	return err;
}

int kmap_unmap_page(uint64_t va, uint64_t *old)
{
	uint64_t irq;
	int err;

	if (va < USER_TOP)
		return -EINVAL;
	irq = spin_lock_irqsave(&kernel_tables_lock);
	/* No batch: kernel tables are never freed (mm/pagetable.h). */
	err = pt_unmap(kernel_root, va, old, NULL);
	spin_unlock_irqrestore(&kernel_tables_lock, irq);
	return err;
}

uint64_t kmap_boot_stack_guard(void)
{
	return (uint64_t)boot_stack_guard;
}

bool kmap_is_stack_guard(uint64_t va)
{
	return ALIGN_DOWN(va, PAGE_SIZE) == (uint64_t)boot_stack_guard ||
	       kstack_is_guard(va);
}
