// SPDX-License-Identifier: MIT
/*
 * Spurious page faults (mm/fault.c): a fault on an access that the page
 * tables allow by the time the kernel looks is retried, not fatal.
 *
 * A stale TLB entry that gives fewer rights than the tables is what makes
 * such a fault on hardware, and no emulator keeps one: QEMU and Bochs walk
 * the tables again whenever a cached entry refuses an access. The other way
 * to it is real on every machine: a change that gives rights is in flight
 * (its page-table store waits for mm->lock) while another CPU's access
 * faults on the old entry. The case builds exactly that:
 *
 *	faulter (CPU 1, in the address space): reads the page, which is
 *		read-only, and once told writes it through the exception
 *		table: a real #PF, whose check waits for mm->lock.
 *	the case (CPU 0): takes mm->lock, tells the faulter to write, holds
 *		the lock until the faulter's check is queued behind it (the
 *		ticket lock shows a second taker), makes the page writable,
 *		and lets go.
 *
 * The check then walks tables that allow the write: the fault must end in
 * a retry that stores the value, counted once as `spurious` on CPU 1. A
 * kernel that treats every fault as real fails the write with -EFAULT (a
 * user task would be killed). FLT0002 is the other half of the rule: with
 * no change, the same write is refused at once and nothing is counted.
 */
#include "tests/ktest.h"
#include "tests/kernel/threads.h"
#include "apic/tsc.h"
#include "arch/x86.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "arch/layout.h"
#include "mm/mm.h"
#include "mm/pagetable.h"
#include "mm/tlb.h"
#include "sched/sched.h"
#include "sched/thread.h"
#include "cpu/percpu.h"

#define FAULT_CPU      1
#define FAULT_VA       0x40000000ULL
#define FAULT_VALUE    0x5b0f4a17c0ffee00ULL
#define FAULT_LIMIT_NS 10000000000ULL
#define FAULT_REAP_NS  20000000000ULL

static struct {
	struct mm *mm;
	bool upgrade;	 /* FLT0001: the case makes the page writable */
	uint32_t armed;	 /* atomic: the faulter read and waits for go */
	uint32_t go;	 /* atomic: the case holds mm->lock; write */
	int read_err;	 /* the faulter's, before armed */
	int write_err;	 /* the faulter's, before it exits */
	bool stop;	 /* atomic */
	unsigned exited; /* atomic */
} fv;

static void faulter_main(void *arg)
{
	uint64_t value;

	(void)arg;
	fv.read_err = test_probe_user_read(FAULT_VA, &value);
	/* Pairs with the case's acquire: the read is done. */
	__atomic_store_n(&fv.armed, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&fv.go, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&fv.stop, __ATOMIC_ACQUIRE))
		cpu_relax();
	fv.write_err = test_probe_user_write(FAULT_VA, FAULT_VALUE);
	__atomic_add_fetch(&fv.exited, 1, __ATOMIC_RELEASE);
}

/*
 * Takes mm->lock, lets the faulter write, and waits until a second taker
 * queues (the faulter's check); then, for FLT0001, makes the page writable
 * as mm_protect would. False if nobody came in time.
 */
static bool hold_until_checked(struct ktest_context *t)
{
	uint64_t deadline, flags, pte = 0;
	bool came = false;

	flags = spin_lock_irqsave(&fv.mm->lock);
	/* Pairs with the faulter's acquire: the lock is held before it writes. */
	__atomic_store_n(&fv.go, 1, __ATOMIC_RELEASE);
	deadline = tsc_read_ordered() + ns_to_tsc(FAULT_LIMIT_NS);
	while (!came && tsc_read_ordered() < deadline) {
		came = test_lock_waiters(&fv.mm->lock) > 0;
		cpu_relax();
	}
	if (came && fv.upgrade) {
		KEXPECT(!pt_translate(fv.mm->root, FAULT_VA, NULL, &pte),
			"the page is gone");
		KEXPECT(!pt_protect(fv.mm->root, FAULT_VA,
				    (pte & ~PTE_ADDR_MASK) | PTE_WRITE),
			"making the page writable");
	}
	spin_unlock_irqrestore(&fv.mm->lock, flags);
	return came;
}

static uint64_t spurious_on(unsigned cpu)
{
	return __atomic_load_n(&tlb_cpus[cpu].stats.spurious_faults,
			       __ATOMIC_RELAXED);
}

static void run(struct ktest_context *t, bool upgrade)
{
	unsigned threads_before = thread_count(), started;
	uint64_t deadline, spurious_before, pa = 0, written = 0;
	bool came = false;

	if (cpu_count < 2) {
		ktest_skip(t, "needs 2 CPUs: one faults while the other holds "
			      "the address space's lock (boot with SMP=2)");
		return;
	}
	memset(&fv, 0, sizeof(fv));
	fv.upgrade = upgrade;
	fv.mm = mm_create();
	if (!KEXPECT(fv.mm, "no address space") ||
	    !KEXPECT(!mm_map_anon(fv.mm, FAULT_VA, PAGE_SIZE, MM_PROT_READ),
		     "mapping the page read-only"))
		goto out;
	spurious_before = spurious_on(FAULT_CPU);
	started = test_thread_start(t, faulter_main, NULL, FAULT_CPU,
				    "flt-faulter", fv.mm);
	deadline = tsc_read_ordered() + ns_to_tsc(FAULT_LIMIT_NS);
	while (started && !__atomic_load_n(&fv.armed, __ATOMIC_ACQUIRE) &&
	       tsc_read_ordered() < deadline)
		yield();
	if (started && KEXPECT(fv.armed, "the faulter never ran"))
		came = hold_until_checked(t);
	test_threads_join(t, &fv.stop, &fv.exited, started, threads_before,
			  FAULT_REAP_NS);
	if (!started || !fv.armed)
		goto out;
	KEXPECT(!fv.read_err, "reading the read-only page: %d", fv.read_err);
	KEXPECT(came, "the write's fault never reached its check");
	if (upgrade) {
		KEXPECT(!fv.write_err,
			"the write faulted on a page the tables made writable "
			"before the fault was judged, and failed (%d): a "
			"spurious fault treated as real",
			fv.write_err);
		if (!pt_translate(fv.mm->root, FAULT_VA, &pa, NULL))
			written = *(volatile uint64_t *)phys_to_virt(pa);
		KEXPECT(written == FAULT_VALUE,
			"the page holds %#llx, not the value written",
			(unsigned long long)written);
		KEXPECT(spurious_on(FAULT_CPU) - spurious_before == 1,
			"CPU %u counted %llu spurious faults, not 1", FAULT_CPU,
			(unsigned long long)(spurious_on(FAULT_CPU) -
					     spurious_before));
	} else {
		KEXPECT(fv.write_err == -EFAULT,
			"a write to a read-only page returned %d, not -EFAULT",
			fv.write_err);
		KEXPECT(spurious_on(FAULT_CPU) == spurious_before,
			"a real fault was counted as spurious");
	}
out:
	if (fv.mm)
		mm_put(fv.mm);
}

KTEST(FLT0001, fault, "a fault the tables allow once judged is retried")
{
	run(t, true);
}

KTEST(FLT0002, fault, "a fault the tables refuse fails the access, once")
{
	run(t, false);
}
