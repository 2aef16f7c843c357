// SPDX-License-Identifier: MIT
/*
 * The TLB protocol (mm/tlb.c, mm/tlb_batch.c) on the simulated machine of
 * tests/host/tlb_sim*.c: scenarios, policy sets, the search over
 * schedules, and KTAP (docs/tlb-simulator.md).
 *
 * Every case is a scenario under a policy set. Small scenarios (2 or 3
 * CPUs, a few operations each) are searched exhaustively: every schedule
 * with at most a few preemptions of the running CPU (the bound keeps the
 * search finite; most concurrency bugs need one or two). The random
 * scenario draws a machine (2-8 CPUs), a workload and a schedule with
 * hardware events from each of SIM_RANDOM_SEEDS seeds; one more case
 * runs random machines under every combination of option values. With
 * the protocol as written, every case must find nothing; with each
 * tlb_bug= switched on, some search must find a violation ("bug <name>
 * caught").
 *
 *	tlb_sim                        every case, KTAP
 *	tlb_sim -l                     the case names
 *	tlb_sim 'lazy pcid2-skip' ...  the cases named
 *	tlb_sim -w lazy -p pcid2-skip [-b bug]
 *	                               search one scenario, report in words;
 *	                               -p also takes option words, such as
 *	                               -p 'asid_slots=1 lazy=ipi'
 *	tlb_sim -W 'run 1, read 0' -W 'run 1, remap 1 0' -p defaults [-P 3]
 *	                               search a workload typed in (one -W per
 *	                               CPU; -P: the preemption bound)
 *	... -c choices | -s seed [-v]  one run of it: a schedule the search
 *	                               printed, or a random one; -v prints
 *	                               the trace as it goes, with the values
 *	                               behind each decision
 *	... -f K                       allocation K of each run fails (the
 *	                               fail-* scenarios: each K in turn)
 */
#include "tests/host/tlb_sim.h"
#include "cpu/cpu.h"
#include "mm/tlb_options.h"
#include "smp/call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The search bounds. Each searched scenario bounds the preemptions of the
 * running CPU (two or three cover the races the protocol must survive: a
 * flush against a switch, two flushes against each other, an IPI held up
 * in between); the run cap keeps a case within a second or two under ASan
 * on two cores, as do the random seeds per policy set.
 */
#define DFS_MAX_RUNS	   3000
#define CUSTOM_PREEMPTIONS 2
#define BUG_MAX_RUNS	   20000 /* a bug case's searches, all told */
#define RETURN_MAX_RUNS	   12000 /* the return scenario: 2 preemptions */
#define REFILL_MAX_RUNS	   40000 /* the refill scenario: 3 CPUs */
/* return-refill: one preemption, far in; its mistake shows by run 4000 */
#define RETURN_REFILL_MAX_RUNS 6000
/* two-behind: the same, its mistake by run 5000 */
#define TWO_BEHIND_MAX_RUNS 8000
/* unmap-map: the reader must be preempted between its two reads. */
#define UNMAP_MAP_MAX_RUNS 5000
/* gasid-switch: two preemptions, far in; its mistake shows by run 10600 */
#define GASID_SWITCH_MAX_RUNS 11000
#define TRACE_SHOWN	      30 /* trace lines printed after a failure */
#define REPRODUCE_LINE_SIZE   1024

/*
 * Pages 0-3 are in page table 0, pages 4-7 in page table 1 (alone in its
 * PML4 slot), pages 8-9 shared (tlb_sim_workload.c).
 */
