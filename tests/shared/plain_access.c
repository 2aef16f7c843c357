// SPDX-License-Identifier: MIT
/*
 * Plain accesses of variables that CPUs share without a lock, which must
 * not compile (sync/shared.h). tests/shared/test_plain_access.py compiles
 * this file once per case, with the kernel's half of sync/shared.h and with
 * the TLB simulator's: -DACCESSORS must compile, each -DPLAIN_* must fail
 * with an error on that case's own line.
 */
#include "mm/mm.h"
#include "mm/tlb.h"
#include "sched/thread.h"
#include "smp/call_queue.h"
#include "sync/cpumask.h"
#include "sync/shared.h"

uint64_t plain_access(struct mm *mm, struct tlb_cpu *c, struct call_request *r,
		      struct thread *t);

uint64_t plain_access(struct mm *mm, struct tlb_cpu *c, struct call_request *r,
		      struct thread *t)
{
	struct cpumask mask;
	uint64_t v = 0;

	(void)mm, (void)c, (void)r, (void)t, (void)mask;
#if defined(ACCESSORS)
	/* The same variables, each through its accessor. */
	v += shared_add_fetch(&mm->tlb_gen, 1, __ATOMIC_SEQ_CST);
	v += shared_load(&mm->tlb_gen, __ATOMIC_ACQUIRE);
	v += shared_load(&c->is_lazy, __ATOMIC_RELAXED);
	shared_store(&c->loaded_mm, mm, __ATOMIC_RELEASE);
	v += shared_load(&c->loaded_mm, __ATOMIC_ACQUIRE) == mm;
	cpumask_set_atomic(&mm->cpu_mask, 0);
	cpumask_copy(&mask, &mm->cpu_mask);
	v += cpumask_test(&mask, 0);
	shared_store(&r->pending, 0, __ATOMIC_RELEASE);
	v += shared_load(&r->next, __ATOMIC_RELAXED) == r;
	shared_store(&t->ipc.wait, 0, __ATOMIC_RELAXED);
	shared_write(&c->request, &(struct tlb_flush_request){.mm = mm},
		     sizeof(struct tlb_flush_request));
#elif defined(PLAIN_TLB_GEN_INCREMENT)
	mm->tlb_gen++;
#elif defined(PLAIN_TLB_GEN_READ)
	v = mm->tlb_gen;
#elif defined(PLAIN_IS_LAZY_TEST)
	if (c->is_lazy)
		v++;
#elif defined(PLAIN_IS_LAZY_STORE)
	c->is_lazy = false;
#elif defined(PLAIN_LOADED_MM_STORE)
	c->loaded_mm = mm;
#elif defined(PLAIN_LOADED_MM_COMPARE)
	v = c->loaded_mm == mm;
#elif defined(PLAIN_CPU_MASK_WORD)
	mm->cpu_mask.bits[0] |= 1;
#elif defined(PLAIN_CPU_MASK_AS_PLAIN_MASK)
	v = cpumask_test(&mm->cpu_mask, 0);
#elif defined(PLAIN_CALL_PENDING)
	r->pending = 0;
#elif defined(PLAIN_CALL_NEXT)
	r = r->next;
#elif defined(PLAIN_IPC_WAIT)
	t->ipc.wait = 0;
#elif defined(PLAIN_FLUSH_REQUEST_FIELD)
	c->request.mm = mm;
#elif defined(PLAIN_ACCESSOR_ON_PLAIN_VARIABLE)
	v = shared_load(&c->loaded_asid, __ATOMIC_RELAXED);
#else
#error "name a case: -DACCESSORS or one of the -DPLAIN_... below it"
#endif
	return v;
}
