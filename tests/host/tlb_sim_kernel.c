// SPDX-License-Identifier: MIT
/*
 * The kernel around the protocol in the simulator: address spaces (the
 * struct mm objects mm/tlb.c sees, and mm_get/mm_put), thread switches as
 * the scheduler makes them, page-table changes flushed as mm/mm.c flushes
 * them (each leaves the oracle a permit for the old translation until its
 * flush returns), and accesses, which tlb_sim_oracle.c judges.
 *
 * Address spaces belong to the simulator: each has a context id never
 * reused within a run, a root and its tables, and one reference held by
 * its task. A thread running on a CPU holds another, dropped when the CPU
 * switches away (the thread is done). Dropping the last reference calls
 * tlb_mm_teardown(), as mm/mm.c does, then frees every frame, after
 * checking that no CPU still has the address space loaded or referenced.
 */
#include "tests/host/tlb_sim.h"
#include "kernel/kprintf.h"
#include "kernel/panic.h"
#include "mm/tlb_batch.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define KERNEL_OWNER (-1)
#define NO_MM	     (-1) /* a kernel thread runs */

struct sim_mm {
	struct mm mm; /* what mm/tlb.c sees */
	uint32_t root;
	bool task; /* the task still holds its reference */
	bool dead;
};

static struct sim_mm mms[SIM_MMS_MAX];
static unsigned nmms, ncpus;
static int running[SIM_CPUS_MAX]; /* each CPU's thread: mm index, NO_MM */

/* --- Externals of mm/tlb.c ------------------------------------------------------ */

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

static struct sim_mm *sim_mm_of(struct mm *mm, const char *who)
{
	for (unsigned i = 0; i < nmms; i++) {
		if (mm == &mms[i].mm) {
			if (mms[i].dead)
				sim_fail("%s on mm%u, which was freed", who,
					 i + 1);
			return &mms[i];
		}
	}
	sim_fail("%s on an mm the simulator does not know (%p)", who,
		 (void *)mm);
}

void mm_get(struct mm *mm)
{
	struct sim_mm *sm = sim_mm_of(mm, "mm_get");

	if (!sm->mm.refcount)
		sim_fail("mm_get on mm%llu with no reference left",
			 (unsigned long long)mm->context_id);
	sm->mm.refcount++;
}

static void free_mm(struct sim_mm *sm)
{
	int owner = (int)(sm - mms);
	const struct sim_frame *root = mmu_frame(sm->root);

	for (unsigned cpu = 0; cpu < ncpus; cpu++) {
		const struct tlb_cpu *c = &tlb_cpus[cpu];
		const struct mm *loaded = SIM_PEEK(&c->loaded_mm);

		if (loaded == &sm->mm || c->lazy_ref == &sm->mm)
			sim_fail("mm%d is freed while cpu%u still %s it%s",
				 owner + 1, cpu,
				 loaded == &sm->mm ? "has loaded" : "holds",
				 SIM_PEEK(&c->is_lazy) ? " (lazily)" : "");
	}
	if (SIM_PEEK(&sm->mm.cpu_mask.bits[0]))
		sim_fail("mm%d is freed with CPUs in its cpu_mask", owner + 1);
	for (unsigned t = 0; t < SIM_TABLES; t++) {
		const struct sim_frame *table = mmu_frame(root->next[t]);

		if (!root->next[t])
			continue;
		for (unsigned s = 0; s < SIM_SLOTS; s++) {
			if (table->next[s])
				mmu_free(table->next[s], "mm_put");
		}
		mmu_free(root->next[t], "mm_put");
	}
	mmu_free(sm->root, "mm_put");
	sm->dead = true;
	sim_counts.mm_deaths++;
}

void mm_put(struct mm *mm)
{
	struct sim_mm *sm = sim_mm_of(mm, "mm_put");

	if (!sm->mm.refcount)
		sim_fail("mm_put on mm%llu with no reference left",
			 (unsigned long long)mm->context_id);
	if (--sm->mm.refcount)
		return;
	sim_trace("drops the last reference to mm%llu: teardown",
		  (unsigned long long)mm->context_id);
	tlb_mm_teardown(mm);
	free_mm(sm);
}

