// SPDX-License-Identifier: MIT
/*
 * Loading and running user programs.
 *
 * task_spawn: validate the ELF image (proc/elf.c), build an address space
 * with each segment's pages mapped with the segment's rights and its bytes
 * copied in, map a stack, and start a thread that enters ring 3 at the
 * entry point. Anything that fails undoes what was done and says why.
 *
 * Handles: a task starts with the ones its parent passed (slots 0, 1, ...)
 * and the last thread to go closes all it still has.
 *
 * Ending: a task ends when its thread count drops to zero. exit() and
 * faults mark the task killed; each other thread notices on its next way
 * back to user mode (system-call return or interrupt from ring 3: every
 * running thread is interrupted at least once per time slice) and exits.
 *
 * The registry: a task stays in it, by id, while it runs and then until
 * its parent takes its status. A parent that ends first leaves nobody to
 * take it, so then the child goes as it ends (release_unwaitable); a full
 * registry refuses new tasks rather than drop a status still wanted.
 */
#include "proc/task.h"
#include "boot/boot_modules.h"
#include "proc/elf.h"
#include "lib/errno.h"
#include "proc/ipc.h"
#include "console/kprintf.h"
#include "trap/panic.h"
#include "trap/trap.h"
#include "arch/x86.h"
#include "lib/string.h"
#include "mm/fault.h"
#include "mm/heap.h"
#include "arch/layout.h"
#include "mm/mm.h"
#include "sched/sched.h"
#include "sched/thread.h"
#include "cpu/percpu.h"

#define USER_STACK_TOP	0x00007ffffff00000ULL
#define USER_STACK_SIZE 0x10000ULL /* 64 KiB */

void enter_user_mode(uint64_t entry, uint64_t stack, uint64_t arg);

struct user_start {
	uint64_t entry, stack, arg;
};

static struct spinlock registry_lock = SPINLOCK_INIT;
static struct task *registry[TASK_MAX]; /* guarded by registry_lock */
static int next_task_id = 1;		/* guarded by registry_lock */

static void task_put(struct task *task)
{
	if (__atomic_sub_fetch(&task->refcount, 1, __ATOMIC_ACQ_REL))
		return;
	mm_put(task->mm);
	kobject_charge_put(task->charge);
	kfree(task);
}

static void report_elf(void *ctx, const char *fmt, ...)
{
	va_list ap;

	kprintf("task %s: ", (const char *)ctx);
	va_start(ap, fmt);
	kvprintf(fmt, ap);
	va_end(ap);
	kprintf("\n");
}

/* Maps and fills every segment, and the stack. */
static int load_image(struct mm *mm, const void *image,
		      const struct elf_image *elf)
{
	int err;

	for (size_t i = 0; i < elf->segment_count; i++) {
		const struct elf_segment *s = &elf->segments[i];
		uint64_t start = ALIGN_DOWN(s->vaddr, PAGE_SIZE);
		uint64_t end = ALIGN_UP(s->vaddr + s->memsz, PAGE_SIZE);

		if (s->memsz == 0)
			continue;
		err = mm_map_anon(mm, start, end - start, s->prot);
		if (!err && s->filesz)
			err = mm_write(mm, s->vaddr,
				       (const uint8_t *)image + s->offset,
				       s->filesz);
		if (err)
			return err;
	}
	return mm_map_anon(mm, USER_STACK_TOP - USER_STACK_SIZE,
			   USER_STACK_SIZE, MM_PROT_READ | MM_PROT_WRITE);
}

/* A new thread's kernel side: leave for ring 3. */
static void user_thread_entry(void *arg)
{
	struct user_start start = *(struct user_start *)arg;

	kfree(arg);
	enter_user_mode(start.entry, start.stack, start.arg);
}

