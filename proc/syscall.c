// SPDX-License-Identifier: MIT
/*
 * System calls: the MSRs that route SYSCALL to proc/syscall_entry.asm, and the
 * dispatcher that checks every argument before acting on it. Arguments and
 * results live in the saved registers (struct trap_frame): RAX is the number
 * on entry and the result on return; IPC words come back in RDX, R10, R8,
 * R9. A bad number, argument or pointer returns a negative error; nothing a
 * user program passes can crash or hang the kernel.
 */
#include "proc/syscall.h"
#include "apic/tsc.h"
#include "kernel/console.h"
#include "lib/errno.h"
#include "kernel/gdt.h"
#include "proc/ipc.h"
#include "proc/syscall_abi.h"
#include "kernel/trap.h"
#include "proc/uaccess.h"
#include "kernel/x86.h"
#include "mm/mm.h"
#include "sched/sched.h"
#include "proc/task.h"
#include "sched/thread.h"
#include "smp/percpu.h"

/* SYSCALL configuration (SDM Vol. 3A, 5.8.8). */
#define MSR_STAR	  0xc0000081U
#define MSR_LSTAR	  0xc0000082U
#define MSR_FMASK	  0xc0000084U
#define EFER_SCE	  0x1ULL /* SYSCALL enable */
#define STAR_KERNEL_SHIFT 32
#define STAR_USER_SHIFT	  48
#define RFLAGS_TF	  0x100ULL
#define RFLAGS_NT	  0x4000ULL

#define WRITE_CHUNK	256
#define WRITE_MAX	(1ULL << 20) /* bytes per SYS_WRITE */
#define SPAWN_NAME_MAX	32
#define SLEEP_MAX_NS	60000000000ULL /* a minute */
#define AFFINITY_CPUS	64	       /* bits of the SYS_SET_AFFINITY mask */
#define ENDPOINT_ID_MAX 0x7fffffff

void syscall_entry(void);

static uint64_t boot_tsc;

void syscall_init_this_cpu(void)
{
	if (!boot_tsc)
		boot_tsc = rdtsc();
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SCE);
	wrmsr(MSR_STAR, ((uint64_t)GDT_KERNEL_CODE << STAR_KERNEL_SHIFT) |
				((uint64_t)GDT_USER_CODE32 << STAR_USER_SHIFT));
	wrmsr(MSR_LSTAR, (uint64_t)syscall_entry);
	/* Entered with interrupts off, string ops forward, no single-step,
	 * and SMAP enforced (AC clear) until we choose to open it. */
	wrmsr(MSR_FMASK,
	      RFLAGS_IF | RFLAGS_DF | RFLAGS_TF | RFLAGS_AC | RFLAGS_NT);
	/* Ring 3 can be entered from here on: the trap path learns what a
	 * user fault and a return to user mode mean (the same functions on
	 * every CPU). */
	trap_set_user_handlers(task_user_fault, task_check_killed);
}

static long sys_write(uint64_t buf, uint64_t len)
{
	char chunk[WRITE_CHUNK];
	uint64_t done = 0;

	if (len > WRITE_MAX)
		return -EINVAL;
	while (done < len) {
		size_t n = MIN(len - done, sizeof(chunk));

		if (copy_from_user(chunk, buf + done, n))
			return done ? (long)done : -EFAULT;
		console_write(chunk, n);
		done += n;
	}
	return (long)done;
}

static long sys_spawn(uint64_t name, uint64_t len, uint64_t arg)
{
	char copy[SPAWN_NAME_MAX + 1];

	if (!len || len > SPAWN_NAME_MAX)
		return -EINVAL;
	if (copy_from_user(copy, name, len))
		return -EFAULT;
	copy[len] = '\0';
	return task_spawn(copy, arg);
}

static long sys_wait(uint64_t id)
{
	long status;
	int err;

	if (id > (uint64_t)TASK_ID_MAX)
		return -ESRCH;
	err = task_wait((int)id, &status);
	return err ? err : status;
}

static long sys_set_affinity(uint64_t mask_bits)
{
	struct cpumask mask;

	cpumask_clear_all(&mask);
	for (unsigned cpu = 0; cpu < AFFINITY_CPUS; cpu++) {
		if (!mask_bits || (mask_bits >> cpu) & 1)
			cpumask_set(&mask, cpu);
	}
	return sched_set_affinity(&mask) ? -EINVAL : 0;
}