/* --- Set-up ---------------------------------------------------------------------- */

void kern_reset(unsigned cpus, unsigned count)
{
	struct sim_frame *ktable;

	ncpus = cpus;
	nmms = count;
	oracle_reset();
	mmu_reset(cpus);
	ktable = mmu_frame(mmu_kernel_table());
	for (unsigned k = 0; k < SIM_KPAGES; k++) {
		ktable->next[k] = mmu_alloc(FRAME_KPAGE, KERNEL_OWNER);
		ktable->writable[k] = true;
	}
	memset(tlb_cpus, 0, sizeof(tlb_cpus));
	memset(&kernel_mm, 0, sizeof(kernel_mm));
	for (unsigned cpu = 0; cpu < cpus; cpu++)
		running[cpu] = NO_MM;
	for (unsigned i = 0; i < count; i++) {
		struct sim_mm *sm = &mms[i];
		struct sim_frame *root;

		memset(sm, 0, sizeof(*sm));
		sm->root = mmu_alloc(FRAME_ROOT, (int)i);
		root = mmu_frame(sm->root);
		for (unsigned t = 0; t < SIM_TABLES; t++) {
			uint32_t table = mmu_alloc(FRAME_TABLE, (int)i);

			root->next[t] = table;
			for (unsigned s = 0; s < SIM_SLOTS; s++) {
				uint32_t page = mmu_alloc(FRAME_PAGE, (int)i);

				mmu_frame(table)->next[s] = page;
				mmu_frame(table)->writable[s] = true;
			}
		}
		sm->mm.root = mmu_phys(sm->root);
		sm->mm.context_id = i + 1;
		sm->mm.refcount = 1;
		sm->task = true;
	}
}

uint64_t kern_kernel_root(void)
{
	return mmu_phys(mmu_kernel_root());
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
	sim_trace("  now: mm%llu loaded%s, ASID %u PCID %u, slot gen %llu, "
		  "mm gen %llu",
		  (unsigned long long)mm->context_id,
		  SIM_PEEK(&c->is_lazy) ? " lazily" : "", c->loaded_asid,
		  mmu_pcid(cpu),
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
		target = &mms[next].mm;
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
		if (mmu_root(cpu) != mms[next].root)
			sim_fail("cpu%u runs a thread of mm%d on another root "
				 "(frame %u)",
				 cpu, next + 1, mmu_root(cpu));
		mmu_set_user_active(cpu, true);
	}
	if (prev != NO_MM)
		mm_put(&mms[prev].mm);
}

/* --- Changes and their flushes ----------------------------------------------- */

/* The page table of page in sm (0: none). */
static struct sim_frame *table_of(const struct sim_mm *sm, unsigned page)
{
	uint32_t table = mmu_frame(sm->root)->next[page / SIM_SLOTS];

	return table ? mmu_frame(table) : NULL;
}

static void remap(struct sim_mm *sm, unsigned page)
{
	int owner = (int)(sm - mms);
	unsigned slot = page % SIM_SLOTS, token;
	struct sim_frame *root = mmu_frame(sm->root);
	struct sim_frame *table;
	uint32_t old, new;
	bool was_writable;
	struct tlb_batch b;

	if (!root->next[page / SIM_SLOTS])
		root->next[page / SIM_SLOTS] = mmu_alloc(FRAME_TABLE, owner);
	table = table_of(sm, page);
	old = table->next[slot];
	was_writable = table->writable[slot];
	new = mmu_alloc(FRAME_PAGE, owner);
	table->next[slot] = new;
	table->writable[slot] = true;
	if (!old) {
		/* Absent entries are never cached: no flush. */
		sim_trace("maps mm%d page %u to frame %u", owner + 1, page,
			  new);
		return;
	}
	token = oracle_begin_change();
	oracle_permit(token, owner, page, old, was_writable);
	sim_trace("remaps mm%d page %u: frame %u -> %u, then flushes",
		  owner + 1, page, old, new);
	tlb_batch_begin(&b, &sm->mm);
	tlb_batch_page(&b, sim_page_va(page));
	tlb_batch_free_page(&b, mmu_phys(old));
	tlb_batch_flush(&b);
	oracle_end_change(token, &sm->mm);
}