static const struct sim_scenario scenarios[] = {
	{
		.name = "shootdown",
		.why = "two CPUs on one mm: changes against accesses",
		.preemptions = 3,
		.mms = 2,
		.cpu = {"run 1, write 0, remap 1 0, protect 1 1, unmap 1 2 2",
			"run 1, read 0, write 1, read 2, write 0"},
	},
	{
		.name = "crossfire",
		.why = "two CPUs flush each other at once",
		.preemptions = 3,
		.mms = 1,
		.cpu = {"run 1, read 4, remap 1 0, write 4",
			"run 1, read 0, remap 1 4, write 0"},
	},
	{
		.name = "switch",
		.why = "switching into an mm while it is flushed",
		.preemptions = 2,
		.mms = 2,
		.cpu = {"run 1, remap 1 0, protect 1 1, unmap 1 2 1",
			"run 2, run 1, read 0, write 1, kthread, run 1, read "
			"2"},
	},
	{
		.name = "lazy",
		.why = "a lazy CPU while its mm changes and loses a table",
		.preemptions = 3,
		.mms = 2,
		.cpu = {"run 2, remap 1 0, free-table 1 1, run 1",
			"run 1, read 0, read 4, kthread, run 1, read 0"},
	},
	{
		.name = "speculate",
		.why = "the lazy race with the walker refilling after every "
		       "flush",
		.preemptions = 2,
		.mms = 2,
		.cpu = {"run 2, remap 1 0, free-table 1 1, run 1",
			"run 1, read 0, read 4, kthread, run 1, read 0"},
		.refill = true,
	},
	{
		.name = "asid",
		.why = "slots recycled and revisited while an mm changes",
		.preemptions = 2,
		.mms = 3,
		.cpu = {"run 3, remap 1 0, unmap 1 1 1, write 0",
			"run 1, read 0, run 2, read 0, run 1, read 0, read 1"},
	},
	{
		.name = "exit",
		.why = "teardown with lazy CPUs; kernel-page flushes",
		.preemptions = 2,
		.mms = 2,
		.cpu = {"run 1, write 0, kremap 0, kthread, exit 1, run 2",
			"run 1, read 0, kread 0, kthread, run 2, read 0"},
	},
	{
		.name = "three",
		.why = "three CPUs: one changes, one lazy, one switching",
		.preemptions = 1,
		.mms = 2,
		.cpu = {"run 1, remap 1 0, free-table 1 1, exit 1",
			"run 1, read 4, kthread, run 1",
			"run 2, run 1, read 0, run 2"},
	},
	/*
	 * A CPU comes back to an mm through the slot it kept, while another
	 * changes the mm: the flusher's mask must not miss it, the returning
	 * CPU's gen must see the bump (two preemptions: a bigger run cap).
	 * Under lazy=off with PCID the CPU leaves the mask and keeps its slot;
	 * under lazy=skip it stays lazy, is skipped, and must catch up by
	 * generation when the thread comes back (leave_lazy).
	 */
	{
		.name = "return",
		.why = "a CPU returns through its kept slot while the mm "
		       "changes",
		.preemptions = 2,
		.max_runs = RETURN_MAX_RUNS,
		.policy = "pcid1-off nopcid-skip pcid2-skip pcid3-skip",
		.mms = 1,
		.cpu = {"remap 1 0", "run 1, read 0, kthread, run 1, read 0"},
	},
	/*
	 * A full flush on CPU 0 races a second change of the same mm, by a
	 * third CPU: the walker refills the old translation right after the
	 * flush, so the slot may claim only the generation read before it
	 * (flush_ceiling=0 in pcid1-off: every flush is a full one).
	 */
	{
		.name = "refill",
		.why = "a change lands while a full flush is under way",
		.preemptions = 1,
		.max_runs = REFILL_MAX_RUNS,
		.policy = "pcid1-off",
		.mms = 1,
		.cpu = {"run 1, read 0, read 1", "remap 1 0", "remap 1 1"},
		.refill = true,
	},
	/*
	 * A lazy CPU comes back and catches up (leave_lazy) while a second
	 * change of the mm lands: its whole-context flush is refilled by the
	 * walker at once, and the second change bumps the generation between
	 * the catch-up's read and its record. The slot may claim only the
	 * generation read before the flush (I1); a later read claims the
	 * second change, whose request then finds the CPU up to date.
	 */
	{
		.name = "return-refill",
		.why = "a lazy CPU catches up while a second change lands",
		.preemptions = 1,
		.max_runs = RETURN_REFILL_MAX_RUNS,
		.policy = "nopcid-skip defaults",
		.mms = 1,
		.cpu = {"remap 1 0, kremap 1, remap 1 1",
			"run 1, read 0, read 1, kthread, kremap 0, run 1, "
			"read 1"},
		.refill = true,
	},
	/*
	 * Two changes of one mm by two CPUs, each a one-page request to a
	 * third CPU that cached both pages: the newer request arrives first
	 * when the first flusher is preempted between its bump and its send,
	 * and finds the slot two behind. Only a whole-context flush may
	 * handle it: flushing its one page and recording its generation
	 * leaves the older change's page cached and the older request up to
	 * date (L5, question 3).
	 */
	{
		.name = "two-behind",
		.why = "the newest request reaches a CPU two generations "
		       "behind",
		.preemptions = 1,
		.max_runs = TWO_BEHIND_MAX_RUNS,
		.policy = "defaults pcid2-skip",
		.mms = 1,
		.cpu = {"unmap 1 0 1", "unmap 1 1 1", "run 1, read 0, read 1"},
	},
	{
		.name = "kstack",
		.why = "a kernel stack freed while another PCID caches its "
		       "walk",
		.preemptions = 2,
		.mms = 2,
		.cpu = {"run 1, kstack-touch 0, run 2, run 1, kstack-touch 1",
			"kstack-free 0, kstack-alloc 1"},
	},
	{
		.name = "shared",
		.why = "shared pages unmapped: no frame freed, still flushed",
		.preemptions = 2,
		.mms = 2,
		.cpu = {"run 1, read 8, write 9, read 8, read 9",
			"run 2, read 8, unmap 1 8 2, remap 2 9, read 9"},
	},
	{
		.name = "lazyfree",
		.why = "a lazy CPU frees tables of its own lazy mm",
		.preemptions = 2,
		.mms = 1,
		.cpu = {"run 1, read 4, kthread, free-table 1 1, run 1, read 0",
			"run 1, read 4, write 5, read 0"},
	},
	/*
	 * A lazy CPU whose mm loses a page table before any other change:
	 * under lazy=skip the flush of that change, the first to concern
	 * the lazy CPU, must reach it (in "lazy" an earlier remap has already
	 * sent it away, so a rule that skips lazy CPUs only when tables are
	 * freed passes there).
	 */
	{
		.name = "lazy-tables",
		.why = "a lazy CPU's mm loses a table before any other change",
		.preemptions = 2,
		.policy = "pcid2-skip",
		.mms = 2,
		.cpu = {"run 2, free-table 1 1, run 1",
			"run 1, read 4, kthread, run 1, read 0"},
	},
	/*
	 * A shared object revoked while the address spaces that map it run
	 * on other CPUs: one round (unmap_batch=pages or all) must reach the
	 * CPUs of every space before the frames are freed; per_mm, a round
	 * per space. Three spaces: one lazy, one switched to meanwhile.
	 */
	{
		.name = "revoke",
		.why = "an object revoked from two spaces on two CPUs",
		.preemptions = 3,
		.mms = 2,
		.cpu = {"run 1, read 8, revoke, run 1, read 8",
			"run 2, read 8, read 9, read 8"},
	},
	{
		.name = "revoke3",
		.why = "a revoke from three spaces: lazy, switching, running",
		.preemptions = 1,
		.mms = 3,
		.cpu = {"run 1, revoke, read 9",
			"run 2, read 8, kthread, run 2, read 9",
			"run 3, read 9, run 2, read 8"},
	},
	/*
	 * Changes that meet a flush still pending (mm/mm.c, "Flushes still
	 * pending"): an unmap's PTEs are cleared and its flush is under way
	 * (the CPU reading them has not answered yet) when a revoke, or a
	 * map of the same page, runs on a third CPU and returns.
	 */
	{
		.name = "revoke-unmap",
		.why = "a revoke while an unmap of its pages is being flushed",
		.preemptions = 1,
		.mms = 2,
		.cpu = {"run 2, unmap 2 8 2", "run 1, revoke",
			"run 2, read 8, read 9"},
	},
	{
		.name = "unmap-map",
		.why = "a map of a page whose unmap is being flushed",
		.preemptions = 1,
		.max_runs = UNMAP_MAP_MAX_RUNS,
		.mms = 1,
		.cpu = {"run 1, unmap 1 0 1", "run 1, map 1 0 1",
			"run 1, read 0, read 0"},
	},
	/*
	 * Spurious faults (mm/fault.c): CPU 0 caches page 0 read-only, then
	 * CPU 1 makes it writable again while CPU 0 writes it. Before CPU 1's
	 * flush reaches it, CPU 0 faults on its stale entry although the
	 * tables allow the write: the kernel's rule must retry it. Written
	 * while still read-only, the fault is real: the rule must refuse.
	 * The case "faults retried and refused" checks both happen.
	 */
	{
		.name = "upgrade",
		.why = "a page made writable while a stale read-only entry "
		       "is written through",
		.preemptions = 2,
		.mms = 1,
		.cpu = {"run 1, protect 1 0, read 0, write 0",
			"run 1, protect 1 0"},
	},
	/*
	 * A CPU comes back to an mm through the slot it kept (lazy=off: it
	 * left the mask) while another CPU unmaps a page it had cached: the
	 * flusher must take the mask after bumping tlb_gen, or the returning
	 * CPU reads the old gen, loads its slot with no-flush and is not a
	 * target. CPU 0 waits for CPU 2's answer to a flush of mm2 between
	 * its two visits, which lets CPU 1 in at no cost: one preemption.
	 */
	{
		.name = "rejoin",
		.why = "a CPU rejoins an mm's mask while a flush is sent",
		.preemptions = 1,
		.policy = "pcid1-off",
		.mms = 2,
		.cpu = {"run 1, read 0, kthread, remap 2 0, run 1, read 0",
			"unmap 1 0 1", "run 2"},
	},
	/*
	 * Changes of one page or object that overlap: a protect and an
	 * unmap; two unmaps (the second finds the page cleared, flushes
	 * nothing of its own and must still not return before the first
	 * one's flush); a revoke and a protect of a shared page; a revoke
	 * while the object is mapped again (mapshm). Then kernel-stack
	 * slots: a stack freed on CPU 1 and allocated again on CPU 2 in the
	 * same slot while CPU 0 still caches the old one (CPU 0's kremap
	 * waits for the others, which lets them run at no cost).
	 */
	{
		.name = "protect-unmap",
		.why = "a protect and an unmap of one page at once",
		.preemptions = 1,
		.policy = "defaults",
		.mms = 1,
		.cpu = {"run 1, protect 1 0", "run 1, unmap 1 0 1",
			"run 1, write 0, read 0"},
	},
	{
		.name = "unmap-unmap",
		.why = "two unmaps of one page: the second finds it cleared",
		.preemptions = 1,
		.policy = "defaults",
		.mms = 1,
		.cpu = {"run 1, unmap 1 0 2",
			"run 1, read 1, unmap 1 1 1, read 1"},
	},
	{
		.name = "revoke-protect",
		.why = "a revoke while a shared page is write-protected",
		.preemptions = 1,
		.policy = "defaults",
		.mms = 2,
		.cpu = {"run 1, protect 1 8", "run 2, revoke",
			"run 1, write 8, read 8"},
	},
	{
		.name = "revoke-map",
		.why = "a revoke while the object is mapped again",
		.preemptions = 1,
		.policy = "defaults",
		.mms = 2,
		.cpu = {"run 2, revoke", "mapshm 1", "run 1, read 8, read 9"},
	},
	{
		.name = "kstack-reuse",
		.why = "a stack slot freed and reused across CPUs",
		.preemptions = 1,
		.policy = "defaults",
		.mms = 1,
		.cpu = {"kstack-touch 0, kremap 0, kstack-touch 1",
			"kstack-free 0", "kstack-alloc 1"},
	},
	/*
	 * Out of memory (allocation k of the run fails, for each k in turn):
	 * the error paths must leave nothing mapped, leaked or reachable.
	 * fail-map: a two-page map into a region whose tables were freed
	 * (frame, PDPT, PD, PT, frame) fails at each step, while another CPU
	 * reads the page it may have mapped for a moment. fail-shm: a map of
	 * the shared object fails on its second page's table while another
	 * CPU revokes the object (the revoke must still find the first page
	 * mapped). fail-kstack: a stack allocated in a freed slot.
	 */
	{
		.name = "fail-map",
		.why = "mm_map_anon runs out of memory at each allocation",
		.preemptions = 1,
		.policy = "defaults",
		.mms = 1,
		.cpu = {"run 1, free-table 1 1, map 1 4 2, read 4",
			"run 1, read 4, read 4, read 5"},
		.fail_each = true,
	},
	{
		.name = "fail-shm",
		.why = "mm_map_shared runs out of memory while a revoke runs",
		.preemptions = 1,
		.policy = "defaults",
		.mms = 2,
		.cpu = {"run 2, revoke", "mapshm 1"},
		.fail_each = true,
	},
	{
		.name = "fail-kstack",
		.why = "kstack_alloc runs out of memory at each allocation",
		.preemptions = 1,
		.policy = "defaults",
		.mms = 1,
		.cpu = {"kstack-touch 0, kstack-free 0, kstack-alloc 1, "
			"kstack-touch 1",
			"kstack-touch 0, kstack-touch 1"},
		.fail_each = true,
	},
	/*
	 * Global ASIDs (INVLPGB; mm/tlb.c, "Global ASIDs"), under a policy
	 * with one global ASID, handed out by any flush from a CPU that runs
	 * the space. gasid-wrap: mm1 gets it and caches a page under it,
	 * exits, and mm2 gets it back after the wrap-around; a TLB that kept
	 * mm1's entries of that PCID would give mm2 mm1's freed frames.
	 * gasid-switch: CPU 1 switches to mm1 while CPU 0's flush, waiting for
	 * CPU 2, is about to give mm1 its global ASID; CPU 1 reads "none" and
	 * loads its dynamic PCID, whose walker refills the page CPU 0 unmaps
	 * next by broadcast. That flush must still send CPU 1 the request: it
	 * was SWITCHING, so the transition is not over. gasid-range: CPU 1
	 * runs mm1 under its global ASID and caches page 2 when CPU 0 unmaps
	 * pages 0-2: under the ceiling (3 pages), but more than one INVLPGB
	 * takes (the simulated CPU's limit is 2), so the range needs two.
	 * gasid-wrap-remote: the dead space's entries sit on another CPU than
	 * the one that wraps around. CPU 1 runs mm1 under its global ASID
	 * and caches page 0; mm1 exits; CPU 0 wraps around and gives the
	 * PCID to mm2, which CPU 1 then loads with the no-flush bit (in the
	 * sweep): only a broadcast at the wrap-around reaches CPU 1's TLB.
	 * The giver's store of global_pcid waits in its store buffer until
	 * something serializing drains it, so CPU 0 switches away (a CR3
	 * load) right after the first give, or CPU 1 would read "none" and
	 * run mm1 on a dynamic PCID; the end of the phase drains the second.
	 */
	{
		.name = "gasid-wrap",
		.why = "a global ASID freed at exit and handed out again",
		.preemptions = 1,
		.policy = "gasid",
		.mms = 3,
		.cpu = {"run 1, remap 1 1, run 3, run 1, read 0, run 3, "
			"exit 1, run 2, remap 2 1, run 3, run 2, read 0",
			"run 2, read 0, read 1, run 3"},
	},
	{
		.name = "gasid-switch",
		.why = "a CPU switches in while its space gets a global ASID",
		.preemptions = 2,
		.max_runs = GASID_SWITCH_MAX_RUNS,
		.policy = "gasid",
		.mms = 2,
		.cpu = {"run 1, unmap 1 1 1, run 2, unmap 1 0 1",
			"run 1, read 0", "run 1, run 2"},
		.refill = true,
	},
	{
		.name = "gasid-range",
		.why = "a range of more pages than one INVLPGB takes",
		.preemptions = 2,
		.policy = "gasid",
		.mms = 2,
		.cpu = {"run 1, remap 1 4, unmap 1 0 3",
			"run 2, run 1, read 2, read 2"},
	},
	{
		.name = "gasid-wrap-remote",
		.why = "a global ASID reused while another CPU holds its "
		       "entries",
		.preemptions = 1,
		.policy = "gasid",
		.mms = 3,
		.cpu = {"run 1, remap 1 1, run 3, exit 1, run 2, remap 2 1",
			"run 1, read 0, run 3"},
	},
	/*
	 * Two global ASIDs (gasid2); CPU 0 does the work, switching to mm5
	 * between the steps (a space it runs again is loaded under its new
	 * global PCID). gasid-wrap-second: mm1 holds global ASID 0 throughout;
	 * mm2 gets global ASID 1, caches page 0 under it and exits; mm3's
	 * flush wraps around, which frees only ASID 1, and gets it. A
	 * wrap-around that flushes one PCID, the first global one (all that
	 * global_asids=1 has), leaves mm2's entries and cached walks tagged
	 * with ASID 1. gasid-wrap-twice: an ASID held across a wrap-around
	 * must stay held at the next. mm1 gets ASID 0 and exits; mm2 gets 1;
	 * mm3's flush wraps around and gets 0 back; mm2 exits; mm4's flush
	 * wraps around again and must get 1. An allocator that left 0 in
	 * its freed set at the first wrap-around frees it at the second
	 * while mm3 holds it and gives mm4 the same PCID: in the sweep, mm4
	 * loads it with the no-flush bit and reads mm3's pages.
	 */
	{
		.name = "gasid-wrap-second",
		.why = "a wrap-around that frees the second global ASID",
		.preemptions = 1,
		.policy = "gasid2",
		.mms = 5,
		.cpu = {"run 1, remap 1 1, run 5, run 2, remap 2 1, run 5, "
			"run 2, read 0, run 5, exit 2, run 3, remap 3 1, run 5",
			"run 5"},
	},
	{
		.name = "gasid-wrap-twice",
		.why = "a global ASID held across two wrap-arounds",
		.preemptions = 1,
		.policy = "gasid2",
		.mms = 5,
		.cpu = {"run 1, remap 1 1, run 5, exit 1, run 2, remap 2 1, "
			"run 5, run 3, remap 3 1, run 5, exit 2, run 4, "
			"remap 4 1, run 5",
			"run 5"},
	},
	{
		.name = "random",
		.why = "2-8 CPUs, random workloads, schedules, TLB events",
		.random = true,
		.preemptions = 0,
		.mms = 0,
	},
};

