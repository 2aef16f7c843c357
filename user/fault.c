// SPDX-License-Identifier: MIT
/*
 * Dies on purpose, so the kernel's handling of user faults can be seen and
 * tested: the kernel must end this task with a report and go on.
 *
 * arg selects the fault:
 *   0  write to address 0 (NULL)          page fault, not present
 *   1  read a kernel address              page fault, protection (U/S)
 *   2  ud2                                invalid opcode (#UD)
 *   3  divide by zero                     divide error (#DE)
 *   4  cli, a privileged instruction      general protection (#GP)
 *   5  read a non-canonical address       general protection (#GP)
 *   6  write to the program's own code    page fault, protection (W^X)
 *   7  jump into data                     page fault, instruction fetch (NX)
 *
 * Each fault is one instruction in inline assembly: the same fault written
 * in C would be undefined behaviour, which the compiler may turn into
 * something else or remove.
 */
#include "user/lib/ulib.h"

/* A "ret" instruction in a writable, non-executable page (.data). */
static unsigned char data_code[16] = {0xc3};

int main(long arg)
{
	static const char *const what[] = {
		"write to NULL",
		"read a kernel address",
		"ud2 (invalid opcode)",
		"divide by zero",
		"cli (privileged instruction)",
		"read a non-canonical address",
		"write to the program's code",
		"execute data",
	};
	unsigned long value = 0, high = 0;

	if (arg < 0 || arg >= (long)ARRAY_SIZE(what)) {
		printf("fault: unknown case %ld (0-%zu)\n", arg,
		       ARRAY_SIZE(what) - 1);
		return 2;
	}
	printf("fault: case %ld: %s\n", arg, what[arg]);

	switch (arg) {
	case 0:
		__asm__ volatile("movq $1, (%0)" : : "r"(0UL) : "memory");
		break;
	case 1:
		__asm__ volatile("movq (%1), %0"
				 : "=r"(value)
				 : "r"(0xffffffff80000000UL)
				 : "memory");
		break;
	case 2:
		__asm__ volatile("ud2");
		break;
	case 3:
		/* RDX:RAX / ECX with ECX = 0. */
		__asm__ volatile("divl %2" : "+a"(value), "+d"(high) : "c"(0U));
		break;
	case 4:
		__asm__ volatile("cli");
		break;
	case 5:
		__asm__ volatile("movq (%1), %0"
				 : "=r"(value)
				 : "r"(0x8000000000000000UL)
				 : "memory");
		break;
	case 6:
		__asm__ volatile("movb $0xcc, (%0)" : : "r"(&main) : "memory");
		break;
	case 7:
		/* Step over the red zone, which CALL's push would overwrite. */
		__asm__ volatile("sub $128, %%rsp\n\t"
				 "call *%0\n\t"
				 "add $128, %%rsp"
				 :
				 : "r"(data_code)
				 : "memory");
		break;
	}
	printf("fault: case %ld (%s) did not fault!\n", arg, what[arg]);
	return 1;
}