/* Clears the entries of pages [first, first+count) into b. */
static unsigned clear_pages(struct sim_mm *sm, unsigned first, unsigned count,
			    unsigned token, struct tlb_batch *b)
{
	int owner = (int)(sm - mms);
	unsigned cleared = 0;

	for (unsigned page = first; page < first + count && page < SIM_PAGES;
	     page++) {
		struct sim_frame *table = table_of(sm, page);
		unsigned slot = page % SIM_SLOTS;

		if (!table || !table->next[slot])
			continue;
		oracle_permit(token, owner, page, table->next[slot],
			      table->writable[slot]);
		tlb_batch_page(b, sim_page_va(page));
		tlb_batch_free_page(b, mmu_phys(table->next[slot]));
		table->next[slot] = 0;
		cleared++;
	}
	return cleared;
}

static void unmap(struct sim_mm *sm, unsigned first, unsigned count)
{
	unsigned token = oracle_begin_change();
	struct tlb_batch b;

	tlb_batch_begin(&b, &sm->mm);
	if (!clear_pages(sm, first, count, token, &b))
		return;
	sim_trace("unmaps mm%d pages %u..%u, then flushes", (int)(sm - mms) + 1,
		  first, first + count - 1);
	tlb_batch_flush(&b);
	oracle_end_change(token, &sm->mm);
}

/*
 * Unmaps every page of a table and frees the table, as mm/mm.c frees the
 * tables its unmap emptied (in the same batch, so the flush covers them).
 */
static void free_table(struct sim_mm *sm, unsigned index)
{
	struct sim_frame *root = mmu_frame(sm->root);
	uint32_t table = root->next[index];
	unsigned token = oracle_begin_change();
	struct tlb_batch b;

	tlb_batch_begin(&b, &sm->mm);
	if (!table || !clear_pages(sm, index * SIM_SLOTS, SIM_SLOTS, token, &b))
		return;
	root->next[index] = 0;
	tlb_batch_free_table(&b, mmu_phys(table));
	sim_trace("unmaps mm%d table %u (frame %u) and frees it, then "
		  "flushes",
		  (int)(sm - mms) + 1, index, table);
	tlb_batch_flush(&b);
	oracle_end_change(token, &sm->mm);
}

static void protect(struct sim_mm *sm, unsigned page)
{
	struct sim_frame *table = table_of(sm, page);
	unsigned slot = page % SIM_SLOTS, token;
	uint64_t va = sim_page_va(page);

	if (!table || !table->next[slot])
		return;
	if (!table->writable[slot]) {
		/* An upgrade: a stale read-only entry only faults. */
		table->writable[slot] = true;
		sim_trace("makes mm%d page %u writable", (int)(sm - mms) + 1,
			  page);
		return;
	}
	token = oracle_begin_change();
	oracle_permit(token, (int)(sm - mms), page, table->next[slot], true);
	table->writable[slot] = false;
	sim_trace("write-protects mm%d page %u, then flushes",
		  (int)(sm - mms) + 1, page);
	flush_tlb_mm_range(&sm->mm, va, va + PAGE_SIZE, PAGE_SHIFT,
			   TLB_TABLES_KEPT);
	oracle_end_change(token, &sm->mm);
}