static int start_thread(struct task *task, uint64_t entry, uint64_t stack,
			uint64_t arg)
{
	struct user_start *start = kmalloc(sizeof(*start));
	struct thread *t;
	uint64_t flags;

	if (!start)
		return -ENOMEM;
	*start = (struct user_start){entry, stack, arg};
	t = thread_create(user_thread_entry, start, task->name, NULL);
	if (!t) {
		kfree(start);
		return -ENOMEM;
	}
	flags = spin_lock_irqsave(&task->exit_wait.lock);
	if (task->killed || task->threads >= TASK_THREADS_MAX) {
		int err = task->killed ? -ESRCH : -EBUSY;

		spin_unlock_irqrestore(&task->exit_wait.lock, flags);
		kfree(start);
		t->state = THREAD_DEAD;
		thread_retire(t);
		return err;
	}
	/*
	 * Complete before it is listed: from here a task_exit (another
	 * thread's exit or fault) may find it and sched_wake it. It is still
	 * THREAD_NEW, which sched_wake leaves alone, so it runs once, when
	 * sched_start_thread queues it, and then sees its task killed.
	 */
	mm_get(task->mm);
	t->mm = task->mm;
	t->task = task;
	__atomic_add_fetch(&task->refcount, 1, __ATOMIC_RELAXED);
	task->threads++;
	t->task_next = task->thread_list;
	task->thread_list = t;
	spin_unlock_irqrestore(&task->exit_wait.lock, flags);
	sched_start_thread(t);
	return t->id;
}

static void unregister(struct task *task);
static void release_unwaitable(struct task *task);

/*
 * The task has no thread left. Everything it held goes back before it
 * counts as ended: a waiter that sees exited may count endpoints and
 * objects at once and must find them given back. No thread is left to
 * take new handles meanwhile. Then whatever nobody can wait for any more
 * leaves the registry (release_unwaitable).
 */
static void end_task(struct task *task)
{
	uint64_t flags;

	ipc_task_exit(task);
	handle_table_close_all(&task->handles);
	flags = spin_lock_irqsave(&task->exit_wait.lock);
	task->exited = true;
	spin_unlock_irqrestore(&task->exit_wait.lock, flags);
	wake_all(&task->exit_wait);
	release_unwaitable(task);
}

/*
 * Enters task in the registry: -EBUSY when it is full, or the parent (a
 * task, not the kernel) has TASK_CHILDREN_MAX children in it already.
 * Only a live parent's children take room once they have ended (orphans
 * leave as they end), so a full registry is one the tasks that are
 * running filled, each within its share.
 */
static int register_task(struct task *task)
{
	uint64_t flags = spin_lock_irqsave(&registry_lock);
	int slot = -1, children = 0;

	for (int i = 0; i < TASK_MAX && task->parent; i++)
		children += registry[i] && registry[i]->parent == task->parent;
	if (children >= TASK_CHILDREN_MAX) {
		spin_unlock_irqrestore(&registry_lock, flags);
		return -EBUSY;
	}
	for (int i = 0; i < TASK_MAX && slot < 0; i++) {
		if (!registry[i])
			slot = i;
	}
	if (slot >= 0) {
		task->id = next_task_id++;
		registry[slot] = task;
	}
	spin_unlock_irqrestore(&registry_lock, flags);
	return slot < 0 ? -EBUSY : 0;
}

int task_spawn(const char *name, uint64_t arg,
	       const struct handle_grant *grants, unsigned count)
{
	struct elf_image elf;
	const void *image;
	size_t size;
	struct task *task;
	int err;

	if (count > SYS_HANDLE_SPAWN_MAX)
		return -EINVAL;
	if (!boot_module(name, &image, &size))
		return -ENOENT;
	if (elf_parse(image, size, &elf, report_elf, (void *)name))
		return -EINVAL;
	task = kzalloc(sizeof(*task));
	if (!task)
		return -ENOMEM;
	strlcpy(task->name, name, sizeof(task->name));
	task->parent = task_current() ? task_current()->id : 0;
	wait_queue_init(&task->exit_wait);
	handle_table_init(&task->handles);
	task->refcount = 1; /* the registry's */
	task->charge = kobject_charge_create();
	task->mm = task->charge ? mm_create() : NULL;
	if (!task->mm) {
		if (task->charge)
			kobject_charge_put(task->charge);
		kfree(task);
		return -ENOMEM;
	}
	err = load_image(task->mm, image, &elf);
	if (!err)
		err = register_task(task);
	if (err) {
		mm_put(task->mm);
		kobject_charge_put(task->charge);
		kfree(task);
		return err;
	}
	/* A fresh table: slot i is free and its handle SYS_HANDLE_SPAWNED(i). */
	for (unsigned i = 0; i < count; i++)
		handle_install(&task->handles, grants[i].obj, grants[i].rights,
			       (int)i);
	err = start_thread(task, elf.entry, USER_STACK_TOP, arg);
	if (err < 0) {
		/*
		 * No thread ever ran: the task ends at once, status err.
		 * The caller gets no id to wait for, so the task leaves the
		 * registry now, with its memory, rather than stay until the
		 * registry fills and count as a child meanwhile. A waiter
		 * that guessed the id wakes and gets err.
		 */
		uint64_t flags = spin_lock_irqsave(&task->exit_wait.lock);

		task->status = err;
		spin_unlock_irqrestore(&task->exit_wait.lock, flags);
		end_task(task);
		unregister(task);
		return err;
	}
	return task->id;
}

