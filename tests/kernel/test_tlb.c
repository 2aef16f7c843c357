// SPDX-License-Identifier: MIT
/*
 * The TLB oracle: once a flush call returns, no CPU may use a translation
 * it removed.
 *
 * Versions. A group of pages, in a user address space or in the kernel
 * half, goes through versions 0, 1, 2, ... Each version says of every page
 * whether it is mapped, whether it is writable, and what its first word
 * holds: a pattern naming the group, the page and the version, so a stale
 * read tells which version it came from. A stepper moves a group on:
 *
 *	seq = 2k + 1		the change from version k to k + 1 begins
 *	edit the page tables, then flush_tlb_mm_range / flush_tlb_kernel_range
 *	seq = 2k + 2		every CPU has flushed: only k + 1 may be seen
 *
 * Readers. Threads on every CPU load seq (s1), probe a page (a read, and
 * for groups that become read-only a write, both through the exception
 * table, so a fault is an outcome rather than a crash), and load seq again
 * (s2). An outcome is legal if some version from s1 / 2 to (s2 + 1) / 2
 * explains it. A translation a flush should have removed shows up as a
 * version below s1 / 2: the stale reads this file exists to catch. The
 * bounds come from the order of the loads alone; nothing here is timed.
 *
 * Rounds. Stale entries show by chance (a TLB may drop an entry whenever
 * it likes), so every test repeats its round many times, and before each
 * round the stepper waits until every reader has read the current version,
 * so that their TLBs hold it when the change comes.
 *
 * Threads. Readers of user memory are kernel threads with thread->mm set
 * (each holding a reference): the scheduler switches address spaces for
 * them exactly as for user threads, so the tests drive switch_mm_irqs_off,
 * lazy TLB and ASID recycling as user programs do, while a fault costs a
 * probe's -EFAULT instead of a task. Each is pinned to a CPU by affinity
 * (the migration test moves them on purpose). The variants differ only in
 * what the readers do between reads: spin, yield to other address spaces,
 * park (their CPU idles or runs a kernel thread: lazy), or migrate.
 *
 * The oracle is tests/kernel/tlb_oracle.h (and .c, _threads.c); this file
 * holds the cases, TLB0001-TLB0012.
 */
#include "tests/ktest.h"
#include "tests/kernel/tlb_oracle.h"
#include "cpu/cpu.h"
#include "lib/types.h"
#include "mm/tlb.h"

/*
 * Rounds per test, sized so the suite takes some 15 s under TCG with 4
 * CPUs on a busy 2-core host. A round costs every reader two passes over
 * its pages plus the flush; the slot-recycling round makes every CPU cycle
 * through all its address spaces twice, hence fewer. oracle_begin scales
 * them down for more CPUs and for Bochs.
 */
#define ROUNDS_SHARED	    300
#define ROUNDS_CYCLE	    300
#define ROUNDS_LAZY	    150
#define ROUNDS_ASID	    24
#define ROUNDS_MIGRATE	    100
#define ROUNDS_CEILING	    100
#define ROUNDS_FREED	    150
#define ROUNDS_KERNEL	    150
#define ROUNDS_CONCURRENT   150
#define ROUNDS_SWITCH	    100
#define ROUNDS_BACK_TO_BACK 150
#define ROUNDS_WITNESS	    12 /* each costs a correct kernel WITNESS_HOLD_NS */

/*
 * Pages per group: enough that a flush is a range (several INVLPGs, or
 * one whole-context flush past the ceiling), few enough that a pass is
 * short and every reader sees the round's change within microseconds.
 */
#define SHARED_PAGES	   4
#define SMALL_PAGES	   2
#define KERNEL_PAGES	   3
#define SWITCH_SPIN_PASSES 8 /* reads between two address-space switches */

/*
 * Readers that switch address spaces must still be switching when the
 * flush comes: they rest only after many switches (8 passes apart).
 */
#define SWITCH_REST_AFTER_PASSES 256
/*
 * Readers of the slot-recycling test rest after a few passes: each pass
 * is an address-space switch already, and the round needs only two.
 */
#define ASID_REST_AFTER_PASSES 4

KTEST(TLB0001, tlb, "one address space on every CPU: remapped pages read new")
{
	struct oracle *o = oracle_begin(ROUNDS_SHARED);
	struct mm *mm;

	/* SMAP: Bochs then walks the tables for each kernel access to a
	 * user page, so only the kernel-mapping test can see stale entries
	 * there (docs/tlb-bugs.md). */
	ktest_note("pcid=%d invpcid=%d smap=%d asid_slots=%u lazy=%s "
		   "ceiling=%u tlb_bug=%s",
		   tlb_policy.pcid, tlb_policy.invpcid, boot_cpu.smap,
		   tlb_policy.asid_slots, tlb_lazy_names[tlb_policy.lazy],
		   tlb_policy.flush_ceiling, tlb_bug_names[tlb_bug_choice]);
	mm = oracle_add_mm(t, o);
	oracle_add_anchored_group(t, o, mm, GROUP_REMAP, 0, SHARED_PAGES);
	for (unsigned cpu = 0; cpu < o->cpus; cpu++)
		oracle_add_stepping_reader(o, cpu, mm);
	oracle_run(t, o);
}

