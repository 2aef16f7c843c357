// SPDX-License-Identifier: MIT
/*
 * Burns the CPU in user mode for arg milliseconds (1000 when arg is 0 or
 * negative), printing its progress ten times: for preemption tests, which
 * look for other tasks' output between these lines, and for the CPU
 * number changing when the scheduler moves the task.
 *
 * Time comes from SYS_TIME_NS. Between two readings the program spins on
 * its own for a while, so that most of its time is spent in user mode,
 * where the timer interrupt must preempt it.
 */
#include "user/lib/ulib.h"

#define NS_PER_MS 1000000L
#define MAX_MS	  3600000L /* one hour: keeps ms * NS_PER_MS far from overflow */

/* About a microsecond of work the compiler cannot remove. */
static void burn(void)
{
	for (volatile int i = 0; i < 1000; i++)
		;
}

int main(long arg)
{
	long ms = arg > 0 ? MIN(arg, MAX_MS) : 1000;
	long start = sys_time_ns();
	long step = ms * NS_PER_MS / 10;
	long next = start + step, now = start;
	long cpu = sys_cpu_id(), here, moves = 0;
	int tenth = 0;

	if (start < 0 || cpu < 0) {
		printf("spin: SYS_TIME_NS or SYS_CPU_ID failed (error %ld)\n",
		       -(start < 0 ? start : cpu));
		return 1;
	}
	printf("spin: %ld ms on cpu %ld\n", ms, cpu);
	while (tenth < 10) {
		burn();
		now = sys_time_ns();
		if (now < 0) {
			printf("spin: SYS_TIME_NS failed (error %ld)\n", -now);
			return 1;
		}
		if (now < next)
			continue;
		here = sys_cpu_id();
		moves += here != cpu;
		cpu = here;
		tenth++;
		printf("spin: %d0%% (%ld ms) on cpu %ld\n", tenth,
		       (now - start) / NS_PER_MS, cpu);
		next += step;
	}
	printf("spin: done after %ld ms, moved between cpus %ld times\n",
	       (now - start) / NS_PER_MS, moves);
	return 0;
}
