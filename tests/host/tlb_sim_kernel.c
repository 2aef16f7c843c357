// SPDX-License-Identifier: MIT
/*
 * The kernel around the protocol in the simulator. Almost all of it is
 * the kernel's own code, compiled unchanged for the host: address spaces
 * are mm/mm.c's (mm_create, mm_map_anon, mm_unmap, mm_protect,
 * mm_map_shared and shm_*, mm_get/mm_put), their tables mm/pagetable.c's,
 * kernel pages mm/kmap.c's (kmap_map_page, kmap_unmap_page), kernel
 * stacks mm/kstack.c's. This file builds a run's kernel half and address
 * spaces, turns workload operations into those calls (each change leaves
 * the oracle a permit for the old translation until its call returns),
 * makes the thread switches as sched/sched.c does, and makes accesses,
 * which tlb_sim_oracle.c judges against the page tables.
 *
 * The struct mm objects are the kernel's (kzalloc'd by mm_create); the
 * simulator keeps a record of each (struct sim_mm) and wraps mm_get and
 * mm_put (the linker's --wrap, so mm/tlb.c's calls come here too) to
 * check that no reference is taken or dropped on a dead address space.
 * When mm_put frees one (kfree), kern_mm_freed checks that no CPU still
 * has it loaded or holds it lazily, and keeps the memory until the run
 * ends, so that a late use is seen in the CPUs' state.
 *
 * A task holds one reference to its address space; a thread running on a
 * CPU another, dropped by that CPU after it switched away (as
 * sched/sched.c retires a thread after switch_mm_finish).
 */
#include "tests/host/tlb_sim.h"
#include "lib/errno.h"
#include "console/kprintf.h"
#include "arch/x86.h"
#include "trap/panic.h"
#include "lib/lab.h"
#include "mm/fault.h"
#include "mm/kmap.h"
#include "mm/kstack.h"
#include "mm/pagetable.h"
#include "mm/pmm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERNEL_OWNER (-1)
#define NO_MM	     (-1) /* a kernel thread runs */
/* The PML4 slots of the kernel half the simulator uses. */
#define SLOT_OF(va) ((unsigned)(((va) >> 39) & 511))

struct sim_mm {
	struct mm *mm; /* the kernel's */
	bool task;     /* the task still holds its reference */
	bool dead;     /* mm_put freed it */
};

/* A kernel stack slot of the workloads: stack S of "kstack-alloc S". */
struct sim_kstack {
	uint64_t top;	/* kstack_alloc's answer; 0: never allocated */
	bool allocated; /* between kstack_alloc's return and kstack_free */
	bool busy;	/* kstack_alloc or kstack_free is running */
};

static struct sim_mm mms[SIM_MMS_MAX];
static struct sim_kstack kstacks[SIM_KSTACKS];
static uint64_t kernel_root_phys;
static unsigned nmms, ncpus;
static int running[SIM_CPUS_MAX]; /* each CPU's thread: mm index, NO_MM */
/* Each CPU's spurious faults in a row, as struct thread keeps a thread's. */
static struct mm_fault_history fault_history[SIM_CPUS_MAX];

/* --- Externals of the kernel files ---------------------------------------------- */

int kprintf(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	sim_trace("%s", line);
	return n;
}