KTEST(TLB0002, tlb, "write-protect, unmap, map again: no CPU keeps old rights")
{
	struct oracle *o = oracle_begin(ROUNDS_CYCLE);
	struct mm *mm = oracle_add_mm(t, o);

	oracle_add_anchored_group(t, o, mm, GROUP_CYCLE, 0, SMALL_PAGES);
	for (unsigned cpu = 0; cpu < o->cpus; cpu++)
		oracle_add_stepping_reader(o, cpu, mm);
	oracle_run(t, o);
}

KTEST(TLB0003, tlb, "lazy CPUs (idle or in a kernel thread) catch up on return")
{
	struct oracle *o = oracle_begin(ROUNDS_LAZY);
	struct mm *mm = oracle_add_mm(t, o);
	struct worker *busy[ORACLE_CPUS_MAX] = {0};

	oracle_add_anchored_group(t, o, mm, GROUP_REMAP, 0, SHARED_PAGES);
	/* The stepper is a kernel thread: its own CPU is lazy as it flushes. */
	oracle_add_stepper(o, 0);
	for (unsigned cpu = 1; cpu < o->cpus; cpu++)
		busy[cpu] = oracle_add_worker(o, WORKER_BUSY, cpu, NULL);
	for (unsigned cpu = 0; cpu < o->cpus; cpu++)
		oracle_add_worker(o, WORKER_PARK, cpu, mm)->busy = busy[cpu];
	oracle_run(t, o);
}

KTEST(TLB0004, tlb, "more address spaces than ASID slots, cycled on each CPU")
{
	struct oracle *o = oracle_begin(ROUNDS_ASID);
	unsigned mms = MIN(tlb_policy.asid_slots + 2, (unsigned)ORACLE_MMS_MAX);

	if (mms <= tlb_policy.asid_slots)
		ktest_note("asid_slots=%u: %u address spaces recycle no slot",
			   tlb_policy.asid_slots, mms);
	/* The same address in each: one translation for another is seen. */
	for (unsigned i = 0; i < mms; i++) {
		struct mm *mm = oracle_add_mm(t, o);

		if (!mm)
			break;
		oracle_add_anchored_group(t, o, mm, GROUP_REMAP, 0,
					  SMALL_PAGES);
	}
	oracle_add_stepper(o, 0);
	for (unsigned cpu = 0; cpu < o->cpus; cpu++) {
		for (unsigned i = 0; i < o->mm_count; i++) {
			struct worker *w = oracle_add_worker(o, WORKER_READER,
							     cpu, o->mms[i]);

			w->yield_every = 1;
			w->rest_after = ASID_REST_AFTER_PASSES;
		}
	}
	oracle_run(t, o);
}

KTEST(TLB0005, tlb, "threads migrating between CPUs see only new translations")
{
	struct oracle *o;
	struct mm *mm;

	if (!oracle_need_cpus(t, 2))
		return;
	o = oracle_begin(ROUNDS_MIGRATE);
	mm = oracle_add_mm(t, o);
	oracle_add_anchored_group(t, o, mm, GROUP_REMAP, 0, SMALL_PAGES);
	oracle_add_stepper(o, 0);
	for (unsigned cpu = 0; cpu < o->cpus; cpu++)
		oracle_add_worker(o, WORKER_MIGRATE, cpu, mm);
	oracle_run(t, o);
}

KTEST(TLB0006, tlb, "ranges below, at and above the flush ceiling")
{
	struct oracle *o = oracle_begin(ROUNDS_CEILING);
	unsigned ceiling = tlb_policy.flush_ceiling;
	/* Below it (the largest the test maps, if the ceiling is higher). */
	const unsigned sizes[] = {1, MIN(ceiling, (unsigned)GROUP_PAGES_MAX),
				  ceiling + 1, 2 * ceiling + 1};
	unsigned region = 0, last = 0;
	struct mm *mm = oracle_add_mm(t, o);

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		if (sizes[i] == 0 || sizes[i] <= last)
			continue;
		if (sizes[i] > GROUP_PAGES_MAX) {
			ktest_note("ceiling %u: a range of %u pages is beyond "
				   "the test's %u",
				   ceiling, sizes[i], GROUP_PAGES_MAX);
			continue;
		}
		oracle_add_anchored_group(t, o, mm, GROUP_REMAP, region++,
					  sizes[i]);
		last = sizes[i];
	}
	for (unsigned cpu = 0; cpu < o->cpus; cpu++)
		oracle_add_stepping_reader(o, cpu, mm);
	oracle_run(t, o);
}

KTEST(TLB0007, tlb, "unmaps that free page tables, with lazy CPUs about")
{
	struct oracle *o = oracle_begin(ROUNDS_FREED);
	struct mm *mm = oracle_add_mm(t, o);

	/* No anchor: each unmap empties the PT, PD and PDPT of the group. */
	oracle_add_group(t, o, mm, GROUP_FREE_TABLES, USER_FREEABLE_BASE,
			 SMALL_PAGES);
	/* Even CPUs spin and step; odd ones go lazy between rounds. */
	for (unsigned cpu = 0; cpu < o->cpus; cpu++) {
		if (cpu % 2)
			oracle_add_worker(o, WORKER_PARK, cpu, mm);
		else
			oracle_add_stepping_reader(o, cpu, mm);
	}
	oracle_run(t, o);
}

