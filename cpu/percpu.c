// SPDX-License-Identifier: MIT
#include "cpu/percpu.h"
#include "arch/x86.h"

extern char boot_stack_top[];

_Static_assert(offsetof(struct percpu, syscall_rsp) == PERCPU_SYSCALL_RSP,
	       "arch/consts.inc must match struct percpu");
_Static_assert(offsetof(struct percpu, user_rsp) == PERCPU_USER_RSP,
	       "arch/consts.inc must match struct percpu");

struct percpu *cpus[MAX_CPUS];
unsigned cpu_count;
struct cpumask cpu_online_mask;

static struct percpu boot_percpu;

void percpu_install(struct percpu *p)
{
	p->self = p;
	wrmsr(MSR_GS_BASE, (uint64_t)p);
}

void percpu_init_boot_cpu(void)
{
	boot_percpu.index = 0;
	boot_percpu.stack_top = (uint64_t)boot_stack_top;
	boot_percpu.tables = &boot_cpu_tables;
	percpu_install(&boot_percpu);
	cpus[0] = &boot_percpu;
	cpu_count = 1;
	cpumask_set(&cpu_online_mask, 0); /* before any AP starts */
}