/* -W: a workload typed on the command line. */
static struct sim_scenario custom = {
	.name = "custom",
	.why = "typed in",
	.preemptions = CUSTOM_PREEMPTIONS,
};

struct policy_set {
	const char *name;
	const char *words; /* kernel command line; the rest are defaults */
};

/*
 * Together they give every policy every value at least once, and pair
 * the risky ones: one or two ASID slots (recycling all the time) with
 * each lazy policy, INVPCID and CR3 reloads, requests on the stack.
 * The simulated CPU has INVLPGB, which every set with PCID uses (global
 * ASIDs from four CPUs on: random machines; every kernel range) but
 * pcid1-ipi, pcid1-off and pcid2-dynamic, kept to IPIs alone (the first
 * two with INVPCID, which kernel ranges by IPI use, below and above the
 * ceiling); gasid hands its one global ASID out
 * at the first flush, so that allocation, transitions and the wrap-around
 * happen in small scenarios. gasid2 has two, for the wrap-arounds that
 * free one of them while the other is held; it runs only the scenarios
 * that name it (the others run under gasid, which differs from it only in
 * that count).
 */
static const struct policy_set policy_sets[] = {
	{"nopcid-off", "pcid=off lazy=off"},
	{"nopcid-skip", "pcid=off flush_ceiling=1 flush_info=stack "
			"flush_concurrent=off kernel_mm_mask=touch "
			"lazy_mm=refcount unmap_batch=per_mm"},
	{"pcid1-ipi", "invlpgb=off asid_slots=1 lazy=ipi flush_info=stack"},
	{"pcid2-skip", "asid_slots=2 flush_ceiling=1 kernel_mm_mask=touch "
		       "lazy_mm=refcount unmap_batch=all"},
	{"pcid2-dynamic", "invpcid=off invlpgb=off asid_slots=2 lazy=dynamic "
			  "lazy_backoff=1 flush_concurrent=off "
			  "lazy_mm=refcount"},
	{"pcid1-off", "invlpgb=off asid_slots=1 lazy=off flush_ceiling=0 "
		      "flush_info=stack flush_concurrent=off "
		      "kernel_mm_mask=touch"},
	{"defaults", ""},
	{"pcid3-skip", "invpcid=off asid_slots=3 flush_ceiling=2 "
		       "flush_info=stack kernel_mm_mask=touch "
		       "unmap_batch=all"},
	{"gasid", "invpcid=off asid_slots=3 flush_ceiling=3 unmap_batch=all "
		  "global_asids=1 global_asid_cpus=1"},
	{"gasid2", "invpcid=off asid_slots=3 flush_ceiling=3 unmap_batch=all "
		   "global_asids=2 global_asid_cpus=1"},
};

/* The sets that only the scenarios naming them run under. */
static const char *const named_only_policies = "gasid2";

