// SPDX-License-Identifier: MIT
/* The first user program: proves that a program loads, runs in ring 3,
 * makes system calls and ends with a status. With arg HELLO_LINES, it
 * writes HELLO_LINE_COUNT lines in one SYS_WRITE, so that a test can see
 * the kernel take the console one line at a time. */
#include "user/lib/ulib.h"

#define HELLO_LINES	 1
#define HELLO_LINE_COUNT 64
#define HELLO_LINE	 "hello: one of many lines\n"

static char lines[HELLO_LINE_COUNT * sizeof(HELLO_LINE)];

static int write_lines(void)
{
	size_t len = 0;
	long r;

	for (int i = 0; i < HELLO_LINE_COUNT; i++) {
		memcpy(lines + len, HELLO_LINE, sizeof(HELLO_LINE) - 1);
		len += sizeof(HELLO_LINE) - 1;
	}
	r = sys_write(lines, len);
	return r == (long)len ? 0 : 1;
}

int main(long arg)
{
	long cpu = sys_cpu_id();

	if (arg == HELLO_LINES)
		return write_lines();

	if (cpu < 0) {
		printf("hello: SYS_CPU_ID failed (error %ld)\n", -cpu);
		return 1;
	}
	printf("hello from user space on cpu %ld\n", cpu);
	return 0;
}
