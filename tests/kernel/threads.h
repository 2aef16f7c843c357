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
#include "sync/spinlock.h"
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
 * Round counters: each is written by one thread, round + 1 once it is done
 * with that round, and read by the others. The release of the publish
 * pairs with the acquire of the load: what the writer did before is seen
 * with the count.
 */
static inline uint32_t test_count_load(const uint32_t *counter)
{
	return __atomic_load_n(counter, __ATOMIC_ACQUIRE);
}

static inline void test_count_publish(uint32_t *counter, uint32_t value)
{
	__atomic_store_n(counter, value, __ATOMIC_RELEASE);
}

/* Takers of a ticket lock queued behind its holder (spinlock.h). */
static inline uint32_t test_lock_waiters(struct spinlock *lock)
{
	return __atomic_load_n(&lock->next_ticket, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(&lock->now_serving, __ATOMIC_ACQUIRE) - 1;
}

/* A run's stop flag, which its threads poll, and why it was set. */
struct test_stop {
	bool stop;	 /* atomic; test_threads_join sets it too */
	const char *why; /* the first reason given, or NULL */
};

static inline bool test_stopped(const struct test_stop *s)
{
	return __atomic_load_n(&s->stop, __ATOMIC_ACQUIRE);
}

/* Stops the run; the first reason given is the one kept. */
void test_stop(struct test_stop *s, const char *why);

/*
 * Until *counter reaches value, yielding: false if the run stops, or once
 * limit_ns passed (the run then stops, with what as the reason).
 */
bool test_wait_count(struct test_stop *s, const uint32_t *counter,
		     uint32_t value, uint64_t limit_ns, const char *what);

/*
 * Reads (writes) the word at user address va of the running thread's
 * address space through the exception table, with SMAP's check lifted
 * around the access. Returns 0, or -EFAULT when the access faulted.
 */
int test_probe_user_read(uint64_t va, uint64_t *value);
int test_probe_user_write(uint64_t va, uint64_t value);

#endif