/* -p with option words rather than a set's name. */
static struct policy_set custom_policy = {"custom", ""};

/*
 * Where each bug shows first, and why there: the bug cases search these
 * first, then every other scenario under every policy set.
 */
static const struct {
	enum tlb_bug bug;
	const char *scenario, *policy, *why;
} bug_hints[] = {
	{TLB_BUG_SKIP_REMOTE, "shootdown", "defaults",
	 "the other CPU keeps the old entry"},
	{TLB_BUG_NO_WAIT, "shootdown", "defaults",
	 "the page is freed before the other CPU flushed"},
	{TLB_BUG_ACK_BEFORE_FLUSH, "shootdown", "defaults",
	 "the wait ends before the other CPU flushed"},
	{TLB_BUG_NO_GEN_CHECK, "asid", "pcid2-skip",
	 "a slot behind in generation is loaded without a flush"},
	{TLB_BUG_REUSE_ASID_NOFLUSH, "asid", "pcid1-ipi",
	 "one slot: the next mm sees the previous one's entries"},
	{TLB_BUG_LAZY_SKIP_FREED_TABLES, "lazy", "pcid2-skip",
	 "the lazy CPU's loaded PCID still caches the freed table"},
	{TLB_BUG_FREE_BEFORE_ACK, "shootdown", "defaults",
	 "the page is freed while the other CPU still maps it"},
	{TLB_BUG_BATCH_FIRST_MM_ONLY, "revoke", "defaults",
	 "the CPU running the second space keeps the revoked frame"},
	{TLB_BUG_REVOKE_SKIPS_CLEARED, "revoke-unmap", "defaults",
	 "the frames are freed while the reader still maps them"},
	{TLB_BUG_MAP_NO_WAIT, "unmap-map", "defaults",
	 "the reader still sees the old frame after the map returned"},
	{TLB_BUG_GLOBAL_ASID_REUSE_NOFLUSH, "gasid-wrap", "gasid",
	 "mm2 loads the PCID whose entries still map mm1's freed frames"},
	{TLB_BUG_INVLPGB_WITHOUT_PCID, "gasid-wrap",
	 "pcid=off global_asids=1 global_asid_cpus=1",
	 "a global PCID in CR3, or an INVLPGB naming one, with CR4.PCIDE "
	 "clear: #GP"},
	{TLB_BUG_TRANSITION_SKIPS_SWITCHING, "gasid-switch", "gasid",
	 "the returning CPU keeps its old entry on its dynamic PCID"},
	{TLB_BUG_TLBSYNC_SKIPPED, "shootdown", "gasid",
	 "the flush returns while its INVLPGB is still outstanding"},
	{TLB_BUG_TLBSYNC_AFTER_MIGRATE, "shootdown", "gasid",
	 "the TLBSYNC may run on another CPU than its INVLPGBs"},
};

static const char *program = "tlb_sim";

/* --- Reports ------------------------------------------------------------------- */

static void reproduce_line(const struct sim_scenario *sc,
			   const struct policy_set *ps, enum tlb_bug bug,
			   const struct sim_outcome *out, char *buf,
			   size_t size)
{
	size_t used = (size_t)snprintf(buf, size, "%s", program);

	if (sc == &custom) {
		for (unsigned c = 0; c < SIM_CPUS_MAX && sc->cpu[c]; c++)
			used += (size_t)snprintf(buf + used, size - used,
						 " -W '%s'", sc->cpu[c]);
	} else {
		used += (size_t)snprintf(buf + used, size - used, " -w %s",
					 sc->name);
	}
	if (ps == &custom_policy)
		used += (size_t)snprintf(buf + used, size - used, " -p '%s'",
					 ps->words);
	else
		used += (size_t)snprintf(buf + used, size - used, " -p %s",
					 ps->name);
	used += (size_t)snprintf(buf + used, size - used, " -b %s",
				 tlb_bug_names[bug]);
	if (sim_alloc_fail_at)
		used += (size_t)snprintf(buf + used, size - used, " -f %llu",
					 (unsigned long long)sim_alloc_fail_at);
	if (sc->random)
		snprintf(buf + used, size - used, " -s %#llx -v",
			 (unsigned long long)out->seed);
	else
		snprintf(buf + used, size - used, " -c '%s' -v", out->choices);
}

/*
 * Prints the failure, how to repeat it, and the end of its trace, from a
 * replay with the protocol's own trace (tlb_trace) on.
 */
static void report_failure(const struct sim_scenario *sc,
			   const struct policy_set *ps, enum tlb_bug bug,
			   const struct sim_outcome *out)
{
	static uint8_t prefix[SIM_CHOICES_MAX];
	size_t len = search_parse_choices(out->choices, prefix);
	char line[REPRODUCE_LINE_SIZE];

	printf("# %s under %s: %s\n", sc->name, ps->name, out->failure);
	reproduce_line(sc, ps, bug, out, line, sizeof(line));
	printf("# reproduce: %s\n", line);
	search_run(sc, ps->words, bug, prefix, len,
		   sc->random ? &out->seed : NULL, true);
	if (!sim_last.failed || strcmp(sim_last.failure, out->failure))
		printf("# the replay did not fail the same way: the run is "
		       "not deterministic (%s)\n",
		       sim_last.failed ? sim_last.failure : "it passed");
	printf("# policy: %s\n",
	       tlb_policy_format(&tlb_policy, line, sizeof(line)));
	printf("# workload:\n");
	workload_print(&sim_workload, "#   ");
	printf("# last events:\n");
	sim_trace_print("#   ", TRACE_SHOWN);
}

static void print_counts(const struct sim_counts *before)
{
	printf("# %llu accesses checked (%llu stale within a running flush, "
	       "%llu faults, %llu spurious faults retried), %llu flushes, "
	       "%llu frees, %llu IPIs, %llu INVLPGBs, %llu mms freed\n",
	       (unsigned long long)(sim_counts.accesses - before->accesses),
	       (unsigned long long)(sim_counts.stale_ok - before->stale_ok),
	       (unsigned long long)(sim_counts.faults - before->faults),
	       (unsigned long long)(sim_counts.spurious - before->spurious),
	       (unsigned long long)(sim_counts.flushes - before->flushes),
	       (unsigned long long)(sim_counts.frees - before->frees),
	       (unsigned long long)(sim_counts.ipis - before->ipis),
	       (unsigned long long)(sim_counts.broadcasts - before->broadcasts),
	       (unsigned long long)(sim_counts.mm_deaths - before->mm_deaths));
}

/* Searches sc under ps, reports what it found; true if nothing. */
static bool search_and_report(const struct sim_scenario *sc,
			      const struct policy_set *ps, enum tlb_bug bug)
{
	struct sim_counts before = sim_counts;
	struct sim_outcome out;

	search(sc, ps->words, bug, sc->max_runs ? sc->max_runs : DFS_MAX_RUNS,
	       &out);
	if (sc->random)
		printf("# %llu random runs (seeds %#llx..)\n",
		       (unsigned long long)out.runs,
		       (unsigned long long)sim_random_base_seed());
	else
		printf("# %llu runs, %s %u preemptions (every schedule "
		       "with %u done)\n",
		       (unsigned long long)out.runs,
		       out.failed     ? "the last one failed; bound"
		       : out.complete ? "every schedule with at most"
				      : "stopped at the run limit; bound",
		       sc->preemptions, out.bound_done);
	print_counts(&before);
	if (out.failed)
		report_failure(sc, ps, bug, &out);
	return !out.failed;
}

/*
 * Searches sc under ps once with each allocation failing in turn, until
 * no run of a search makes as many allocations as the one to fail.
 */
static bool search_failing_each(const struct sim_scenario *sc,
				const struct policy_set *ps)
{
	bool ok = true;
	uint64_t k;

	for (k = 1; ok; k++) {
		sim_alloc_fail_at = k;
		sim_alloc_most = 0;
		printf("# allocation %llu fails:\n", (unsigned long long)k);
		ok = search_and_report(sc, ps, TLB_BUG_NONE);
		if (sim_alloc_most < k)
			break;
	}
	sim_alloc_fail_at = 0;
	if (ok)
		printf("# allocations 1..%llu failed in turn; the last was "
		       "never reached\n",
		       (unsigned long long)k);
	return ok;
}

static const struct sim_scenario *find_scenario(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(scenarios); i++) {
		if (!strcmp(scenarios[i].name, name))
			return &scenarios[i];
	}
	fprintf(stderr, "tlb_sim: no scenario named %s\n", name);
	exit(2);
}

