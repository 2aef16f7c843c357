/* SPDX-License-Identifier: MIT */
/*
 * The threads a concurrent test runs, each pinned to one CPU and perhaps
 * in an address space of the test's, and how they read its pages.
 *
 * A test counts the threads it started, gives them a stop flag to poll
 * and an exit counter that each adds one to as it leaves, and joins them
 * before its data goes away: test_threads_join sets the flag, waits for
 * the count, and reaps them.
 */
#ifndef TESTS_KERNEL_THREADS_H
#define TESTS_KERNEL_THREADS_H

#include "lib/types.h"
#include "sched/thread.h"
#include "tests/ktest.h"

struct mm;

/*
 * A thread that runs fn(arg) on cpu alone, in mm (NULL: a kernel thread),
 * not started yet. It holds a reference to mm, which thread_reap drops.
 * Returns NULL when out of memory.
 */
struct thread *test_thread_create(thread_fn fn, void *arg, unsigned cpu,
				  const char *name, struct mm *mm);

/* test_thread_create, then started; false, and the test failed, if not. */
bool test_thread_start(struct ktest_context *t, thread_fn fn, void *arg,
		       unsigned cpu, const char *name, struct mm *mm);

/*
 * Sets *stop (release), waits until *exited reaches started, then reaps
 * until thread_count() is back to threads_before; limit_ns bounds both.
 * Panics if a thread is still running then: it may still use the test's
 * data, so no test may go on. A thread left unreaped fails the test.
 */
void test_threads_join(struct ktest_context *t, bool *stop,
		       const unsigned *exited, unsigned started,
		       unsigned threads_before, uint64_t limit_ns);

/*
 * Reads (writes) the word at user address va of the running thread's
 * address space through the exception table, with SMAP's check lifted
 * around the access. Returns 0, or -EFAULT when the access faulted.
 */
int test_probe_user_read(uint64_t va, uint64_t *value);
int test_probe_user_write(uint64_t va, uint64_t value);

#endif
