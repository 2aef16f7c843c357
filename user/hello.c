// SPDX-License-Identifier: MIT
/* The first user program: proves that a program loads, runs in ring 3,
 * makes system calls and ends with a status. */
#include "user/lib/ulib.h"

int main(long arg)
{
	long cpu = sys_cpu_id();

	if (cpu < 0) {
		printf("hello: SYS_CPU_ID failed (error %ld)\n", -cpu);
		return 1;
	}
	printf("hello from user space on cpu %ld\n", cpu);
	return 0;
}