/* A policy set by name, or option words ("pcid=off lazy=ipi"). */
static const struct policy_set *find_policy(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(policy_sets); i++) {
		if (!strcmp(policy_sets[i].name, name))
			return &policy_sets[i];
	}
	if (!strchr(name, '=')) {
		fprintf(stderr, "tlb_sim: no policy set named %s\n", name);
		exit(2);
	}
	custom_policy.name = custom_policy.words = name;
	return &custom_policy;
}

static enum tlb_bug find_bug(const char *name)
{
	for (unsigned b = 0; b < TLB_BUG_COUNT; b++) {
		if (!strcmp(tlb_bug_names[b], name))
			return (enum tlb_bug)b;
	}
	fprintf(stderr, "tlb_sim: no bug named %s\n", name);
	exit(2);
}

/* Searches sc under ps for the bug; reports and says so if caught. */
static bool try_bug(enum tlb_bug bug, const struct sim_scenario *sc,
		    const struct policy_set *ps, uint64_t *runs)
{
	struct sim_outcome out;

	search(sc, ps->words, bug, BUG_MAX_RUNS - *runs, &out);
	*runs += out.runs;
	if (!out.failed)
		return false;
	printf("# caught after %llu runs\n", (unsigned long long)*runs);
	report_failure(sc, ps, bug, &out);
	return true;
}

/* Some search must catch the bug: the likely one first, then any. */
static bool case_bug(enum tlb_bug bug)
{
	uint64_t runs = 0;

	for (size_t h = 0; h < ARRAY_SIZE(bug_hints); h++) {
		if (bug_hints[h].bug != bug)
			continue;
		printf("# first place to look: %s under %s (%s)\n",
		       bug_hints[h].scenario, bug_hints[h].policy,
		       bug_hints[h].why);
		if (try_bug(bug, find_scenario(bug_hints[h].scenario),
			    find_policy(bug_hints[h].policy), &runs))
			return true;
	}
	for (size_t s = 0; s < ARRAY_SIZE(scenarios); s++) {
		for (size_t p = 0; p < ARRAY_SIZE(policy_sets); p++) {
			if (runs >= BUG_MAX_RUNS)
				break;
			if (try_bug(bug, &scenarios[s], &policy_sets[p], &runs))
				return true;
		}
	}
	printf("# not caught in %llu runs\n", (unsigned long long)runs);
	return false;
}

/*
 * The values of each option that change what the protocol does at this
 * scale (6 slots behave as 2 with few address spaces; any ceiling of 1 or
 * more flushes these small ranges page by page), for the product of all.
 */
static const char *const option_values[][5] = {
	{"pcid=off", "invpcid=off asid_slots=1", "invpcid=off asid_slots=2",
	 "asid_slots=1", "asid_slots=2"},
	{"lazy=skip", "lazy=ipi", "lazy=dynamic lazy_backoff=1", "lazy=off"},
	{"flush_ceiling=0", "flush_ceiling=33"},
	{"flush_info=percpu", "flush_info=stack"},
	{"flush_concurrent=on", "flush_concurrent=off"},
	{"kernel_mm_mask=skip", "kernel_mm_mask=touch"},
	{"lazy_mm=shootdown", "lazy_mm=refcount"},
};

/* Random runs per combination, each with its own seed and workload. */
#define COMBINATION_SEEDS     8U
#define COMBINATION_SEED_BASE (sim_random_base_seed() + 0x100000)

static unsigned values_of(size_t option)
{
	unsigned n = 0;

	while (n < ARRAY_SIZE(option_values[0]) && option_values[option][n])
		n++;
	return n;
}

/* Every combination of option values, under random runs. */
static bool case_combinations(void)
{
	static char words[REPRODUCE_LINE_SIZE];
	const struct sim_scenario *sc = find_scenario("random");
	struct sim_counts before = sim_counts;
	unsigned combinations = 1;

	for (size_t o = 0; o < ARRAY_SIZE(option_values); o++)
		combinations *= values_of(o);
	for (unsigned c = 0; c < combinations; c++) {
		size_t used = 0;
		unsigned rest = c;

		for (size_t o = 0; o < ARRAY_SIZE(option_values); o++) {
			used += (size_t)snprintf(
				words + used, sizeof(words) - used, "%s%s",
				o ? " " : "",
				option_values[o][rest % values_of(o)]);
			rest /= values_of(o);
		}
		for (unsigned k = 0; k < COMBINATION_SEEDS; k++) {
			uint64_t seed = COMBINATION_SEED_BASE +
					(uint64_t)c * COMBINATION_SEEDS + k;
			struct sim_outcome out = {.runs = 1, .seed = seed};

			search_run(sc, words, TLB_BUG_NONE, NULL, 0, &seed,
				   false);
			if (!sim_last.failed)
				continue;
			out.failed = true;
			snprintf(out.failure, sizeof(out.failure), "%s",
				 sim_last.failure);
			report_failure(sc, find_policy(words), TLB_BUG_NONE,
				       &out);
			return false;
		}
	}
	printf("# %u combinations, %u random runs each (seeds %#llx..)\n",
	       combinations, COMBINATION_SEEDS,
	       (unsigned long long)COMBINATION_SEED_BASE);
	print_counts(&before);
	return true;
}

/* The MMU's invalidations against SDM 4.10.4.1, on one CPU. */
static void selftest_body(unsigned cpu)
{
	tlb_init_cpu(kern_kernel_root());
	mmu_selftest(kern_mm_root(0), kern_mm_root(1), sim_page_va(0),
		     sim_kpage_va(0));
	for (unsigned phase = 0; phase < SIM_PHASES; phase++)
		sim_barrier();
	(void)cpu;
}

static bool case_mmu(void)
{
	static struct sim_run run;
	char err[128];

	if (!policy_parse("", &tlb_policy, err, sizeof(err)))
		return false;
	run = (struct sim_run){.cpus = 1, .mode = SIM_DFS};
	kern_reset(1, 2);
	sim_run(&run, selftest_body);
	if (run.failed) {
		printf("# %s\n", run.failure);
		sim_trace_print("#   ", TRACE_SHOWN);
	} else {
		printf("# every invalidation drops what the SDM says, no "
		       "more\n");
	}
	return !run.failed;
}

/* --- INVLPGB and TLBSYNC ------------------------------------------------------ */

/*
 * tlb_policy_settle's rule, INVLPGB only when asked, in CPUID and with
 * PCID in force, and the boot report's words for each outcome.
 */
static const struct {
	bool pcid, invlpgb; /* asked for */
	bool cpu_has, used;
	const char *census;
} invlpgb_settles[] = {
	{true, true, true, true, "used (2 pages per INVLPGB)"},
	{true, true, false, false, "absent"},
	{true, false, true, false, "present, off (invlpgb=off)"},
	{false, true, true, false, "present, off (PCID off)"},
	{false, false, false, false, "absent"},
};

static bool case_invlpgb_settles(void)
{
	struct cpu_features cpu = boot_cpu;
	struct tlb_policy p;
	char err[128];
	bool ok = true;

	if (!policy_parse("", &p, err, sizeof(err)))
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(invlpgb_settles); i++) {
		char census[48];

		cpu.invlpgb = invlpgb_settles[i].cpu_has;
		cpu.invlpgb_max_pages = cpu.invlpgb ? 2 : 0;
		p.pcid = invlpgb_settles[i].pcid;
		p.invlpgb = invlpgb_settles[i].invlpgb;
		p = tlb_policy_settle(&p, &cpu);
		tlb_invlpgb_census(&p, &cpu, census, sizeof(census));
		if (p.invlpgb == invlpgb_settles[i].used &&
		    !strcmp(census, invlpgb_settles[i].census))
			continue;
		printf("# row %zu: invlpgb=%d, \"%s\"; want %d, \"%s\"\n", i,
		       p.invlpgb, census, invlpgb_settles[i].used,
		       invlpgb_settles[i].census);
		ok = false;
	}
	if (ok)
		printf("# INVLPGB in force only when asked, in CPUID and with "
		       "PCID; the census says why not\n");
	return ok;
}

static void broadcast_selftest_body(unsigned cpu)
{
	tlb_init_cpu(kern_kernel_root());
	if (cpu == 0)
		mmu_broadcast_selftest(kern_mm_root(0), kern_mm_root(1),
				       sim_page_va(0), sim_kpage_va(0));
	for (unsigned phase = 0; phase < SIM_PHASES; phase++)
		sim_barrier();
}