int task_thread_create(uint64_t entry, uint64_t stack_top, uint64_t arg)
{
	struct task *task = task_current();

	if (!task)
		return -EPERM;
	if (!user_range_ok(entry, 1) || !user_range_ok(stack_top - 1, 1) ||
	    !IS_ALIGNED(stack_top, 16))
		return -EINVAL;
	return start_thread(task, entry, stack_top, arg);
}

/* The task with this id, with a reference taken; NULL if none. */
static struct task *find_task(int id)
{
	uint64_t flags = spin_lock_irqsave(&registry_lock);
	struct task *found = NULL;

	for (int i = 0; i < TASK_MAX && !found; i++) {
		if (registry[i] && registry[i]->id == id) {
			found = registry[i];
			__atomic_add_fetch(&found->refcount, 1,
					   __ATOMIC_RELAXED);
		}
	}
	spin_unlock_irqrestore(&registry_lock, flags);
	return found;
}

unsigned task_count(void)
{
	uint64_t flags = spin_lock_irqsave(&registry_lock);
	unsigned count = 0;

	for (int i = 0; i < TASK_MAX; i++)
		count += registry[i] != NULL;
	spin_unlock_irqrestore(&registry_lock, flags);
	return count;
}

/* Drops the registry's reference, if task is still in it. */
static void unregister(struct task *task)
{
	uint64_t flags = spin_lock_irqsave(&registry_lock);
	bool was_there = false;

	for (int i = 0; i < TASK_MAX; i++) {
		if (registry[i] == task) {
			registry[i] = NULL;
			was_there = true;
		}
	}
	spin_unlock_irqrestore(&registry_lock, flags);
	if (was_there)
		task_put(task);
}

/*
 * Called as task ends: nobody can wait for its children any more, nor for
 * the task itself if its parent ended first, so those leave the registry
 * once they have ended, with their memory. A child still running is
 * marked an orphan and leaves as it ends. The kernel, parent 0, never
 * ends: what it spawns stays until it waits.
 *
 * A parent and its child may end at the same time on two CPUs. Each sets
 * its exited flag before it takes registry_lock here, so whichever comes
 * second sees the other: the child marked an orphan, or the child ended.
 * Both may then release it; the one that finds its slot empty does
 * nothing. released has room for the task and all its children:
 * register_task keeps them at TASK_CHILDREN_MAX.
 */
static void release_unwaitable(struct task *task)
{
	struct task *released[TASK_CHILDREN_MAX + 1];
	unsigned count = 0;
	uint64_t flags = spin_lock_irqsave(&registry_lock);

	for (int i = 0; i < TASK_MAX; i++) {
		struct task *t = registry[i];

		if (!t || (t != task && t->parent != task->id))
			continue;
		if (t != task)
			t->orphan = true;
		if (t->orphan &&
		    __atomic_load_n(&t->exited, __ATOMIC_RELAXED)) {
			KASSERT(count < ARRAY_SIZE(released),
				"task %d has more than %u children", task->id,
				TASK_CHILDREN_MAX);
			registry[i] = NULL;
			released[count++] = t;
		}
	}
	spin_unlock_irqrestore(&registry_lock, flags);
	/* Their memory goes back outside the lock: mm_put may flush TLBs. */
	while (count)
		task_put(released[--count]);
}

/*
 * Only the parent may wait: a status is the parent's to take, and a task
 * that could wait for any id could take it first and leave the parent
 * with nothing. Task ids are never reused, so the parent's id names it
 * alone.
 */
