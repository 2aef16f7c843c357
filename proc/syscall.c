// SPDX-License-Identifier: MIT
/*
 * System calls: the MSRs that route SYSCALL to proc/syscall_entry.asm, and the
 * dispatcher that checks every argument before acting on it. Arguments and
 * results live in the saved registers (struct trap_frame): RAX is the number
 * on entry and the result on return; IPC words come back in RDX, R10, R8,
 * R9. A bad number, argument or pointer returns a negative error; nothing a
 * user program passes can crash or hang the kernel. Objects are reached
 * only through the calling task's handles (proc/handle.h), each lookup
 * checking type and rights.
 */
#include "proc/syscall.h"
#include "arch/consts.h"
#include "apic/tsc.h"
#include "console/console.h"
#include "cpu/cpu.h"
#include "lib/errno.h"
#include "cpu/gdt.h"
#include "proc/handle.h"
#include "proc/ipc.h"
#include "uapi/syscall.h"
#include "trap/trap.h"
#include "proc/uaccess.h"
#include "arch/x86.h"
#include "mm/mm.h"
#include "sched/sched.h"
#include "proc/task.h"
#include "sched/thread.h"
#include "cpu/percpu.h"

/* SYSCALL configuration (SDM Vol. 3A, 5.8.8). */
#define MSR_STAR	  0xc0000081U
#define MSR_LSTAR	  0xc0000082U
#define MSR_CSTAR	  0xc0000083U /* SYSCALL from compatibility mode */
#define MSR_FMASK	  0xc0000084U
#define MSR_SYSENTER_CS	  0x00000174U /* SDM Vol. 4, table 2-2 */
#define MSR_SYSENTER_ESP  0x00000175U
#define MSR_SYSENTER_EIP  0x00000176U
#define EFER_SCE	  0x1ULL /* SYSCALL enable */
#define STAR_KERNEL_SHIFT 32
#define STAR_USER_SHIFT	  48
#define RFLAGS_TF	  0x100ULL
#define RFLAGS_NT	  0x4000ULL

#define WRITE_CHUNK    256
#define WRITE_MAX      (1ULL << 20) /* bytes per SYS_WRITE */
#define SPAWN_NAME_MAX 32
#define SLEEP_MAX_NS   60000000000ULL /* a minute */
#define AFFINITY_CPUS  64	      /* bits of the SYS_SET_AFFINITY mask */

void syscall_entry(void);
void syscall_entry_compat(void);

static uint64_t boot_tsc;

void syscall_init_this_cpu(void)
{
	if (!boot_tsc)
		boot_tsc = rdtsc();
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SCE);
	wrmsr(MSR_STAR, ((uint64_t)GDT_KERNEL_CODE << STAR_KERNEL_SHIFT) |
				((uint64_t)GDT_USER_CODE32 << STAR_USER_SHIFT));
	wrmsr(MSR_LSTAR, (uint64_t)syscall_entry);
	/* No user code runs in compatibility mode (cpu/gdt.c has no
	 * 32-bit user segment), but should a SYSCALL come from there it
	 * must not land at address 0 in ring 0: its entry kills the task. */
	wrmsr(MSR_CSTAR, (uint64_t)syscall_entry_compat);
	/* SYSENTER is not a way in: with SYSENTER_CS[15:2] zero it raises
	 * #GP(0) in ring 3 (SDM Vol. 2B, SYSENTER), which ends the task.
	 * Written anyway, as the firmware may have left them set. */
	if (boot_cpu.sep) {
		wrmsr(MSR_SYSENTER_CS, 0);
		wrmsr(MSR_SYSENTER_ESP, 0);
		wrmsr(MSR_SYSENTER_EIP, 0);
	}
	/* Entered with interrupts off, string ops forward, no single-step,
	 * and SMAP enforced (AC clear) until we choose to open it. */
	wrmsr(MSR_FMASK,
	      RFLAGS_IF | RFLAGS_DF | RFLAGS_TF | RFLAGS_AC | RFLAGS_NT);
}

/*
 * Writes a line at a time: the console holds interrupts off while it
 * writes, and each line may scroll the screen, which reads the
 * framebuffer back (slow on real video memory). So one hold scrolls at
 * most once, plus the wraps of one chunk's worth of text.
 */
static void write_lines(const char *s, size_t n)
{
	while (n) {
		size_t line = 0;

		while (line < n && s[line++] != '\n')
			;
		console_write(s, line);
		s += line;
		n -= line;
	}
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
		write_lines(chunk, n);
		done += n;
	}
	return (long)done;
}

static void put_grants(struct handle_grant *grants, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		kobject_put(grants[i].obj);
}