/* Runs body on cpus CPUs under policy, one schedule (the default). */
static bool run_once(const char *policy, unsigned cpus, sim_body body,
		     struct sim_run *run)
{
	char err[128];

	if (!policy_parse(policy, &tlb_policy, err, sizeof(err))) {
		printf("# policy '%s': %s\n", policy, err);
		return false;
	}
	*run = (struct sim_run){.cpus = cpus, .mode = SIM_DFS};
	kern_reset(cpus, 2);
	sim_run(run, body);
	return true;
}

static bool case_broadcasts(void)
{
	static struct sim_run run;

	if (!run_once("", 2, broadcast_selftest_body, &run))
		return false;
	if (run.failed) {
		printf("# %s\n", run.failure);
		sim_trace_print("#   ", TRACE_SHOWN);
	} else {
		printf("# INVLPGB drops what it names when it completes, on "
		       "every CPU; TLBSYNC completes its own CPU's\n");
	}
	return !run.failed;
}

/* Ways to misuse INVLPGB, each of which must fail the run as said. */
enum misuse_setup {
	MISUSE_PINNED,	     /* issued pinned, then TLBSYNC, unpin */
	MISUSE_UNPINNED,     /* issued neither pinned nor interrupts off */
	MISUSE_PCIDE_OFF,    /* issued pinned with CR4.PCIDE clear */
	MISUSE_UNPIN_EARLY,  /* unpinned before the TLBSYNC */
	MISUSE_IRQ_ON_EARLY, /* interrupts on (not pinned) before it */
	MISUSE_SYNC_ONLY,    /* a TLBSYNC with nothing outstanding */
};

static const struct {
	const char *policy;
	enum misuse_setup setup;
	struct tlb_hw_broadcast b;
	const char *failure; /* NULL: the run must pass */
} misuses[] = {
	{"",
	 MISUSE_PINNED,
	 {.va = SIM_USER_BASE, .pages = 2, .has_va = true},
	 NULL},
	{"", MISUSE_SYNC_ONLY, {0}, NULL},
	{"invlpgb=off", MISUSE_PINNED, {0}, "with invlpgb off (#UD"},
	{"",
	 MISUSE_PINNED,
	 {.va = SIM_USER_BASE, .pages = 3, .has_va = true},
	 "of 3 pages: 1 to 2 allowed"},
	{"",
	 MISUSE_PINNED,
	 {.va = SIM_USER_BASE, .has_va = true},
	 "of 0 pages: 1 to 2 allowed"},
	{"",
	 MISUSE_PINNED,
	 {.va = SIM_USER_BASE + 8, .pages = 1, .has_va = true},
	 "not page-aligned"},
	{"",
	 MISUSE_PINNED,
	 {.has_pcid = true, .pcid = 0x1000},
	 "PCIDs have 12 bits"},
	{"",
	 MISUSE_PCIDE_OFF,
	 {.has_pcid = true, .pcid = 1},
	 "names PCID 1 with CR4.PCIDE off"},
	{"", MISUSE_UNPINNED, {0}, "neither pinned nor with interrupts off"},
	{"",
	 MISUSE_UNPIN_EARLY,
	 {0},
	 "unpins with 1 INVLPGB outstanding: the thread may move"},
	{"",
	 MISUSE_IRQ_ON_EARLY,
	 {0},
	 "enables interrupts with 1 INVLPGB outstanding"},
};

static size_t misuse_now;

static void misuse_body(unsigned cpu)
{
	enum misuse_setup setup = misuses[misuse_now].setup;
	const struct tlb_hw_broadcast *b = &misuses[misuse_now].b;

	tlb_init_cpu(kern_kernel_root());
	if (setup == MISUSE_PCIDE_OFF)
		tlb_hw_set_pcide(false);
	if (setup == MISUSE_IRQ_ON_EARLY)
		sim_irq_off();
	else if (setup != MISUSE_UNPINNED)
		tlb_hw_pin();
	if (setup != MISUSE_SYNC_ONLY)
		tlb_hw_invlpgb(b);
	if (setup == MISUSE_IRQ_ON_EARLY)
		sim_irq_on();
	if (setup == MISUSE_UNPIN_EARLY)
		tlb_hw_unpin();
	tlb_hw_tlbsync();
	if (setup != MISUSE_UNPINNED && setup != MISUSE_UNPIN_EARLY &&
	    setup != MISUSE_IRQ_ON_EARLY)
		tlb_hw_unpin();
	for (unsigned phase = 0; phase < SIM_PHASES; phase++)
		sim_barrier();
	(void)cpu;
}

static bool case_broadcast_misuse(void)
{
	static struct sim_run run;
	bool ok = true;

	for (misuse_now = 0; misuse_now < ARRAY_SIZE(misuses); misuse_now++) {
		const char *want = misuses[misuse_now].failure;

		if (!run_once(misuses[misuse_now].policy, 1, misuse_body, &run))
			return false;
		if (want ? run.failed && strstr(run.failure, want)
			 : !run.failed)
			continue;
		printf("# misuse %zu: wanted %s%s%s, got %s\n", misuse_now,
		       want ? "a failure with '" : "no failure",
		       want ? want : "", want ? "'" : "",
		       run.failed ? run.failure : "no failure");
		ok = false;
	}
	if (ok)
		printf("# %zu requests: each illegal one fails the run, "
		       "saying why\n",
		       ARRAY_SIZE(misuses));
	return ok;
}

/*
 * CPU 0 issues a request and reaches its TLBSYNC a few scheduling points
 * later; finding it completed before then fails the run on purpose, so
 * that the search reports the schedule that completed it early (a BCAST
 * move) and its choices.
 */
#define EARLY_POINTS 3

static void early_completion_body(unsigned cpu)
{
	const struct tlb_hw_broadcast all = {.include_global = true};

	tlb_init_cpu(kern_kernel_root());
	sim_barrier();
	if (cpu == 0) {
		tlb_hw_pin();
		tlb_hw_invlpgb(&all);
		for (unsigned i = 0; i < EARLY_POINTS; i++)
			sim_point();
		if (!mmu_broadcasts(cpu))
			sim_fail("the INVLPGB completed before its TLBSYNC");
		tlb_hw_tlbsync();
		tlb_hw_unpin();
	}
	for (unsigned phase = 1; phase < SIM_PHASES; phase++)
		sim_barrier();
}

/* Replays run's choices (a failing search's): the same failure, step. */
static bool replays(const char *what, const struct sim_run *first,
		    struct sim_run *again)
{
	if (again->failed && !strcmp(again->failure, first->failure) &&
	    again->steps == first->steps)
		return true;
	printf("# the %s replay differs: %s after %llu steps, not %s after "
	       "%llu\n",
	       what, again->failed ? again->failure : "no failure",
	       (unsigned long long)again->steps, first->failure,
	       (unsigned long long)first->steps);
	return false;
}

static bool case_broadcast_replay(void)
{
	static uint8_t prefix[SIM_CHOICES_MAX];
	static struct sim_run first, again;
	struct sim_outcome out;
	uint64_t seed = sim_random_base_seed();
	char err[128];

	if (!policy_parse("", &tlb_policy, err, sizeof(err)))
		return false;
	kern_reset(2, 2);
	search_body(2, early_completion_body, 1, DFS_MAX_RUNS, &out);
	if (!out.failed || out.runs < 2) {
		printf("# the search %s\n",
		       out.failed ? "completed the INVLPGB early by default"
				  : "never completed the INVLPGB early");
		return false;
	}
	first = sim_last;
	again = (struct sim_run){
		.cpus = 2,
		.mode = SIM_DFS,
		.prefix = prefix,
		.prefix_len = search_parse_choices(out.choices, prefix)};
	kern_reset(2, 2);
	sim_run(&again, early_completion_body);
	if (!replays("choices", &first, &again))
		return false;
	do {
		first = (struct sim_run){
			.cpus = 2, .mode = SIM_RANDOM, .seed = ++seed};
		kern_reset(2, 2);
		sim_run(&first, early_completion_body);
	} while (!first.failed && seed < sim_random_base_seed() + 1000);
	if (!first.failed) {
		printf("# no random run completed the INVLPGB early\n");
		return false;
	}
	again = (struct sim_run){.cpus = 2, .mode = SIM_RANDOM, .seed = seed};
	kern_reset(2, 2);
	sim_run(&again, early_completion_body);
	if (!replays("seed", &first, &again))
		return false;
	printf("# completed early after %llu schedules (choices '%s'), and "
	       "with seed %#llx; both replay exactly\n",
	       (unsigned long long)out.runs, out.choices,
	       (unsigned long long)seed);
	return true;
}