static void kremap(unsigned kpage)
{
	struct sim_frame *ktable = mmu_frame(mmu_kernel_table());
	uint32_t old = ktable->next[kpage];
	uint32_t new = mmu_alloc(FRAME_KPAGE, KERNEL_OWNER);
	unsigned token = oracle_begin_change();
	uint64_t va = sim_kpage_va(kpage);

	oracle_permit(token, KERNEL_OWNER, kpage, old, true);
	mmu_frame(mmu_kernel_table())->next[kpage] = new;
	sim_trace("remaps kernel page %u: frame %u -> %u, then flushes", kpage,
		  old, new);
	flush_tlb_kernel_range(va, va + PAGE_SIZE);
	oracle_end_change(token, NULL);
	tlb_hw_free_frame(mmu_phys(old));
}

static void exit_task(unsigned index)
{
	if (!mms[index].task)
		return;
	mms[index].task = false;
	sim_trace("mm%u's task exits", index + 1);
	mm_put(&mms[index].mm);
}

/* --- Accesses -------------------------------------------------- */

static void kernel_access(unsigned cpu, unsigned kpage)
{
	const struct sim_frame *ktable = mmu_frame(mmu_kernel_table());
	struct sim_xlate x = mmu_translate(cpu, sim_kpage_va(kpage), false);

	oracle_judge(cpu, KERNEL_OWNER, kpage, false, x, ktable->next[kpage],
		     true);
}

static void user_access(unsigned cpu, unsigned page, bool write)
{
	int owner = running[cpu];
	const struct sim_frame *table;
	struct sim_xlate x;

	if (owner == NO_MM) {
		kernel_access(cpu, page % SIM_KPAGES);
		return;
	}
	if (mmu_root(cpu) != mms[owner].root)
		sim_fail("cpu%u runs a thread of mm%d on another root "
			 "(frame %u)",
			 cpu, owner + 1, mmu_root(cpu));
	x = mmu_translate(cpu, sim_page_va(page), write);
	table = table_of(&mms[owner], page);
	oracle_judge(cpu, owner, page, write, x,
		     table ? table->next[page % SIM_SLOTS] : 0,
		     table && table->writable[page % SIM_SLOTS]);
}

/* --- Operations ----------------------------------------------------------------- */

/* A reference for working on mm from any CPU; NULL once it exited. */
static struct sim_mm *hold(unsigned index)
{
	if (!mms[index].task)
		return NULL;
	mm_get(&mms[index].mm);
	return &mms[index];
}

void kern_op(const struct sim_op *op)
{
	unsigned cpu = sim_cpu();
	struct sim_mm *sm = NULL;

	sim_point();
	if (op->kind >= OP_REMAP && op->kind <= OP_FREE_TABLE) {
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
		kernel_access(cpu, op->page);
		break;
	case OP_REMAP:
		remap(sm, op->page);
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
	}
	if (sm)
		mm_put(&sm->mm);
}

void kern_sweep(bool last_cpu)
{
	unsigned cpu = sim_cpu();

	for (unsigned i = 0; i < nmms; i++) {
		if (!mms[i].task)
			continue;
		thread_switch(cpu, (int)i);
		for (unsigned page = 0; page < SIM_PAGES; page++) {
			user_access(cpu, page, false);
			user_access(cpu, page, true);
		}
	}
	thread_switch(cpu, NO_MM);
	for (unsigned k = 0; k < SIM_KPAGES; k++)
		kernel_access(cpu, k);
	for (unsigned i = 0; last_cpu && i < nmms; i++)
		exit_task(i);
}

void kern_final_check(void)
{
	if (oracle_pending())
		sim_fail("%u translations still permitted after every flush",
			 oracle_pending());
	for (unsigned i = 0; i < nmms; i++) {
		const struct sim_mm *sm = &mms[i];
		unsigned lazy = 0;

		for (unsigned cpu = 0; cpu < ncpus; cpu++)
			lazy += tlb_cpus[cpu].lazy_ref == &sm->mm;
		if (!sm->dead && sm->mm.refcount != lazy)
			sim_fail("mm%u leaks: %u references left with no "
				 "task, no thread and %u lazy CPUs",
				 i + 1, sm->mm.refcount, lazy);
	}
}
