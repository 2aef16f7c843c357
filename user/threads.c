// SPDX-License-Identifier: MIT
/*
 * Threads of one task on several CPUs at once: thread i pins itself to CPU
 * i, checks in, and waits until all have checked in, so every one of them
 * is running at the same moment; each then records the CPU it is on.
 *
 * arg: the number of threads (1..MAX_THREADS), normally the CPU count.
 * Exit status 0 when all met and each ran on its own CPU, 1 otherwise.
 */
#include "user/lib/ulib.h"

#define MAX_THREADS 16
#define STACK_SIZE  8192
#define MEET_NS	    10000000000L /* 10 s: emulated CPUs can be slow */

static char stacks[MAX_THREADS][STACK_SIZE] __aligned(16);
static long cpu_of[MAX_THREADS];
static int arrived, finished, timed_out;
static long threads;

static void worker(long i)
{
	long start;

	sys_set_affinity(1UL << i);
	__atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
	start = sys_time_ns();
	while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < threads) {
		if (sys_time_ns() - start > MEET_NS) {
			__atomic_store_n(&timed_out, 1, __ATOMIC_SEQ_CST);
			break;
		}
	}
	cpu_of[i] = sys_cpu_id();
	__atomic_add_fetch(&finished, 1, __ATOMIC_SEQ_CST);
	sys_thread_exit();
}

int main(long arg)
{
	long start;
	int status = 0;

	threads = arg < 1 ? 1 : arg > MAX_THREADS ? MAX_THREADS : arg;
	for (long i = 1; i < threads; i++) {
		long t = thread_start(worker, stacks[i], STACK_SIZE, i);

		if (t < 0) {
			printf("threads: thread %ld: error %ld\n", i, -t);
			return 1;
		}
	}
	/* This thread is worker 0: it does not exit, it waits for the rest. */
	sys_set_affinity(1UL << 0);
	__atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
	start = sys_time_ns();
	while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < threads &&
	       sys_time_ns() - start < MEET_NS)
		;
	cpu_of[0] = sys_cpu_id();
	__atomic_add_fetch(&finished, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&finished, __ATOMIC_SEQ_CST) < threads)
		sys_yield();
	for (long i = 0; i < threads; i++) {
		for (long j = 0; j < i; j++) {
			if (cpu_of[i] == cpu_of[j]) {
				printf("threads: %ld and %ld both on CPU %ld\n",
				       i, j, cpu_of[i]);
				status = 1;
			}
		}
	}
	if (timed_out ||
	    __atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < threads) {
		printf("threads: the threads never all ran at once\n");
		status = 1;
	}
	if (!status)
		printf("threads: %ld threads ran at once on %ld CPUs\n",
		       threads, threads);
	return status;
}