KTEST(TLB0008, tlb, "kernel mappings (global pages) remapped on every CPU")
{
	struct oracle *o = oracle_begin(ROUNDS_KERNEL);
	unsigned large =
		MIN(tlb_policy.flush_ceiling + 1, (unsigned)GROUP_PAGES_MAX);

	oracle_add_anchored_group(t, o, NULL, GROUP_REMAP, 0, KERNEL_PAGES);
	if (large > KERNEL_PAGES)
		oracle_add_anchored_group(t, o, NULL, GROUP_REMAP, 1, large);
	for (unsigned cpu = 0; cpu < o->cpus; cpu++)
		oracle_add_stepping_reader(o, cpu, NULL);
	oracle_run(t, o);
}

KTEST(TLB0009, tlb, "two CPUs flush one address space at once")
{
	struct oracle *o;
	struct mm *mm;

	if (!oracle_need_cpus(t, 2))
		return;
	o = oracle_begin(ROUNDS_CONCURRENT);
	mm = oracle_add_mm(t, o);
	/* Side by side in one page table, each with its own stepper. */
	oracle_add_anchored_group(t, o, mm, GROUP_REMAP, 0, SMALL_PAGES);
	oracle_add_group(t, o, mm, GROUP_REMAP,
			 oracle_page_va(&o->groups[0], o->groups[0].pages),
			 SMALL_PAGES);
	o->steppers_per_round = 2;
	for (unsigned cpu = 0; cpu < o->cpus; cpu++)
		oracle_add_stepping_reader(o, cpu, mm);
	oracle_run(t, o);
}

KTEST(TLB0010, tlb, "CPUs switching address spaces while the flush is sent")
{
	struct oracle *o;
	struct mm *x, *y;

	if (!oracle_need_cpus(t, 2))
		return;
	o = oracle_begin(ROUNDS_SWITCH);
	x = oracle_add_mm(t, o);
	y = oracle_add_mm(t, o);
	oracle_add_anchored_group(t, o, x, GROUP_REMAP, 0, SMALL_PAGES);
	oracle_add_anchored_group(t, o, y, GROUP_REMAP, 0, SMALL_PAGES);
	/* CPU 0 steps both; the others run x a while, then y, and back. */
	oracle_add_stepping_reader(o, 0, x);
	for (unsigned cpu = 1; cpu < o->cpus; cpu++) {
		struct worker *in_x =
			oracle_add_worker(o, WORKER_READER, cpu, x);
		struct worker *in_y =
			oracle_add_worker(o, WORKER_READER, cpu, y);

		in_x->yield_every = SWITCH_SPIN_PASSES;
		in_x->rest_after = SWITCH_REST_AFTER_PASSES;
		in_y->yield_every = 1;
		in_y->rest_after =
			SWITCH_REST_AFTER_PASSES / SWITCH_SPIN_PASSES;
	}
	oracle_run(t, o);
}

/*
 * A flush call may return only once its request is done with: the next
 * call reuses the request (flush_info=percpu: the CPU's one request;
 * flush_info=stack: the same stack frame). Here every round flushes x,
 * which every CPU reads, and at once y, which no CPU runs.
 */
KTEST(TLB0011, tlb, "back-to-back flushes of two address spaces both complete")
{
	struct oracle *o = oracle_begin(ROUNDS_BACK_TO_BACK);
	struct mm *x = oracle_add_mm(t, o), *y = oracle_add_mm(t, o);

	oracle_add_anchored_group(t, o, x, GROUP_REMAP, 0, SMALL_PAGES);
	oracle_add_anchored_group(t, o, y, GROUP_REMAP, 0, SMALL_PAGES);
	for (unsigned cpu = 0; cpu < o->cpus; cpu++)
		oracle_add_stepping_reader(o, cpu, x);
	oracle_run(t, o);
}

/*
 * The same promise, seen without a race: every other CPU reads x with its
 * interrupts off from before the step until the round ends, so no flush
 * can reach it and a correct flush call cannot return until it lets
 * interrupts in. A call that returns early (tlb_bug=no_wait) or skips it
 * (skip_remote) ends the round under its eyes, every round, however fast
 * or slow each CPU runs.
 */
KTEST(TLB0012, tlb, "a flush waits for a CPU that holds interrupts off")
{
	struct oracle *o;
	struct mm *x;

	if (!oracle_need_cpus(t, 2))
		return;
	o = oracle_begin(ROUNDS_WITNESS);
	x = oracle_add_mm(t, o);
	oracle_add_anchored_group(t, o, x, GROUP_REMAP, 0, SMALL_PAGES);
	oracle_add_stepping_reader(o, 0, x);
	for (unsigned cpu = 1; cpu < o->cpus; cpu++)
		oracle_add_witness(o, cpu, x);
	oracle_run(t, o);
}