static long sys_shm_map(uint64_t id, uint64_t addr, uint64_t prot)
{
	struct shm *shm = shm_find(id);
	int err;

	if (!shm)
		return -ENOENT;
	err = mm_map_shared(task_current()->mm, shm, addr, (uint32_t)prot);
	shm_put(shm); /* the address space took its own reference */
	return err;
}

static long sys_shm_create(uint64_t len)
{
	struct shm *shm = shm_create(len);

	/* The object lives until the last address space that maps it ends;
	 * an object nobody maps goes with the creator's handle: none here,
	 * so the creator must map it to keep it. */
	return shm ? (long)shm_id(shm) : -ENOMEM;
}

/* The four IPC words travel in RDX, R10, R8, R9 both ways. */
static void words_in(const struct trap_frame *f, struct ipc_message *m,
		     uint64_t label)
{
	m->label = label;
	m->words[0] = f->rdx;
	m->words[1] = f->r10;
	m->words[2] = f->r8;
	m->words[3] = f->r9;
}

static long words_out(struct trap_frame *f, const struct ipc_message *m)
{
	f->rdx = m->words[0];
	f->r10 = m->words[1];
	f->r8 = m->words[2];
	f->r9 = m->words[3];
	return (long)(m->label & INT64_MAX);
}

static long ipc_syscall(struct trap_frame *f)
{
	struct ipc_message in, out;
	int ep = f->rdi > (uint64_t)ENDPOINT_ID_MAX ? -1 : (int)f->rdi;
	int err;

	words_in(f, &in, f->rsi);
	switch (f->rax) {
	case SYS_IPC_SEND:
		return ipc_send(ep, &in);
	case SYS_IPC_RECV:
		err = ipc_receive(ep, &out);
		break;
	case SYS_IPC_CALL:
		err = ipc_call(ep, &in, &out);
		break;
	default: /* SYS_IPC_REPLY_RECV */
		err = ipc_reply_receive(ep, &in, &out);
		break;
	}
	return err ? err : words_out(f, &out);
}

static long dispatch(struct trap_frame *f)
{
	uint64_t a0 = f->rdi, a1 = f->rsi, a2 = f->rdx;
	struct task *task = task_current();

	switch (f->rax) {
	case SYS_EXIT:
		task_exit((long)a0);
	case SYS_YIELD:
		yield();
		return 0;
	case SYS_THREAD_CREATE:
		return task_thread_create(a0, a1, a2);
	case SYS_THREAD_EXIT:
		task_exit_thread();
	case SYS_SPAWN:
		return sys_spawn(a0, a1, a2);
	case SYS_WAIT:
		return sys_wait(a0);
	case SYS_MAP:
		return mm_map_anon(task->mm, a0, a1, (uint32_t)a2);
	case SYS_UNMAP:
		return mm_unmap(task->mm, a0, a1);
	case SYS_PROTECT:
		return mm_protect(task->mm, a0, a1, (uint32_t)a2);
	case SYS_SET_AFFINITY:
		return sys_set_affinity(a0);
	case SYS_CPU_ID:
		return this_cpu_index();
	case SYS_TIME_NS:
		return (long)tsc_to_ns(rdtsc() - boot_tsc);
	case SYS_WRITE:
		return sys_write(a0, a1);
	case SYS_SLEEP_NS:
		if (a0 > SLEEP_MAX_NS)
			return -EINVAL;
		sleep_ns(a0);
		return 0;
	case SYS_SHM_CREATE:
		return sys_shm_create(a0);
	case SYS_SHM_MAP:
		return sys_shm_map(a0, a1, a2);
	case SYS_ENDPOINT_CREATE:
		return ipc_endpoint_create();
	case SYS_IPC_SEND:
	case SYS_IPC_RECV:
	case SYS_IPC_CALL:
	case SYS_IPC_REPLY_RECV:
		return ipc_syscall(f);
	default:
		return -ENOSYS;
	}
}

void syscall_dispatch(struct trap_frame *f)
{
	f->rax = (uint64_t)dispatch(f);
	task_check_killed();
}