/* The child gets each handle listed, with its rights, in slots 0, 1, ... */
static long sys_spawn(uint64_t name, uint64_t len, uint64_t arg,
		      uint64_t handles, uint64_t count)
{
	struct handle_table *table = &task_current()->handles;
	char copy[SPAWN_NAME_MAX + 1];
	uint64_t values[SYS_HANDLE_SPAWN_MAX];
	struct handle_grant grants[SYS_HANDLE_SPAWN_MAX];
	long id;
	int err;

	if (!len || len > SPAWN_NAME_MAX || count > SYS_HANDLE_SPAWN_MAX)
		return -EINVAL;
	if (copy_from_user(copy, name, len) ||
	    (count && copy_from_user(values, handles, count * sizeof(*values))))
		return -EFAULT;
	copy[len] = '\0';
	for (uint64_t i = 0; i < count; i++) {
		grants[i].obj =
			handle_get_any(table, values[i], SYS_RIGHT_GRANT,
				       &grants[i].rights, &err);
		if (!grants[i].obj) {
			put_grants(grants, i);
			return err;
		}
	}
	id = task_spawn(copy, arg, grants, (unsigned)count);
	put_grants(grants, count);
	return id;
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

/*
 * prot's bits are the map rights the handle must hold (proc/handle.c),
 * and SYS_RIGHT_MAP_READ always: x86 has no page that user mode can
 * write or run but not read. prot 0 asks for a page nobody can touch,
 * which x86 cannot map either: refused. The pages keep prot as the most
 * SYS_PROTECT may give them (mm/mm.c, "Rights of shared pages").
 */
static long sys_shm_map(uint64_t h, uint64_t addr, uint64_t prot)
{
	struct task *task = task_current();
	struct kobject *obj;
	int err;

	if (!prot || (prot & ~(uint64_t)SYS_RIGHT_MAP_ALL))
		return -EINVAL;
	obj = handle_get(&task->handles, h, KOBJECT_SHM,
			 (uint32_t)prot | SYS_RIGHT_MAP_READ, NULL, &err);
	if (!obj)
		return err;
	err = mm_map_shared(task->mm, shm_object_memory(obj), addr,
			    (uint32_t)prot);
	kobject_put(obj); /* the address space took its own reference */
	return err;
}

/*
 * Takes the memory back from every address space that maps it (mm/mm.c:
 * shm_revoke, one flush round for all of them). The object and its
 * handles live on, empty: mapping or revoking it again is -EIDRM.
 */
static long sys_shm_revoke(uint64_t h)
{
	struct task *task = task_current();
	int err;
	struct kobject *obj = handle_get(&task->handles, h, KOBJECT_SHM,
					 SYS_RIGHT_REVOKE, NULL, &err);

	if (!obj)
		return err;
	err = shm_revoke(shm_object_memory(obj));
	kobject_put(obj);
	return err;
}

/*
 * The object lives while a handle names it or an address space maps it.
 * The creator's handle holds every right an object of its type has. The
 * object counts against its creator while it lives, up to max of its
 * type (-EBUSY past that; proc/task.h).
 */
static long install_new(struct kobject *obj, uint32_t rights, uint32_t max)
{
	struct task *task = task_current();
	long h;

	if (!obj)
		return -ENOMEM;
	h = kobject_charge(obj, task->charge, max);
	if (!h)
		h = handle_install(&task->handles, obj, rights, -1);
	kobject_put(obj); /* the handle holds its own; else it goes */
	return h;
}

static long sys_shm_create(uint64_t len)
{
	/* Refused before its frames are taken, when they would not fit the
	 * task's share; install_new's charge decides for certain. */
	if (!kobject_frames_fit(task_current()->charge, shm_frames_for(len)))
		return -EBUSY;
	return install_new(shm_object_create(len), SYS_RIGHT_SHM_ALL,
			   TASK_SHM_MAX);
}

static long sys_endpoint_create(void)
{
	struct endpoint *ep = ipc_endpoint_create();

	return install_new(ep ? ipc_endpoint_object(ep) : NULL,
			   SYS_RIGHT_ENDPOINT_ALL, TASK_ENDPOINTS_MAX);
}

/*
 * A message to send whose label has SYS_IPC_LABEL_HANDLE: the object of
 * the handle in word 0 (which must hold SYS_RIGHT_GRANT), with its rights
 * masked by word 1.
 */
static int grant_out(struct handle_table *table, const struct ipc_message *m,
		     struct handle_grant *grant)
{
	int err = 0;

	grant->obj = handle_get_any(table, m->words[0], SYS_RIGHT_GRANT,
				    &grant->rights, &err);
	grant->rights &= (uint32_t)m->words[1];
	return err;
}

static long ipc_syscall(struct trap_frame *f)
{
	struct handle_table *table = &task_current()->handles;
	uint64_t nr = f->rax;
	bool sends = nr != SYS_IPC_RECV;
	uint32_t need = nr == SYS_IPC_SEND || nr == SYS_IPC_CALL
				? SYS_RIGHT_SEND
				: SYS_RIGHT_RECEIVE;
	struct handle_grant grant = {0}, got = {0};
	struct ipc_message in, out;
	struct kobject *obj;
	struct endpoint *ep;
	int err;

	obj = handle_get(table, f->rdi, KOBJECT_ENDPOINT, need, NULL, &err);
	if (!obj)
		return err;
	ep = ipc_object_endpoint(obj);
	syscall_message_in(f, &in);
	if (sends && (in.label & SYS_IPC_LABEL_HANDLE))
		err = grant_out(table, &in, &grant);
	if (!err) {
		switch (nr) {
		case SYS_IPC_SEND:
			err = ipc_send(ep, &in, &grant);
			break;
		case SYS_IPC_RECV:
			err = ipc_receive(ep, &out, &got);
			break;
		case SYS_IPC_CALL:
			err = ipc_call(ep, &in, &grant, &out, &got);
			break;
		default: /* SYS_IPC_REPLY_RECV */
			err = ipc_reply_receive(ep, &in, &grant, &out, &got);
			break;
		}
	}
	kobject_put(obj);
	if (grant.obj) /* not taken */
		kobject_put(grant.obj);
	if (got.obj)
		handle_receive(table, &got, &out);
	if (err || nr == SYS_IPC_SEND)
		return err;
	return syscall_message_out(f, &out);
}

static long dispatch(struct trap_frame *f)
{
	uint64_t a0 = f->rdi, a1 = f->rsi, a2 = f->rdx;
	struct task *task = task_current();
	struct handle_table *table = &task->handles;

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
		return sys_spawn(a0, a1, a2, f->r10, f->r8);
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
	case SYS_SHM_REVOKE:
		return sys_shm_revoke(a0);
	case SYS_ENDPOINT_CREATE:
		return sys_endpoint_create();
	case SYS_IPC_SEND:
	case SYS_IPC_RECV:
	case SYS_IPC_CALL:
	case SYS_IPC_REPLY_RECV:
		return ipc_syscall(f);
	case SYS_HANDLE_DUP:
		return handle_dup(table, a0, a1);
	case SYS_HANDLE_CLOSE:
		return handle_close(table, a0);
	case SYS_HANDLE_INFO:
		return handle_info(table, a0);
	default:
		return -ENOSYS;
	}
}