int task_wait(int id, long *status)
{
	struct task *task = find_task(id), *self = task_current();
	uint64_t flags;

	if (!task)
		return -ESRCH;
	if (task == self) {
		task_put(task);
		return -EINVAL; /* it would wait for itself forever */
	}
	if (task->parent != (self ? self->id : 0)) {
		task_put(task);
		return -ESRCH; /* not a child: as if there were no such task */
	}
	flags = spin_lock_irqsave(&task->exit_wait.lock);
	while (!task->exited) {
		if (self && __atomic_load_n(&self->killed, __ATOMIC_RELAXED)) {
			/* Our own task is ending: stop waiting for another. */
			wait_queue_remove_locked(&task->exit_wait,
						 current_thread());
			spin_unlock_irqrestore(&task->exit_wait.lock, flags);
			task_put(task);
			return -ESRCH;
		}
		wait_queue_sleep_locked(&task->exit_wait);
	}
	if (task->reaped) {
		/* Another thread of the parent took it first. */
		spin_unlock_irqrestore(&task->exit_wait.lock, flags);
		task_put(task);
		return -ESRCH;
	}
	task->reaped = true;
	*status = task->status;
	spin_unlock_irqrestore(&task->exit_wait.lock, flags);
	unregister(task);
	task_put(task);
	return 0;
}

__noreturn void task_exit_thread(void)
{
	struct task *task = task_current();
	struct thread *self = current_thread(), **link;
	uint64_t flags;
	bool last;

	KASSERT(task, "a kernel thread called task_exit_thread");
	ipc_thread_exit(self);
	flags = spin_lock_irqsave(&task->exit_wait.lock);
	for (link = &task->thread_list; *link != self;
	     link = &(*link)->task_next)
		;
	*link = self->task_next;
	last = --task->threads == 0;
	spin_unlock_irqrestore(&task->exit_wait.lock, flags);
	if (last)
		end_task(task);
	current_thread()->task = NULL;
	task_put(task);
	thread_exit();
}

__noreturn void task_exit(long status)
{
	struct task *task = task_current();
	uint64_t flags = spin_lock_irqsave(&task->exit_wait.lock);

	/* The first reason to end wins: a later fault does not overwrite. */
	if (!task->killed) {
		task->killed = true;
		task->status = status;
		/*
		 * Threads blocked in the kernel wake, see it, and end. Such a
		 * wake does not come through the wait queue or IPC list the
		 * thread may be on: it stays listed (its THREAD_LINK_WAIT intact,
		 * sched/thread.h) and takes itself off under that list's lock
		 * once it runs (wait_queue_sleep_locked, ipc_wait_locked).
		 * Taking those locks here instead could deadlock: a thread of
		 * ours may wait on another task's exit_wait while that task
		 * exits too and wakes a thread waiting on ours.
		 */
		for (struct thread *t = task->thread_list; t; t = t->task_next)
			if (t != current_thread())
				sched_wake(t);
	}
	spin_unlock_irqrestore(&task->exit_wait.lock, flags);
	task_exit_thread();
}

void task_check_killed(void)
{
	struct task *task = task_current();

	if (task && __atomic_load_n(&task->killed, __ATOMIC_RELAXED))
		task_exit_thread();
}

bool task_user_page_retry(struct trap_frame *f, uint64_t cr2)
{
	struct thread *t = current_thread();
	uint64_t e = f->error_code;
	unsigned access = MM_FAULT_READ;
	enum mm_fault_verdict verdict;

	/* Before the scheduler runs there is no thread, and a kernel thread
	 * has no user pages to retry (its copies fail); a reserved bit or a
	 * protection key is never a stale entry. */
	if (!t || !t->mm || (e & (PF_RSVD | PF_PK)))
		return false;
	if (e & PF_WRITE)
		access |= MM_FAULT_WRITE;
	if (e & PF_FETCH)
		access |= MM_FAULT_FETCH;
	if (e & PF_USER)
		access |= MM_FAULT_USER;
	verdict = mm_fault_check(t->mm, cr2, access, &t->fault_history);
	if (verdict == MM_FAULT_LOOPING)
		kprintf("task %s (%d): the page tables allow the access at "
			"%#llx, yet it faulted %u times in a row: treated as "
			"a real fault\n",
			t->task ? t->task->name : "?",
			t->task ? t->task->id : -1, (unsigned long long)cr2,
			MM_FAULT_RETRIES_MAX + 1);
	return verdict == MM_FAULT_RETRY;
}

__noreturn void task_user_fault(struct trap_frame *f, uint64_t cr2)
{
	struct task *task = task_current();
	char report[TRAP_REPORT_SIZE];

	trap_describe(f, cr2, report, sizeof(report));
	kprintf("task %s (%d) killed: %s\n", task ? task->name : "?",
		task ? task->id : -1, report);
	if (!task)
		panic_with_frame(f, "ring 3 fault in a thread with no task");
	sti();
	task_exit(TASK_STATUS_FAULT);
}
