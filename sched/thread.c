// SPDX-License-Identifier: MIT
/*
 * Creating and freeing threads. A new thread's stack is built to look like
 * one switched out inside switch_context: six callee-saved registers (the
 * entry function in R12, its argument in R13) under the address of
 * thread_start, which calls thread_first_run (sched/sched.c).
 *
 * A dead thread is freed in two steps: the thread that replaces it on its
 * CPU puts it on the zombie list (thread_retire: it is off its stack now),
 * and thread_reap, which runs where no lock is held (the idle loop, thread
 * creation), frees its stack: unmapping a stack needs a TLB flush on every
 * CPU, which must not wait on CPUs spinning for a lock we hold. The struct
 * goes after the stack: that flush is acknowledged by every other CPU with
 * interrupts on, so a CPU that still held a pointer to the thread with
 * interrupts off (a waker between ending its wait and sched_wake,
 * proc/ipc.c "Lifetimes") is done with it by then.
 */
#include "sched/thread.h"
#include "trap/panic.h"
#include "lib/string.h"
#include "mm/heap.h"
#include "mm/kstack.h"
#include "mm/mm.h"
#include "sched/fpu.h"
#include "sched/sched.h"
#include "cpu/percpu.h"
#include "sync/spinlock.h"

#define INITIAL_FRAME_WORDS 9 /* 6 registers, return address, padding */
#define FRAME_R12	    3 /* word indexes from saved_rsp (switch.asm) */
#define FRAME_R13	    2
#define FRAME_RETURN	    6

extern char thread_start[];

static int next_id;
static unsigned live_threads;
static struct spinlock zombie_lock = SPINLOCK_INIT;
static struct thread *zombies; /* guarded by zombie_lock */

static struct thread *alloc_thread(const char *name)
{
	struct thread *t = kzalloc(sizeof(*t));

	if (!t)
		return NULL;
	t->fpu_allocation = kmalloc(fpu_area_size() + FPU_AREA_ALIGN);
	if (!t->fpu_allocation) {
		kfree(t);
		return NULL;
	}
	t->fpu = (void *)ALIGN_UP((uintptr_t)t->fpu_allocation, FPU_AREA_ALIGN);
	fpu_init_area(t->fpu);
	t->id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&live_threads, 1, __ATOMIC_RELAXED);
	strlcpy(t->name, name, sizeof(t->name));
	t->migrate_to = -1;
	cpumask_copy(&t->affinity, &cpu_online_mask);
	return t;
}

struct thread *thread_create(thread_fn fn, void *arg, const char *name,
			     const struct cpumask *affinity)
{
	struct thread *t;
	uint64_t *frame;

	thread_reap();
	t = alloc_thread(name);
	if (!t)
		return NULL;
	t->stack_top = kstack_alloc();
	if (!t->stack_top) {
		kfree(t->fpu_allocation);
		kfree(t);
		return NULL;
	}
	if (affinity)
		cpumask_copy(&t->affinity, affinity);
	else
		/* Any CPU, including those that come online later. */
		for (unsigned i = 0; i < MAX_CPUS; i++)
			cpumask_set(&t->affinity, i);
	/* 16-byte aligned at thread_start's call, as the ABI wants. */
	frame = (uint64_t *)(t->stack_top - INITIAL_FRAME_WORDS * 8);
	memset(frame, 0, INITIAL_FRAME_WORDS * 8);
	frame[FRAME_R12] = (uint64_t)fn;
	frame[FRAME_R13] = (uint64_t)arg;
	frame[FRAME_RETURN] = (uint64_t)thread_start;
	t->saved_rsp = (uint64_t)frame;
	t->state = THREAD_NEW; /* in no queue until sched_start_thread */
	return t;
}

struct thread *thread_adopt_current(const char *name, bool is_idle,
				    uint64_t stack_top)
{
	struct thread *t = alloc_thread(name);

	if (!t)
		return NULL;
	t->is_idle = is_idle;
	t->stack_top = stack_top;
	t->state = THREAD_RUNNING;
	t->cpu = this_cpu_index();
	if (is_idle) {
		cpumask_clear_all(&t->affinity);
		cpumask_set(&t->affinity, t->cpu);
	}
	return t;
}

void thread_retire(struct thread *t)
{
	/* Retired twice, its stack and struct would be freed twice. */
	KASSERT(t->state == THREAD_DEAD && !t->retired,
		"retiring thread %d (state %d, retired %d)", t->id, t->state,
		t->retired);
	t->retired = true;
	spin_lock(&zombie_lock);
	t->zombie_next = zombies;
	zombies = t;
	spin_unlock(&zombie_lock);
}

void thread_reap(void)
{
	struct thread *list;
	uint64_t flags;

	if (!__atomic_load_n(&zombies, __ATOMIC_RELAXED))
		return;
	flags = spin_lock_irqsave(&zombie_lock);
	list = zombies;
	zombies = NULL;
	spin_unlock_irqrestore(&zombie_lock, flags);
	while (list) {
		struct thread *t = list;

		list = t->zombie_next;
		ipc_thread_freed(t);
		kstack_free(t->stack_top);
		if (t->mm)
			mm_put(t->mm);
		kfree(t->fpu_allocation);
		kfree(t);
		__atomic_sub_fetch(&live_threads, 1, __ATOMIC_RELAXED);
	}
}

unsigned thread_count(void)
{
	return __atomic_load_n(&live_threads, __ATOMIC_RELAXED);
}
