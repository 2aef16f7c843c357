// SPDX-License-Identifier: MIT
/*
 * The threads a concurrent test runs, and how they read its pages
 * (threads.h).
 */
#include "tests/kernel/threads.h"
#include "apic/tsc.h"
#include "cpu/cpu.h"
#include "arch/extable.h"
#include "trap/panic.h"
#include "arch/x86.h"
#include "mm/mm.h"
#include "sched/sched.h"
#include "sync/cpumask.h"

/*
 * How often a join looks at the exit count and reaps: often enough that
 * it adds nothing a reader of the run time would notice, rarely enough
 * that the joining CPU leaves the others to run.
 */
#define JOIN_POLL_NS 1000000ULL

struct thread *test_thread_create(thread_fn fn, void *arg, unsigned cpu,
				  const char *name, struct mm *mm)
{
	struct thread *thread;
	struct cpumask pin;

	cpumask_clear_all(&pin);
	cpumask_set(&pin, cpu);
	thread = thread_create(fn, arg, name, &pin);
	if (thread && mm) {
		/* The thread's reference: thread_reap drops it. */
		mm_get(mm);
		thread->mm = mm;
	}
	return thread;
}

bool test_thread_start(struct ktest_context *t, thread_fn fn, void *arg,
		       unsigned cpu, const char *name, struct mm *mm)
{
	struct thread *thread = test_thread_create(fn, arg, cpu, name, mm);

	if (!KEXPECT(thread, "no thread %s", name))
		return false;
	sched_start_thread(thread);
	return true;
}

void test_threads_join(struct ktest_context *t, bool *stop,
		       const unsigned *exited, unsigned started,
		       unsigned threads_before, uint64_t limit_ns)
{
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(limit_ns);
	unsigned done;

	/* Pairs with the acquire load by which each thread polls *stop. */
	__atomic_store_n(stop, true, __ATOMIC_RELEASE);
	/* Acquire: what each thread wrote before it counted itself out. */
	while ((done = __atomic_load_n(exited, __ATOMIC_ACQUIRE)) < started) {
		if (tsc_read_ordered() > deadline)
			/* They may still use the test's data: nothing may go
			 * on. */
			panic("%s: %u of %u threads still running after %llu s",
			      t->id, started - done, started,
			      (unsigned long long)(limit_ns / NSEC_PER_SEC));
		sleep_ns(JOIN_POLL_NS);
	}
	while (thread_count() > threads_before &&
	       tsc_read_ordered() < deadline) {
		sleep_ns(JOIN_POLL_NS);
		thread_reap();
	}
	KEXPECT(thread_count() <= threads_before, "%u threads not reaped",
		thread_count() - threads_before);
}

/*
 * SMAP (CR4.SMAP) faults a kernel access to a user page unless EFLAGS.AC
 * is set: stac sets it for the one probe, clac clears it again.
 */
static void user_access_begin(void)
{
	if (boot_cpu.smap)
		stac();
}

static void user_access_end(void)
{
	if (boot_cpu.smap)
		clac();
}

void test_stop(struct test_stop *s, const char *why)
{
	if (!__atomic_exchange_n(&s->stop, true, __ATOMIC_ACQ_REL))
		s->why = why;
}

bool test_wait_count(struct test_stop *s, const uint32_t *counter,
		     uint32_t value, uint64_t limit_ns, const char *what)
{
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(limit_ns);

	while (test_count_load(counter) < value) {
		if (test_stopped(s))
			return false;
		if (tsc_read_ordered() > deadline) {
			test_stop(s, what);
			return false;
		}
		yield();
	}
	return true;
}

int test_probe_user_read(uint64_t va, uint64_t *value)
{
	int err;

	user_access_begin();
	err = probe_read_u64((const void *)va, value);
	user_access_end();
	return err;
}

int test_probe_user_write(uint64_t va, uint64_t value)
{
	int err;

	user_access_begin();
	err = probe_write_u64((void *)va, value);
	user_access_end();
	return err;
}