void panic(const char *fmt, ...)
{
	char why[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	sim_fail("panic: %s", why);
}

/* A lab tree's stub (lib/lab.h): this run fails, saying which. */
void lab_unwritten(const char *lab, const char *handout, const char *function)
{
	sim_fail("lab %s: %s() is not written yet (%s)", lab, function,
		 handout);
}

int kern_mm_index(const struct mm *mm)
{
	for (unsigned i = 0; i < nmms; i++) {
		if (mms[i].mm == mm)
			return (int)i;
	}
	return -1;
}

static struct sim_mm *sim_mm_of(struct mm *mm, const char *who)
{
	int i = kern_mm_index(mm);

	if (i < 0)
		sim_fail("%s on an mm the simulator does not know (%p)", who,
			 (void *)mm);
	if (mms[i].dead)
		sim_fail("%s on mm%d, which was freed", who, i + 1);
	if (!mm->refcount)
		sim_fail("%s on mm%d with no reference left", who, i + 1);
	return &mms[i];
}

/* mm/mm.c's mm_get and mm_put, behind the linker's --wrap. */
void __real_mm_get(struct mm *mm);
void __real_mm_put(struct mm *mm);
void __wrap_mm_get(struct mm *mm);
void __wrap_mm_put(struct mm *mm);

void __wrap_mm_get(struct mm *mm)
{
	sim_mm_of(mm, "mm_get");
	__real_mm_get(mm);
}

void __wrap_mm_put(struct mm *mm)
{
	int i = (int)(sim_mm_of(mm, "mm_put") - mms);

	if (mm->refcount == 1)
		sim_trace("drops the last reference to mm%d: teardown", i + 1);
	__real_mm_put(mm);
}

bool kern_mm_freed(void *p)
{
	int i = kern_mm_index(p);

	if (i < 0)
		return false;
	for (unsigned cpu = 0; cpu < ncpus; cpu++) {
		const struct tlb_cpu *c = &tlb_cpus[cpu];
		const struct mm *loaded = SIM_PEEK(&c->loaded_mm);

		if (loaded == p || c->lazy_ref == p)
			sim_fail("mm%d is freed while cpu%u still %s it%s",
				 i + 1, cpu,
				 loaded == p ? "has loaded" : "holds",
				 SIM_PEEK(&c->is_lazy) ? " (lazily)" : "");
	}
	for (unsigned w = 0; w < CPUMASK_WORDS; w++) {
		if (SIM_PEEK(&mms[i].mm->cpu_mask.bits[w]))
			sim_fail("mm%d is freed with CPUs in its cpu_mask",
				 i + 1);
	}
	mms[i].dead = true;
	sim_counts.mm_deaths++;
	return true;
}

/* --- Set-up ---------------------------------------------------------------------- */

/* Names the frame that va maps in root, for messages. */
static void label(uint64_t root, uint64_t va, enum sim_frame_kind kind,
		  int owner)
{
	uint64_t pa;

	if (!pt_translate(root, va, &pa, NULL))
		mmu_label(ALIGN_DOWN(pa, PAGE_SIZE), kind, owner);
}

static void check(int err, const char *what)
{
	if (err)
		sim_fail("setting up the machine: %s failed (%d)", what, err);
}

static void build_kernel_half(void)
{
	static const uint64_t used[] = {SIM_KERNEL_BASE, KSTACK_BASE};
	uint64_t *root;

	mmu_set_owner(KERNEL_OWNER);
	kernel_root_phys = pmm_alloc_frame();
	mmu_label(kernel_root_phys, FRAME_ROOT, KERNEL_OWNER);
	root = phys_to_virt(kernel_root_phys);
	/* As kmap_build, but only the PDPTs of the slots used here. */
	for (size_t i = 0; i < ARRAY_SIZE(used); i++)
		root[SLOT_OF(used[i])] =
			pmm_alloc_frame() | PTE_PRESENT | PTE_WRITE;
	sim_kfiles_reset(kernel_root_phys);
	/* Kernel pages: the first mappings of the ioremap window. */
	for (unsigned k = 0; k < SIM_KPAGES; k++) {
		uint64_t frame = pmm_alloc_frame();
		void *va = ioremap(frame, PAGE_SIZE, PTE_CACHE_WB);

		if ((uint64_t)va != sim_kpage_va(k))
			sim_fail("setting up the machine: ioremap gave %p for "
				 "kernel page %u",
				 va, k);
		mmu_label(frame, FRAME_KPAGE, KERNEL_OWNER);
	}
}

static void label_kstack(uint64_t top)
{
	for (uint64_t va = top - KSTACK_SIZE; va < top; va += PAGE_SIZE)
		label(kernel_root_phys, va, FRAME_KSTACK, KERNEL_OWNER);
}

/*
 * The shared object, with a reference of its own for the whole run (as the
 * creator's handle holds one in the kernel): revoke works on it whether or
 * not an address space still maps it.
 */
static struct shm *sim_shm;
/*
 * Objects revoked and replaced (revoke re-creates the object, so that
 * later operations still have one): kept, with the creator's reference,
 * until the next run, since a CPU may still be mapping one.
 */
#define SIM_RETIRED_MAX (SIM_CPUS_MAX * SIM_OPS_MAX)
static struct shm *retired[SIM_RETIRED_MAX];
static unsigned nretired;

static void label_shared(const struct shm *shm)
{
	uint64_t frames[SIM_SHM_PAGES];
	uint64_t n = sim_shm_frames(shm, frames, SIM_SHM_PAGES);

	for (uint64_t i = 0; i < n; i++)
		mmu_label(frames[i], FRAME_SHARED, KERNEL_OWNER);
}

void kern_reset(unsigned cpus, unsigned count)
{
	struct shm *shm;

	/* The last run's address spaces (a failed run leaves some). */
	for (unsigned i = 0; i < SIM_MMS_MAX; i++) {
		free(mms[i].mm);
		mms[i] = (struct sim_mm){0};
	}
	free(sim_shm);
	sim_shm = NULL;
	while (nretired)
		free(retired[--nretired]);
	ncpus = cpus;
	nmms = count;
	sim_alloc_count(false);
	oracle_reset();
	mmu_reset(cpus);
	sim_mmfile_reset();
	memset(tlb_cpus, 0, sizeof(tlb_cpus));
	memset(&kernel_mm, 0, sizeof(kernel_mm));
	memset(kstacks, 0, sizeof(kstacks));
	memset(fault_history, 0, sizeof(fault_history));
	for (unsigned cpu = 0; cpu < cpus; cpu++)
		running[cpu] = NO_MM;
	build_kernel_half();
	kstacks[0].top = kstack_alloc();
	kstacks[0].allocated = true;
	label_kstack(kstacks[0].top);

	/* The creator's reference: the run's, until the next reset. */
	sim_shm = shm = shm_create(SIM_SHM_PAGES * PAGE_SIZE);
	if (!shm)
		sim_fail("setting up the machine: shm_create failed");
	for (unsigned i = 0; i < count; i++) {
		struct mm *mm;

		mmu_set_owner((int)i);
		mm = mm_create();
		if (!mm)
			sim_fail("setting up the machine: mm_create failed");
		mms[i] = (struct sim_mm){.mm = mm, .task = true};
		mmu_label(mm->root, FRAME_ROOT, (int)i);
		check(mm_map_anon(mm, SIM_USER_BASE, SIM_SLOTS * PAGE_SIZE,
				  MM_PROT_READ | MM_PROT_WRITE),
		      "mm_map_anon");
		check(mm_map_anon(mm, SIM_USER_FAR_BASE, SIM_SLOTS * PAGE_SIZE,
				  MM_PROT_READ | MM_PROT_WRITE),
		      "mm_map_anon");
		check(mm_map_shared(mm, shm, SIM_SHM_BASE,
				    MM_PROT_READ | MM_PROT_WRITE),
		      "mm_map_shared");
		for (unsigned p = 0; p < SIM_PAGES; p++)
			label(mm->root, sim_page_va(p), FRAME_PAGE, (int)i);
	}
	label_shared(shm);
	mmu_set_owner(KERNEL_OWNER);
	sim_alloc_count(true);
}

uint64_t kern_kernel_root(void)
{
	return kernel_root_phys;
}

uint64_t kern_mm_root(unsigned index)
{
	return mms[index].mm->root;
}

struct mm *kern_mm(unsigned index)
{
	return index < nmms ? mms[index].mm : NULL;
}

size_t kern_fill_vas(uint64_t *vas, size_t max)
{
	size_t n = 0;

	for (unsigned p = 0; p < SIM_ALL_PAGES && n < max; p++)
		vas[n++] = sim_page_va(p);
	for (unsigned k = 0; k < SIM_KPAGES && n < max; k++)
		vas[n++] = sim_kpage_va(k);
	for (unsigned s = 0; s < SIM_KSTACKS; s++) {
		for (uint64_t va = kstacks[s].top - KSTACK_SIZE;
		     kstacks[s].top && va < kstacks[s].top && n < max;
		     va += PAGE_SIZE)
			vas[n++] = va;
	}
	return n;
}

/* --- Thread switches ------------------------------------------------------------ */

static void trace_state(unsigned cpu)
{
	const struct tlb_cpu *c = &tlb_cpus[cpu];
	const struct mm *mm = SIM_PEEK(&c->loaded_mm);

	if (mm == &kernel_mm || c->loaded_asid == TLB_ASID_KERNEL) {
		sim_trace("  now: kernel mm loaded, PCID %u", mmu_pcid(cpu));
		return;
	}
	if (c->loaded_asid == TLB_ASID_GLOBAL) {
		sim_trace("  now: mm%d loaded%s, global PCID %u, mm gen %llu",
			  kern_mm_index(mm) + 1,
			  SIM_PEEK(&c->is_lazy) ? " lazily" : "", mmu_pcid(cpu),
			  (unsigned long long)SIM_PEEK(&mm->tlb_gen));
		return;
	}
	sim_trace("  now: mm%d loaded%s, ASID %u PCID %u, slot gen %llu, "
		  "mm gen %llu",
		  kern_mm_index(mm) + 1, SIM_PEEK(&c->is_lazy) ? " lazily" : "",
		  c->loaded_asid, mmu_pcid(cpu),
		  (unsigned long long)c->slots[c->loaded_asid].tlb_gen,
		  (unsigned long long)SIM_PEEK(&mm->tlb_gen));
}

static void thread_switch(unsigned cpu, int next)
{
	int prev = running[cpu];
	struct mm *target = NULL;

	/* A task that exited has no threads left to run. */
	if (next != NO_MM && !mms[next].task)
		next = NO_MM;
	if (next != NO_MM) {
		target = mms[next].mm;
		mm_get(target);
		sim_trace("switches to a thread of mm%d", next + 1);
	} else {
		sim_trace("switches to a kernel thread");
	}
	sim_check_unpinned("a thread switch");
	mmu_set_user_active(cpu, false);
	sim_irq_off();
	switch_mm_irqs_off(target);
	switch_mm_finish();
	sim_irq_on();
	running[cpu] = next;
	trace_state(cpu);
	if (next != NO_MM) {
		if (mmu_phys(mmu_root(cpu)) != mms[next].mm->root)
			sim_fail("cpu%u runs a thread of mm%d on another root "
				 "(frame %u)",
				 cpu, next + 1, mmu_root(cpu));
		mmu_set_user_active(cpu, true);
	}
	if (prev != NO_MM)
		mm_put(mms[prev].mm);
}

/* --- Changes ---------------------------------------------------------------------- */

/*
 * Permits the translation va has in root now under token. Unmapped, the
 * permit names no frame (0) but marks the change of va as running, so
 * that what another CPU maps there meanwhile is permitted to it too.
 */
static void permit_current(unsigned token, int owner, uint64_t root,
			   uint64_t va)
{
	uint64_t pa, pte;

	if (pt_translate(root, va, &pa, &pte)) {
		oracle_permit(token, owner, va, 0, false);
		return;
	}
	oracle_permit(token, owner, va, mmu_frame_at(pa, "permit"),
		      pte & PTE_WRITE);
}

/*
 * What a call just mapped at va (or changed: mm_protect) may be cleared by
 * another change still running there: the oracle permits it to those.
 * Called right after the call returns: no other CPU ran since its store
 * (the unlock after the edit is no scheduling point).
 */
static void mapped_now(int owner, uint64_t root, uint64_t va)
{
	uint64_t pa, pte;

	if (!pt_translate(root, va, &pa, &pte))
		oracle_mapped(owner, va, mmu_frame_at(pa, "mapped_now"),
			      pte & PTE_WRITE);
}

/* Unmaps pages [first, first+count) of one region: one mm_unmap call. */
static void unmap_run(struct sim_mm *sm, unsigned first, unsigned count)
{
	int owner = (int)(sm - mms);
	unsigned since = oracle_mark(), token = oracle_begin_change();

	for (unsigned p = first; p < first + count; p++)
		permit_current(token, owner, sm->mm->root, sim_page_va(p));
	sim_trace("unmaps mm%d pages %u..%u", owner + 1, first,
		  first + count - 1);
	mm_unmap(sm->mm, sim_page_va(first), count * PAGE_SIZE);
	oracle_end_change(token, sm->mm);
	for (unsigned p = first; p < first + count; p++)
		oracle_settled(owner, sim_page_va(p), since);
}

/* The region a page is in: pages of one region are contiguous. */
static unsigned region_end(unsigned page)
{
	if (page >= SIM_PAGES)
		return SIM_ALL_PAGES;
	return (page / SIM_SLOTS + 1) * SIM_SLOTS;
}

static void unmap(struct sim_mm *sm, unsigned first, unsigned count)
{
	unsigned end = MIN(first + count, (unsigned)SIM_ALL_PAGES);

	for (unsigned p = first; p < end; p = region_end(p))
		unmap_run(sm, p, MIN(end, region_end(p)) - p);
}

/* Whether a map's error is one the workload allows. */
static bool map_error_ok(int err)
{
	/* Mapped already (another CPU's map may win), or made to fail. */
	return err == -EEXIST || (err == -ENOMEM && sim_alloc_failed());
}

/*
 * New frames at pages [first, first+count) of one region, unless one is
 * mapped: one mm_map_anon. Once it returns, only the new translations are
 * allowed there; until then, the frames it hands out (a map that runs out
 * of memory half way unmaps what it mapped, with a flush).
 */
static void map_run(struct sim_mm *sm, unsigned first, unsigned count)
{
	int owner = (int)(sm - mms), err;
	unsigned since = oracle_mark(), token = oracle_begin_change();

	for (unsigned p = first; p < first + count; p++)
		oracle_permit_new(token, owner, sim_page_va(p));
	mmu_set_owner(owner);
	err = mm_map_anon(sm->mm, sim_page_va(first), count * PAGE_SIZE,
			  MM_PROT_READ | MM_PROT_WRITE);
	for (unsigned p = first; !err && p < first + count; p++) {
		oracle_settled(owner, sim_page_va(p), since);
		mapped_now(owner, sm->mm->root, sim_page_va(p));
	}
	mmu_set_owner(KERNEL_OWNER);
	oracle_end_change(token, sm->mm);
	if (err && !map_error_ok(err))
		sim_fail("mm_map_anon of mm%d pages %u..%u: %d", owner + 1,
			 first, first + count - 1, err);
	for (unsigned p = first; !err && p < first + count; p++)
		label(sm->mm->root, sim_page_va(p), FRAME_PAGE, owner);
	sim_trace("maps mm%d pages %u..%u%s", owner + 1, first,
		  first + count - 1,
		  err == -EEXIST ? ": one is mapped"
		  : err		 ? ": out of memory"
				 : "");
}

static void map(struct sim_mm *sm, unsigned first, unsigned count)
{
	unsigned end = MIN(first + count, (unsigned)SIM_PAGES);

	for (unsigned p = first; p < end; p = region_end(p))
		map_run(sm, p, MIN(end, region_end(p)) - p);
}

/* A remap: the page's frame is unmapped (and freed), a new one mapped. */
static void remap(struct sim_mm *sm, unsigned page)
{
	unmap_run(sm, page, 1);
	map_run(sm, page, 1);
}

/* Write-protects a page, or makes a read-only one writable again. */
static void protect(struct sim_mm *sm, unsigned page)
{
	int owner = (int)(sm - mms);
	uint64_t va = sim_page_va(page), pte;
	unsigned since, token;
	bool writable;
	int err;

	if (pt_translate(sm->mm->root, va, NULL, &pte))
		return;
	writable = pte & PTE_WRITE;
	since = oracle_mark();
	token = oracle_begin_change();
	permit_current(token, owner, sm->mm->root, va);
	sim_trace("%s mm%d page %u", writable ? "write-protects" : "unprotects",
		  owner + 1, page);
	err = mm_protect(sm->mm, va, PAGE_SIZE,
			 MM_PROT_READ | (writable ? 0 : MM_PROT_WRITE));
	oracle_end_change(token, sm->mm);
	if (!err) /* -ENOENT: another CPU unmapped it first */
		oracle_settled(owner, va, since);
}

/* Unmaps every page of a region, so that its tables are freed. */
static void free_table(struct sim_mm *sm, unsigned index)
{
	sim_trace("frees mm%d table %u", (int)(sm - mms) + 1, index);
	unmap_run(sm, index * SIM_SLOTS, SIM_SLOTS);
}

/*
 * A kernel page gets a new frame: unmapped, mapped again, flushed, and
 * only then the old frame freed (kernel page tables are never freed).
 */
static void kremap(unsigned kpage)
{
	uint64_t va = sim_kpage_va(kpage), old, frame = pmm_alloc_frame();
	unsigned since, token;

	if (!frame)
		return; /* out of memory: the page stays */
	since = oracle_mark();
	token = oracle_begin_change();
	permit_current(token, KERNEL_OWNER, kernel_root_phys, va);
	if (kmap_unmap_page(va, &old)) {
		oracle_end_change(token, NULL);
		pmm_free_frame(frame);
		return; /* another CPU is remapping it */
	}
	mmu_label(frame, FRAME_KPAGE, KERNEL_OWNER);
	if (kmap_map_page(va, frame, PTE_WRITE | PTE_NX | PTE_GLOBAL))
		sim_fail("kmap_map_page of kernel page %u failed", kpage);
	mapped_now(KERNEL_OWNER, kernel_root_phys, va);
	sim_trace("remaps kernel page %u: frame %u -> %u, then flushes", kpage,
		  mmu_frame_at(old & PTE_ADDR_MASK, "kremap"),
		  mmu_frame_at(frame, "kremap"));
	flush_tlb_kernel_range(va, va + PAGE_SIZE);
	oracle_end_change(token, NULL);
	oracle_settled(KERNEL_OWNER, va, since);
	pmm_free_frame(old & PTE_ADDR_MASK);
}

static void kstack_op(enum sim_op_kind kind, unsigned s)
{
	struct sim_kstack *k = &kstacks[s];
	unsigned token;
	uint64_t top;

	if (k->busy)
		return; /* another CPU allocates or frees it */
	if (kind == OP_KSTACK_ALLOC && !k->allocated) {
		unsigned since = oracle_mark();

		k->busy = true;
		top = kstack_alloc();
		k->busy = false;
		if (!top) {
			if (!sim_alloc_failed())
				sim_fail("kstack_alloc failed");
			sim_trace("kernel stack %u: out of memory", s);
			return;
		}
		k->top = top;
		k->allocated = true;
		for (uint64_t va = k->top - KSTACK_SIZE; va < k->top;
		     va += PAGE_SIZE)
			oracle_settled(KERNEL_OWNER, va, since);
		label_kstack(k->top);
		sim_trace("kernel stack %u at %#llx", s,
			  (unsigned long long)k->top);
	} else if (kind == OP_KSTACK_FREE && k->allocated) {
		k->busy = true;
		token = oracle_begin_change();
		for (uint64_t va = k->top - KSTACK_SIZE; va < k->top;
		     va += PAGE_SIZE)
			permit_current(token, KERNEL_OWNER, kernel_root_phys,
				       va);
		sim_trace("frees kernel stack %u (%#llx)", s,
			  (unsigned long long)k->top);
		kstack_free(k->top);
		oracle_end_change(token, NULL);
		k->allocated = k->busy = false;
	}
}

static void exit_task(unsigned index)
{
	if (!mms[index].task)
		return;
	mms[index].task = false;
	sim_trace("mm%u's task exits", index + 1);
	mm_put(mms[index].mm);
}

/* --- Accesses ---------------------------------------------------------------------- */

/*
 * A user access of mm index owner faulted: the kernel's page-fault handler
 * decides, with mm/fault.c's own rule, interrupts off as the trap gate
 * leaves them. True: spurious, flushed here, run the access again. False:
 * the page tables refuse it, a real fault (the kernel would end the task;
 * the workload goes on). Retrying past the bound fails the run: the fault
 * and the flush drop what the access used, so on this machine a spurious
 * fault never recurs unless the tables change in between.
 */
static bool user_fault_retried(unsigned cpu, int owner, uint64_t va, bool write,
			       const char *what)
{
	unsigned access = MM_FAULT_USER | (write ? MM_FAULT_WRITE : 0);
	enum mm_fault_verdict verdict;
	uint64_t flags = irq_save();

	verdict =
		mm_fault_check(mms[owner].mm, va, access, &fault_history[cpu]);
	irq_restore(flags);
	if (verdict == MM_FAULT_LOOPING) {
		uint64_t pte = 0;
		bool mapped =
			!pt_translate(mms[owner].mm->root, va, NULL, &pte);

		sim_fail("cpu%u %s %s (%#llx): the kernel retried the fault %u "
			 "times in a row and gave up; the page tables %s",
			 cpu, write ? "writes" : "reads", what,
			 (unsigned long long)va, MM_FAULT_RETRIES_MAX,
			 !mapped		       ? "do not map it"
			 : write && !(pte & PTE_WRITE) ? "map it read-only"
						       : "allow the access");
	}
	if (verdict != MM_FAULT_RETRY)
		return false;
	sim_counts.spurious++;
	sim_trace("%s %s: spurious page fault, retried",
		  write ? "writes" : "reads", what);
	return true;
}

/*
 * One access, judged. A user access that faults goes to the kernel's rule
 * (user_fault_retried) until it gets through or the kernel calls the fault
 * real. The kernel must never call real a fault the page tables allow: its
 * walk and the judgement below see the same tables (no scheduling point
 * lies between them). The kernel half has no such rule (a kernel-mode fault
 * on a kernel address is a panic), so a fault there that the tables allow
 * fails the run too.
 */
static void access(unsigned cpu, int owner, uint64_t root, uint64_t va,
		   bool write, const char *what)
{
	struct sim_xlate x;
	uint64_t pa = 0, pte = 0;
	bool mapped, allowed, faulted;

	do {
		x = mmu_translate(cpu, va, write);
		faulted = !x.present || (write && !x.writable);
	} while (faulted && owner != KERNEL_OWNER &&
		 user_fault_retried(cpu, owner, va, write, what));
	mapped = !pt_translate(root, va, &pa, &pte);
	allowed = mapped && (!write || (pte & PTE_WRITE));
	if (faulted && allowed)
		sim_fail("cpu%u faults on %s (%#llx), which the page tables "
			 "map%s, and %s",
			 cpu, what, (unsigned long long)va,
			 write ? " writable" : "",
			 owner == KERNEL_OWNER
				 ? "the kernel has no retry for its own half"
				 : "the kernel calls the fault real");
	oracle_judge(cpu, owner, va, what, write, x,
		     mapped ? mmu_frame_at(ALIGN_DOWN(pa, PAGE_SIZE), "access")
			    : 0,
		     mapped && (pte & PTE_WRITE));
}

static void kernel_access(unsigned cpu, uint64_t va, bool write,
			  const char *what)
{
	access(cpu, KERNEL_OWNER, kernel_root_phys, va, write, what);
}

static void kpage_access(unsigned cpu, unsigned kpage)
{
	char what[32];

	snprintf(what, sizeof(what), "kernel page %u", kpage);
	kernel_access(cpu, sim_kpage_va(kpage), false, what);
}

static void kstack_touch(unsigned cpu, unsigned s)
{
	const struct sim_kstack *k = &kstacks[s];
	char what[32];

	if (!k->allocated)
		return; /* nothing runs on a stack that is not there */
	snprintf(what, sizeof(what), "kernel stack %u", s);
	kernel_access(cpu, k->top - PAGE_SIZE, true, what);
}

static void user_access(unsigned cpu, unsigned page, bool write)
{
	int owner = running[cpu];
	char what[32];

	if (owner == NO_MM) {
		kpage_access(cpu, page % SIM_KPAGES);
		return;
	}
	if (mmu_phys(mmu_root(cpu)) != mms[owner].mm->root)
		sim_fail("cpu%u runs a thread of mm%d on another root "
			 "(frame %u)",
			 cpu, owner + 1, mmu_root(cpu));
	snprintf(what, sizeof(what), "mm%d page %u", owner + 1, page);
	access(cpu, owner, mms[owner].mm->root, sim_page_va(page), write, what);
}

/* Where the shared object may be mapped: pages 8-9, and by mapshm. */
#define SHARED_VAS (2 * SIM_SHM_PAGES)

static uint64_t shared_va(unsigned i)
{
	return (i < SIM_SHM_PAGES ? SIM_SHM_BASE : SIM_SHM_ALT_BASE) +
	       (uint64_t)(i % SIM_SHM_PAGES) * PAGE_SIZE;
}

/*
 * Maps the shared object in sm once more, at SIM_SHM_ALT_BASE, across two
 * page tables (the second one allocated on the way). Until mm_map_shared
 * returns, those pages may translate to the object's frames (a map that
 * fails half way unmaps them again); after, only what the tables say.
 */
static void map_shared_again(struct sim_mm *sm)
{
	int owner = (int)(sm - mms), err;
	uint64_t frames[SIM_SHM_PAGES];
	uint64_t n = sim_shm_frames(sim_shm, frames, SIM_SHM_PAGES);
	unsigned token = oracle_begin_change();

	for (uint64_t i = 0; i < n; i++)
		oracle_permit(token, owner, SIM_SHM_ALT_BASE + i * PAGE_SIZE,
			      mmu_frame_at(frames[i], "mapshm"), true);
	sim_trace("maps the shared object in mm%d again", owner + 1);
	mmu_set_owner(owner);
	err = mm_map_shared(sm->mm, sim_shm, SIM_SHM_ALT_BASE,
			    MM_PROT_READ | MM_PROT_WRITE);
	mmu_set_owner(KERNEL_OWNER);
	oracle_end_change(token, sm->mm);
	/* -EIDRM: revoked before it was recorded */
	if (err && err != -EIDRM && !map_error_ok(err))
		sim_fail("mm_map_shared in mm%d: %d", owner + 1, err);
	sim_trace("  mm_map_shared: %d", err);
}

static struct sim_mm *hold(unsigned index);

/*
 * A revoked object is replaced by a new one, mapped at pages 8-9 of every
 * address space whose task still runs, as the set-up maps the first: the
 * workload's later revokes, maps and accesses have an object again. A
 * revoke of the new one may overtake this (-EIDRM), and a page may be
 * made to fail (-ENOMEM).
 */
static void recreate_shared(void)
{
	struct shm *shm;

	if (nretired == SIM_RETIRED_MAX)
		return;
	mmu_set_owner(KERNEL_OWNER);
	shm = shm_create(SIM_SHM_PAGES * PAGE_SIZE);
	if (!shm) {
		if (!sim_alloc_failed())
			sim_fail("shm_create failed");
		return; /* the revoked object stays: nothing to map */
	}
	label_shared(shm);
	retired[nretired++] = sim_shm;
	sim_shm = shm;
	sim_trace("creates the shared object again");
	for (unsigned i = 0; i < nmms; i++) {
		struct sim_mm *sm = hold(i);
		int err;

		if (!sm)
			continue;
		mmu_set_owner((int)i);
		err = mm_map_shared(sm->mm, shm, SIM_SHM_BASE,
				    MM_PROT_READ | MM_PROT_WRITE);
		mmu_set_owner(KERNEL_OWNER);
		for (unsigned p = SIM_PAGES; !err && p < SIM_ALL_PAGES; p++)
			mapped_now((int)i, sm->mm->root, sim_page_va(p));
		if (err && err != -EIDRM && err != -EEXIST &&
		    !(err == -ENOMEM && sim_alloc_failed()))
			sim_fail("mm_map_shared of the new object in mm%u: %d",
				 i + 1, err);
		mm_put(sm->mm);
	}
}

/*
 * Revokes the shared object: until shm_revoke returns, every address space
 * that maps it may still translate its pages to their frames, after that
 * none may (the frames are freed, so the simulated memory checks too).
 */
static void revoke(void)
{
	const struct mm *first = NULL;
	unsigned since = oracle_mark(), token = oracle_begin_change();
	int err;

	for (unsigned i = 0; i < nmms; i++) {
		if (mms[i].dead)
			continue;
		first = first ? first : mms[i].mm;
		for (unsigned v = 0; v < SHARED_VAS; v++)
			permit_current(token, (int)i, mms[i].mm->root,
				       shared_va(v));
	}
	sim_trace("revokes the shared object");
	err = shm_revoke(sim_shm);
	if (err && err != -EIDRM) /* a second revoke finds nothing to do */
		sim_fail("shm_revoke failed: %d", err);
	oracle_end_change(token, first);
	for (unsigned i = 0; !err && i < nmms; i++) {
		for (unsigned v = 0; v < SHARED_VAS; v++)
			oracle_settled((int)i, shared_va(v), since);
	}
	if (!err)
		recreate_shared();
}

/* --- Operations ------------------------------------------------------------------- */

/* A reference for working on mm from any CPU; NULL once it exited. */
static struct sim_mm *hold(unsigned index)
{
	if (!mms[index].task)
		return NULL;
	mm_get(mms[index].mm);
	return &mms[index];
}

void kern_op(const struct sim_op *op)
{
	unsigned cpu = sim_cpu();
	struct sim_mm *sm = NULL;

	sim_point();
	if ((op->kind >= OP_REMAP && op->kind <= OP_FREE_TABLE) ||
	    op->kind == OP_MAP || op->kind == OP_MAPSHM) {
		sm = hold(op->mm);
		if (!sm)
			return;
	}
	switch (op->kind) {
	case OP_RUN:
		thread_switch(cpu, op->mm);
		break;
	case OP_KTHREAD:
		thread_switch(cpu, NO_MM);
		break;
	case OP_READ:
	case OP_WRITE:
		user_access(cpu, op->page, op->kind == OP_WRITE);
		break;
	case OP_KREAD:
		kpage_access(cpu, op->page);
		break;
	case OP_REMAP:
		remap(sm, op->page);
		break;
	case OP_MAP:
		map(sm, op->page, op->count);
		break;
	case OP_MAPSHM:
		map_shared_again(sm);
		break;
	case OP_UNMAP:
		unmap(sm, op->page, op->count);
		break;
	case OP_PROTECT:
		protect(sm, op->page);
		break;
	case OP_FREE_TABLE:
		free_table(sm, op->page);
		break;
	case OP_KREMAP:
		kremap(op->page);
		break;
	case OP_EXIT:
		exit_task(op->mm);
		break;
	case OP_KSTACK_ALLOC:
	case OP_KSTACK_FREE:
		kstack_op((enum sim_op_kind)op->kind, op->page);
		break;
	case OP_KSTACK_TOUCH:
		kstack_touch(cpu, op->page);
		break;
	case OP_REVOKE:
		revoke();
		break;
	}
	if (sm)
		mm_put(sm->mm);
}

void kern_sweep(bool last_cpu)
{
	unsigned cpu = sim_cpu();

	for (unsigned i = 0; i < nmms; i++) {
		if (!mms[i].task)
			continue;
		thread_switch(cpu, (int)i);
		for (unsigned page = 0; page < SIM_ALL_PAGES; page++) {
			user_access(cpu, page, false);
			user_access(cpu, page, true);
		}
	}
	thread_switch(cpu, NO_MM);
	for (unsigned k = 0; k < SIM_KPAGES; k++)
		kpage_access(cpu, k);
	for (unsigned s = 0; s < SIM_KSTACKS; s++)
		kstack_touch(cpu, s);
	for (unsigned i = 0; last_cpu && i < nmms; i++)
		exit_task(i);
}

/* --- Frames: who holds them -------------------------------------------------------- */

/*
 * What walk_tables reports: a table or a page it reaches, at the level
 * of the entry that points to it (1: a page), the address it maps from.
 */
typedef void (*reach_fn)(uint64_t entry, int level, uint64_t va, void *arg);

/* Every present entry below table (at level), slots [first, end). */
static void walk_tables(uint64_t table, int level, uint64_t base,
			unsigned first, unsigned end, reach_fn fn, void *arg)
{
	const uint64_t *entries = phys_to_virt(table);
	unsigned shift = PAGE_SHIFT + 9 * (unsigned)(level - 1);

	for (unsigned i = first; i < end; i++) {
		uint64_t e = entries[i];
		uint64_t va = base | ((uint64_t)i << shift);

		if (!(e & PTE_PRESENT))
			continue;
		if (level == 4 && i >= PML4_KERNEL_FIRST)
			va |= 0xffff000000000000ULL; /* canonical */
		fn(e, level, va, arg);
		if (level > 1 && !(e & PTE_HUGE))
			walk_tables(e & PTE_ADDR_MASK, level - 1, va, 0,
				    PML4_ENTRIES, fn, arg);
	}
}

struct unmapped_check {
	uint32_t frame;
	const char *why, *name;
	int owner;
};

static void check_leaf_unmapped(uint64_t entry, int level, uint64_t va,
				void *arg)
{
	const struct unmapped_check *c = arg;

	if (level == 1 && mmu_frame_at(entry & PTE_ADDR_MASK,
				       "a page-table entry") == c->frame)
		sim_fail("%s frees %s while mm%d's page tables still map it "
			 "at %#llx",
			 c->why, c->name, c->owner + 1, (unsigned long long)va);
}

void kern_check_unmapped(uint32_t frame, const char *why, const char *name)
{
	struct unmapped_check c = {frame, why, name, 0};

	for (unsigned i = 0; i < nmms; i++) {
		/* Being torn down (no reference left): no CPU runs it. */
		if (mms[i].dead || !mms[i].mm->refcount)
			continue;
		c.owner = (int)i;
		walk_tables(mms[i].mm->root, 4, 0, 0, PML4_KERNEL_FIRST,
			    check_leaf_unmapped, &c);
	}
}

/* Which frames the page tables and objects of the machine hold. */
static uint8_t held[SIM_FRAMES_MAX];

/* Marks frame held by who; a free frame or one held twice fails the run. */
static void hold_frame(uint32_t frame, const char *who, uint64_t va)
{
	char name[96];

	if (mmu_frame(frame)->dead)
		sim_fail("%s is free, but %s still reaches it (at %#llx)",
			 mmu_name(frame, name, sizeof(name)), who,
			 (unsigned long long)va);
	if (held[frame])
		sim_fail("%s is held twice: %s reaches it at %#llx, and so "
			 "does another table or object",
			 mmu_name(frame, name, sizeof(name)), who,
			 (unsigned long long)va);
	held[frame] = 1;
}

static void hold_entry(uint64_t entry, int level, uint64_t va, void *arg)
{
	uint32_t frame = mmu_frame_at(entry & PTE_ADDR_MASK, "a table entry");
	char name[96];

	/* Shared pages: held once, by their object (below). */
	if (level == 1 && (entry & PTE_SOFT_SHARED)) {
		if (mmu_frame(frame)->dead ||
		    mmu_frame(frame)->kind != FRAME_SHARED)
			sim_fail("%s maps %#llx to %s as a shared page",
				 (const char *)arg, (unsigned long long)va,
				 mmu_name(frame, name, sizeof(name)));
		return;
	}
	hold_frame(frame, arg, va);
}

/* A kernel-stack page must be one of a stack the workload holds. */
static void check_kstack_page(uint64_t entry, int level, uint64_t va, void *arg)
{
	char name[96];

	(void)arg;
	if (level != 1 || va < KSTACK_BASE || va >= KSTACK_BASE + KSTACK_WINDOW)
		return;
	for (unsigned s = 0; s < SIM_KSTACKS; s++) {
		if (kstacks[s].allocated &&
		    va >= kstacks[s].top - KSTACK_SIZE && va < kstacks[s].top)
			return;
	}
	sim_fail("%s leaked: mapped at %#llx in the kernel-stack window, "
		 "where no stack was handed out",
		 mmu_name(mmu_frame_at(entry & PTE_ADDR_MASK, "a stack page"),
			  name, sizeof(name)),
		 (unsigned long long)va);
}

/* Counts the frames an address space keeps: its tables and own pages. */
static void count_kept(uint64_t entry, int level, uint64_t va, void *arg)
{
	(void)va;
	if (level > 1 || !(entry & PTE_SOFT_SHARED))
		++*(uint64_t *)arg;
}

/*
 * Each live address space's memory account (mm/mm.c, "Memory accounts")
 * counts exactly the frames its user half keeps, once every flush is done.
 */
static void check_accounts(void)
{
	for (unsigned i = 0; i < nmms; i++) {
		uint64_t kept = 0;

		if (mms[i].dead)
			continue;
		walk_tables(mms[i].mm->root, 4, 0, 0, PML4_KERNEL_FIRST,
			    count_kept, &kept);
		if (kept != mms[i].mm->charged)
			sim_fail("mm%u keeps %llu frames of user pages and "
				 "tables, but its account says %llu",
				 i + 1, (unsigned long long)kept,
				 (unsigned long long)mms[i].mm->charged);
	}
}

/*
 * Every frame in use is held by exactly one table, address space or
 * object, and none of them reaches a free frame: nothing leaked, nothing
 * reachable after its free.
 */
static void check_frames(void)
{
	uint32_t used = 0, in_use = mmu_frames_in_use();
	uint64_t frames[SIM_SHM_PAGES], shared;
	char who[32], name[96];

	memset(held, 0, sizeof(held));
	hold_frame(mmu_frame_at(kernel_root_phys, "the kernel root"),
		   "the kernel", 0);
	walk_tables(kernel_root_phys, 4, 0, PML4_KERNEL_FIRST, PML4_ENTRIES,
		    hold_entry, "the kernel's page tables");
	walk_tables(kernel_root_phys, 4, 0, PML4_KERNEL_FIRST, PML4_ENTRIES,
		    check_kstack_page, NULL);
	for (unsigned i = 0; i < nmms; i++) {
		if (mms[i].dead)
			continue;
		snprintf(who, sizeof(who), "mm%u's page tables", i + 1);
		hold_frame(mmu_frame_at(mms[i].mm->root, "a root"), who, 0);
		walk_tables(mms[i].mm->root, 4, 0, 0, PML4_KERNEL_FIRST,
			    hold_entry, who);
	}
	shared = sim_shm_frames(sim_shm, frames, SIM_SHM_PAGES);
	for (uint64_t i = 0; i < shared; i++)
		hold_frame(mmu_frame_at(frames[i], "a shared page"),
			   "the shared object", i * PAGE_SIZE);
	for (uint32_t f = 1; f <= mmu_frames_max(); f++)
		used += held[f];
	if (used == in_use)
		return;
	for (uint32_t f = 1; f <= mmu_frames_max(); f++) {
		if (!held[f] && !mmu_frame(f)->dead)
			sim_fail("%s leaked: in use, but no page table, "
				 "address space or object holds it",
				 mmu_name(f, name, sizeof(name)));
	}
}

void kern_final_check(void)
{
	check_frames();
	check_accounts();
	if (oracle_pending())
		sim_fail("%u translations still permitted after every flush",
			 oracle_pending());
	for (unsigned i = 0; i < nmms; i++) {
		const struct sim_mm *sm = &mms[i];
		unsigned lazy = 0;

		for (unsigned cpu = 0; cpu < ncpus; cpu++)
			lazy += tlb_cpus[cpu].lazy_ref == sm->mm;
		if (!sm->dead && sm->mm->refcount != lazy)
			sim_fail("mm%u leaks: %u references left with no "
				 "task, no thread and %u lazy CPUs",
				 i + 1, sm->mm->refcount, lazy);
	}
}