/* --- Cross-CPU calls alone ----------------------------------------------------- */

/*
 * smp/call_queue.c with no TLB protocol around it: two CPUs call each
 * other with interrupts off, so neither can take the other's IPI and each
 * must serve its own queue while it waits (for a busy slot: the first call
 * does not wait, so the second finds its slot still in use; then for the
 * target). Every schedule with up to CALL_PREEMPTIONS preemptions.
 */
#define CALL_PREEMPTIONS 2U
#define CALLS_EACH	 2

static unsigned calls_ran[SIM_CPUS_MAX];

static void count_call(void *arg)
{
	(void)arg;
	calls_ran[sim_cpu()]++;
}

static void crossing_calls(unsigned cpu)
{
	struct cpumask other;

	if (cpu == 0)
		memset(calls_ran, 0, sizeof(calls_ran));
	sim_barrier();
	cpumask_clear_all(&other);
	cpumask_set(&other, 1 - cpu);
	sim_irq_off();
	smp_call_function_many(&other, count_call, NULL, SMP_CALL_NO_WAIT);
	smp_call_function_many(&other, count_call, NULL, SMP_CALL_WAIT);
	sim_irq_on();
	sim_barrier();
	sim_barrier();
	if (cpu == 0 &&
	    (calls_ran[0] != CALLS_EACH || calls_ran[1] != CALLS_EACH))
		sim_fail("calls run: cpu0 %u, cpu1 %u, not %u each",
			 calls_ran[0], calls_ran[1], CALLS_EACH);
	sim_barrier();
}

static bool case_calls(void)
{
	struct sim_outcome out;

	search_body(2, crossing_calls, CALL_PREEMPTIONS, DFS_MAX_RUNS, &out);
	printf("# %llu runs, %s %u preemptions\n", (unsigned long long)out.runs,
	       out.failed     ? "the last one failed; bound"
	       : out.complete ? "every schedule with at most"
			      : "stopped at the run limit; bound",
	       CALL_PREEMPTIONS);
	if (out.failed) {
		printf("# calls crossing with interrupts off: %s\n",
		       out.failure);
		printf("# choices: '%s'\n", out.choices);
		sim_trace_print("#   ", TRACE_SHOWN);
	}
	return !out.failed;
}

/*
 * The upgrade scenario under the defaults must pass and must have made
 * the kernel's fault rule (mm/fault.c) answer both ways: retried spurious
 * faults and refused real ones. A search that never reached either would
 * pass whatever the rule said.
 */
static bool case_faults(void)
{
	struct sim_counts before = sim_counts;
	bool ok = search_and_report(find_scenario("upgrade"),
				    find_policy("defaults"), TLB_BUG_NONE);
	uint64_t retried = sim_counts.spurious - before.spurious;
	uint64_t refused = sim_counts.faults - before.faults;

	if (!retried || !refused)
		printf("# the search made %llu spurious faults and %llu real "
		       "ones: it must make both\n",
		       (unsigned long long)retried,
		       (unsigned long long)refused);
	return ok && retried && refused;
}

/*
 * -v's explanations (tlb_sim_explain.c), on the default schedule of
 * "shootdown nopcid-off" with bug (no_wait), which fails: the flusher
 * reads cpu1.loaded_mm while cpu1's store of mm1 is still in its buffer
 * (the window a flusher that skips SWITCHING CPUs falls into), the
 * request line says it sent cpu1 the request for the SWITCHING it read,
 * and the handler says what it compared. With them or without, the run
 * takes the same steps to the same failure.
 */
static bool case_explain(enum tlb_bug bug)
{
	static const char *const wanted[] = {
		"read cpu1.loaded_mm = SWITCHING (memory); cpu1's store "
		"buffer holds mm1, not yet visible",
		"  request: cpu_mask {0,1} as read; cpu0 this CPU, flushes "
		"here; cpu1 sent: loaded_mm SWITCHING as read (cpu1's store "
		"buffer still held mm1)",
		"  flush-pages: slot gen 0 + 1 = request gen 1 = "
		"mm1.tlb_gen, 1 page <= flush_ceiling 33",
	};
	const struct sim_scenario *sc = find_scenario("shootdown");
	const char *words = find_policy("nopcid-off")->words;
	char failure[sizeof(sim_last.failure)];
	uint64_t steps;
	bool ok = true;

	search_run(sc, words, bug, NULL, 0, NULL, true);
	steps = sim_last.steps;
	snprintf(failure, sizeof(failure), "%s",
		 sim_last.failed ? sim_last.failure : "no failure");
	sim_explain = true;
	search_run(sc, words, bug, NULL, 0, NULL, true);
	sim_explain = false;
	if (!sim_last.failed || sim_last.steps != steps ||
	    strcmp(sim_last.failure, failure)) {
		printf("# without -v: %s after %llu steps; with it: %s after "
		       "%llu\n",
		       failure, (unsigned long long)steps,
		       sim_last.failed ? sim_last.failure : "no failure",
		       (unsigned long long)sim_last.steps);
		ok = false;
	}
	for (size_t i = 0; i < ARRAY_SIZE(wanted); i++) {
		if (!sim_trace_contains(wanted[i])) {
			printf("# the trace has no line \"%s\"\n", wanted[i]);
			ok = false;
		}
	}
	if (!ok)
		sim_trace_print("#   ", TRACE_SHOWN);
	return ok;
}

/* --- Main ------------------------------------------------------------------------- */

enum case_kind {
	CASE_SEARCH,	   /* a scenario under a policy set */
	CASE_COMBINATIONS, /* every combination of option values */
	CASE_CALLS,	   /* cross-CPU calls alone (crossing_calls) */
	CASE_BUG,	   /* a tlb_bug= value must be caught */
	CASE_MMU,	   /* the MMU's invalidations, one by one */
	CASE_SETTLES,	   /* when INVLPGB is used, and the census */
	CASE_BROADCASTS,   /* INVLPGB's and TLBSYNC's effects */
	CASE_MISUSE,	   /* illegal INVLPGBs fail the run */
	CASE_REPLAY,	   /* early completions replay exactly */
	CASE_FAULTS,	   /* the fault rule both retries and refuses */
	CASE_EXPLAIN,	   /* -v's explanations, on a failing run */
};

#define CASES_MAX                                                  \
	(5 + ARRAY_SIZE(scenarios) * ARRAY_SIZE(policy_sets) + 4 + \
	 TLB_BUG_COUNT)

struct test_case {
	char name[64];
	enum case_kind kind;
	const struct sim_scenario *sc;
	const struct policy_set *ps;
	enum tlb_bug bug;
};

/* Whether name is one of the words of list (a scenario's policy sets). */
static bool policy_listed(const char *list, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = list; *p; p += strcspn(p, " ")) {
		p += strspn(p, " ");
		if (!strncmp(p, name, len) && (p[len] == '\0' || p[len] == ' '))
			return true;
	}
	return false;
}