/*
 * Every call but the short ones, with interrupts on: they can block and
 * must stay preemptible. Out of line: the calls inlined here (sys_spawn's
 * arrays, ipc_syscall's messages) need a large frame and most callee-saved
 * registers, which the short calls must not pay for.
 */
__noinline void syscall_long_call(struct trap_frame *f)
{
	sti();
	f->rax = (uint64_t)dispatch(f);
	cli();
	syscall_exit_if_killed();
}

/*
 * Short calls run as SYSCALL entered, with interrupts off (FMASK clears
 * IF), and skip the STI and CLI that the other calls pay for. A call
 * qualifies when it is a few instructions that never block, take no lock,
 * touch no user memory and call no function (a call here would make every
 * path through this function build a frame). Interrupts off is then safe:
 * the delay is bounded by the entry and exit paths plus those few
 * instructions, and an interrupt that arrives meanwhile is taken once
 * SYSRET restores the user's RFLAGS (IF set), in user mode, where its way
 * out preempts and checks for a kill as after any interrupt from ring 3
 * (trap/trap.c). Only SYS_CPU_ID qualifies (with interrupts off, the
 * index cannot go stale by a migration before it is read); SYS_TIME_NS
 * would but for its call to tsc_to_ns. The IPC calls never come here:
 * the SYSCALL entry sends them to ipc_fast_syscall, which also starts with
 * interrupts off (proc/ipc.h says why) and hands what it declines to
 * syscall_long_call.
 */
_Static_assert(SYS_IPC_CALL == SYSCALL_FAST_FIRST &&
		       SYS_IPC_REPLY_RECV == SYSCALL_FAST_LAST,
	       "arch/consts.h: the calls the SYSCALL entry sends to the fast "
	       "path");
void syscall_dispatch(struct trap_frame *f)
{
	switch (f->rax) {
	case SYS_CPU_ID:
		f->rax = this_cpu_index();
		break;
	default:
		syscall_long_call(f);
		return;
	}
	syscall_exit_if_killed(); /* checked after every system call */
}
