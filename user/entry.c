// SPDX-License-Identifier: MIT
/*
 * Tries the ways into and out of the kernel a user program should not have,
 * so tests can see each one end the task (or fail the call) with the
 * kernel alive. tests/kernel/test_user.c runs every case and checks the
 * exit status.
 *
 * arg selects the case:
 *   0  far jump to the 32-bit user code selector, then SYSCALL
 *      (compatibility mode)                      killed: #GP on the far jump
 *   1  SYSENTER                                  killed: #GP (SYSENTER_CS 0) or #UD
 *   2  SYSCALL as the last two bytes of the last user page: the return
 *      address is 0x800000000000, non-canonical  killed: #GP at that address
 *   3  RFLAGS.AC set across system calls and timer interrupts:
 *      AC comes back set, the kernel never runs with it (it checks)
 *                                                exits 0
 *   4  SGDT                                      killed where UMIP is on,
 *                                                exits 0 where it is not
 *
 * Exit status 1 means the case came back where it should not have.
 */
#include "user/lib/ulib.h"

#define SELECTOR_USER_CODE32 0x1b /* arch/consts.h GDT_USER_CODE32, RPL 3 */
#define LAST_USER_PAGE	     0x00007ffffffff000UL
#define PAGE_BYTES	     4096UL
#define SYSCALL_BYTES	     2
#define RFLAGS_AC	     0x40000UL
#define AC_RUN_NS	     50000000UL /* 50 ms: several timer ticks */
#define AC_SLEEP_NS	     1000000UL

/* Opcode bytes of "syscall; ud2": the ud2 is never reached. */
static const unsigned char syscall_code[] = {0x0f, 0x05, 0x0f, 0x0b};

static __noreturn void compat_syscall(void)
{
	/* A far pointer, m16:32: the user program sits below 4 GiB. */
	static struct __attribute__((packed)) {
		unsigned int offset;
		unsigned short selector;
	} target;

	/* A far jump, not a far return: QEMU reads a far return's stack
	 * as the kernel would, which SMAP stops before the selector is
	 * looked at. The bytes at label 1 are a 32-bit SYSCALL. */
	__asm__ volatile("leaq 1f(%%rip), %%rax\n\t"
			 "movl %%eax, %0\n\t"
			 "movw %2, %1\n\t"
			 "ljmpl *%0\n\t"
			 ".code32\n"
			 "1:\tsyscall\n\t"
			 "ud2\n\t"
			 ".code64"
			 : "=m"(target.offset), "=m"(target.selector)
			 : "i"(SELECTOR_USER_CODE32)
			 : "rax", "rcx", "r11", "memory");
	__builtin_unreachable();
}

static __noreturn void last_page_syscall(void)
{
	unsigned char *page = (unsigned char *)LAST_USER_PAGE;
	unsigned char *at = page + PAGE_BYTES - SYSCALL_BYTES;
	long err;

	err = sys_map(page, PAGE_BYTES, SYS_PROT_READ | SYS_PROT_WRITE);
	if (err) {
		printf("entry: mapping the last user page failed: %ld\n", err);
		sys_exit(1);
	}
	memcpy(at, syscall_code, SYSCALL_BYTES);
	err = sys_protect(page, PAGE_BYTES, SYS_PROT_READ | SYS_PROT_EXEC);
	if (err) {
		printf("entry: making it executable failed: %ld\n", err);
		sys_exit(1);
	}
	/* SYS_CPU_ID: a call with no arguments and no effect. */
	__asm__ volatile("jmp *%1"
			 :
			 : "a"((long)SYS_CPU_ID), "r"(at)
			 : "rcx", "r11", "memory");
	__builtin_unreachable();
}

static unsigned long rflags(void)
{
	unsigned long flags;

	__asm__ volatile("pushfq\n\tpopq %0" : "=r"(flags));
	return flags;
}

static void set_rflags(unsigned long flags)
{
	__asm__ volatile("pushq %0\n\tpopfq" : : "r"(flags) : "cc", "memory");
}

/* AC set by ring 3 must survive every way through the kernel and back,
 * and the kernel must not run with it (it would switch SMAP off). */
static int ac_survives(void)
{
	long start;
	int lost = 0;

	set_rflags(rflags() | RFLAGS_AC);
	start = sys_time_ns();
	sys_yield();
	lost |= !(rflags() & RFLAGS_AC);
	sys_sleep_ns(AC_SLEEP_NS);
	lost |= !(rflags() & RFLAGS_AC);
	while (sys_time_ns() - start < (long)AC_RUN_NS)
		lost |= !(rflags() & RFLAGS_AC); /* timer interrupts */
	set_rflags(rflags() & ~RFLAGS_AC);
	if (lost) {
		printf("entry: RFLAGS.AC was lost on a way back\n");
		return 1;
	}
	return 0;
}

int main(long arg)
{
	static const char *const what[] = {
		"SYSCALL from compatibility mode",
		"SYSENTER",
		"SYSCALL from the last user page",
		"RFLAGS.AC across the kernel",
		"SGDT",
	};
	struct __attribute__((packed)) {
		unsigned short limit;
		unsigned long base;
	} gdtr;

	if (arg < 0 || arg >= (long)ARRAY_SIZE(what)) {
		printf("entry: unknown case %ld (0-%zu)\n", arg,
		       ARRAY_SIZE(what) - 1);
		return 2;
	}
	printf("entry: case %ld: %s\n", arg, what[arg]);

	switch (arg) {
	case 0:
		compat_syscall();
	case 1:
		__asm__ volatile("sysenter" : : : "rcx", "r11", "memory");
		break;
	case 2:
		last_page_syscall();
	case 3:
		return ac_survives();
	case 4:
		__asm__ volatile("sgdt %0" : "=m"(gdtr));
		printf("entry: SGDT ran (no UMIP): base %#lx\n", gdtr.base);
		return 0;
	}
	printf("entry: case %ld came back\n", arg);
	return 1;
}