static size_t list_cases(struct test_case *cases)
{
	size_t n = 0;

	cases[n] = (struct test_case){.kind = CASE_MMU};
	snprintf(cases[n++].name, sizeof(cases[0].name), "mmu invalidations");
	cases[n] = (struct test_case){.kind = CASE_SETTLES};
	snprintf(cases[n++].name, sizeof(cases[0].name),
		 "policy settles invlpgb");
	cases[n] = (struct test_case){.kind = CASE_BROADCASTS};
	snprintf(cases[n++].name, sizeof(cases[0].name), "mmu broadcasts");
	cases[n] = (struct test_case){.kind = CASE_MISUSE};
	snprintf(cases[n++].name, sizeof(cases[0].name),
		 "mmu broadcast misuse caught");
	cases[n] = (struct test_case){.kind = CASE_REPLAY};
	snprintf(cases[n++].name, sizeof(cases[0].name),
		 "mmu broadcast completion replays");
	for (size_t s = 0; s < ARRAY_SIZE(scenarios); s++) {
		for (size_t p = 0; p < ARRAY_SIZE(policy_sets); p++) {
			struct test_case *t;

			if (scenarios[s].policy
				    ? !policy_listed(scenarios[s].policy,
						     policy_sets[p].name)
				    : policy_listed(named_only_policies,
						    policy_sets[p].name))
				continue;
			t = &cases[n++];

			snprintf(t->name, sizeof(t->name), "%s %s",
				 scenarios[s].name, policy_sets[p].name);
			t->kind = CASE_SEARCH;
			t->sc = &scenarios[s];
			t->ps = &policy_sets[p];
			t->bug = TLB_BUG_NONE;
		}
	}
	cases[n] = (struct test_case){.kind = CASE_COMBINATIONS};
	snprintf(cases[n++].name, sizeof(cases[0].name),
		 "random every policy combination");
	cases[n] = (struct test_case){.kind = CASE_CALLS};
	snprintf(cases[n++].name, sizeof(cases[0].name),
		 "calls crossing with interrupts off");
	cases[n] = (struct test_case){.kind = CASE_FAULTS};
	snprintf(cases[n++].name, sizeof(cases[0].name),
		 "faults retried and refused");
	cases[n] = (struct test_case){.kind = CASE_EXPLAIN,
				      .bug = TLB_BUG_NO_WAIT};
	snprintf(cases[n++].name, sizeof(cases[0].name),
		 "trace shows stores not yet visible");
	for (unsigned b = TLB_BUG_NONE + 1; b < TLB_BUG_COUNT; b++) {
		struct test_case *t = &cases[n++];

		*t = (struct test_case){.kind = CASE_BUG,
					.bug = (enum tlb_bug)b};
		snprintf(t->name, sizeof(t->name), "bug %s caught",
			 tlb_bug_names[b]);
	}
	return n;
}

/*
 * A lab tree (docs/labs.md) leaves some bug hooks to the student, whose
 * code need not have them: tools/test/host.py names those bugs here, and their
 * cases are skipped rather than failed.
 */
#define BUG_SKIP_REASON                                                      \
	"this lab tree's own code carries the switch (.lab); the reference " \
	"tree runs it"

static bool bug_skipped(enum tlb_bug bug)
{
	const char *list = getenv("TLB_SIM_SKIP_BUGS");
	size_t len = strlen(tlb_bug_names[bug]);

	for (const char *p = list; p && *p; p += strcspn(p, " ,")) {
		p += strspn(p, " ,");
		if (!strncmp(p, tlb_bug_names[bug], len) &&
		    (p[len] == '\0' || p[len] == ' ' || p[len] == ','))
			return true;
	}
	return false;
}

static bool wanted(const char *name, int argc, char **argv)
{
	bool any = optind == argc;

	for (int a = optind; a < argc; a++)
		any |= !strcmp(argv[a], name);
	return any;
}

/* Every case (or those named), as KTAP. */
static int run_cases(int argc, char **argv, bool list)
{
	static struct test_case cases[CASES_MAX];
	size_t n = list_cases(cases), selected = 0, number = 0, failed = 0;

	for (int a = optind; a < argc; a++) {
		bool known = false;

		for (size_t i = 0; i < n; i++)
			known |= !strcmp(argv[a], cases[i].name);
		if (!known) {
			fprintf(stderr, "tlb_sim: no case named '%s' (-l)\n",
				argv[a]);
			return 2;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (!wanted(cases[i].name, argc, argv))
			continue;
		selected++;
		if (list)
			printf("%s\n", cases[i].name);
	}
	if (list)
		return 0;
	printf("KTAP version 1\n1..%zu\n", selected);
	for (size_t i = 0; i < n; i++) {
		const struct test_case *t = &cases[i];
		bool ok;

		if (!wanted(t->name, argc, argv))
			continue;
		if (t->bug != TLB_BUG_NONE && bug_skipped(t->bug)) {
			printf("ok %zu %s # SKIP %s\n", ++number, t->name,
			       BUG_SKIP_REASON);
			continue;
		}
		switch (t->kind) {
		case CASE_SEARCH:
			printf("# %s: %s\n", t->sc->name, t->sc->why);
			ok = t->sc->fail_each
				     ? search_failing_each(t->sc, t->ps)
				     : search_and_report(t->sc, t->ps,
							 TLB_BUG_NONE);
			break;
		case CASE_COMBINATIONS:
			ok = case_combinations();
			break;
		case CASE_MMU:
			ok = case_mmu();
			break;
		case CASE_SETTLES:
			ok = case_invlpgb_settles();
			break;
		case CASE_BROADCASTS:
			ok = case_broadcasts();
			break;
		case CASE_MISUSE:
			ok = case_broadcast_misuse();
			break;
		case CASE_REPLAY:
			ok = case_broadcast_replay();
			break;
		case CASE_CALLS:
			ok = case_calls();
			break;
		case CASE_FAULTS:
			ok = case_faults();
			break;
		case CASE_EXPLAIN:
			ok = case_explain(t->bug);
			break;
		default:
			ok = case_bug(t->bug);
			break;
		}
		printf("%sok %zu %s\n", ok ? "" : "not ", ++number, t->name);
		failed += !ok;
	}
	printf("# %llu executions, %llu accesses checked, %llu spurious "
	       "faults retried\n",
	       (unsigned long long)sim_counts.executions,
	       (unsigned long long)sim_counts.accesses,
	       (unsigned long long)sim_counts.spurious);
	printf("# %zu passed, %zu failed\n", selected - failed, failed);
	return failed ? 1 : 0;
}

/* -c or -s: one run, its trace, and what it found. */
static int one_run(const struct sim_scenario *sc, const struct policy_set *ps,
		   enum tlb_bug bug, const char *choices, const char *seed)
{
	static uint8_t prefix[SIM_CHOICES_MAX];
	size_t len = search_parse_choices(choices, prefix);
	uint64_t value = seed ? strtoull(seed, NULL, 0) : 0;
	char words[REPRODUCE_LINE_SIZE];

	if (sc->random && !seed) {
		fprintf(stderr, "tlb_sim: the random scenario needs -s\n");
		return 2;
	}
	search_run(sc, ps->words, bug, prefix, len, seed ? &value : NULL, true);
	printf("# policy: %s\n",
	       tlb_policy_format(&tlb_policy, words, sizeof(words)));
	workload_print(&sim_workload, "# ");
	if (!sim_verbose)
		sim_trace_print("# ", SIM_TRACE_LINES);
	printf("%s: %llu scheduling points, %zu choices\n",
	       sim_last.failed ? sim_last.failure : "no violation",
	       (unsigned long long)sim_last.steps, sim_last.nchoices);
	return sim_last.failed;
}

int main(int argc, char **argv)
{
	const char *scenario = NULL, *policy = NULL, *bug = NULL;
	const char *choices = NULL, *seed = NULL;
	const struct sim_scenario *sc;
	unsigned cpus = 0;
	bool list = false;
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	program = argv[0];
	while ((opt = getopt(argc, argv, "lvw:W:p:b:c:s:P:f:")) != -1) {
		switch (opt) {
		case 'l':
			list = true;
			break;
		case 'v':
			sim_verbose = true;
			sim_explain = true;
			break;
		case 'w':
			scenario = optarg;
			break;
		case 'W':
			if (cpus == SIM_CPUS_MAX) {
				fprintf(stderr, "tlb_sim: at most %d CPUs\n",
					SIM_CPUS_MAX);
				return 2;
			}
			custom.cpu[cpus++] = optarg;
			break;
		case 'p':
			policy = optarg;
			break;
		case 'b':
			bug = optarg;
			break;
		case 'c':
			choices = optarg;
			break;
		case 's':
			seed = optarg;
			break;
		case 'P':
			custom.preemptions = (unsigned)atoi(optarg);
			break;
		case 'f':
			sim_alloc_fail_at = strtoull(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: see tests/host/test_tlb_sim.c "
					"or docs/tlb-simulator.md\n");
			return 2;
		}
	}
	if (!scenario && !cpus)
		return run_cases(argc, argv, list);
	if (!policy || (scenario && cpus)) {
		fprintf(stderr, "tlb_sim: -p with one of -w or -W\n");
		return 2;
	}
	sc = cpus ? &custom : find_scenario(scenario);
	if (choices || seed)
		return one_run(sc, find_policy(policy),
			       bug ? find_bug(bug) : TLB_BUG_NONE, choices,
			       seed);
	if (sc->fail_each && !sim_alloc_fail_at && !bug)
		return !search_failing_each(sc, find_policy(policy));
	return !search_and_report(sc, find_policy(policy),
				  bug ? find_bug(bug) : TLB_BUG_NONE);
}
