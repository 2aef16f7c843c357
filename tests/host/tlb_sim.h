/* SPDX-License-Identifier: MIT */
/*
 * The simulated machine under mm/tlb.c (docs/tlb-simulator.md): the
 * interface between its parts.
 *
 *   tlb_sim_sched.c   CPUs as host threads, one running at a time; the
 *                     scheduler that picks who runs (or whose store
 *                     drains) at each scheduling point; IPIs, interrupts
 *                     and smp/call_hw.h under smp/call_queue.c
 *   tlb_sim_memory.c  x86-TSO store buffers for every smp/shared.h access,
 *                     and the compiler's freedom with relaxed stores
 *   tlb_sim_mmu.c     CR3, CR4.PCIDE, PCID-tagged TLBs and paging-structure
 *                     caches, frames and page tables, the page walker
 *   tlb_sim_kernel.c  the kernel around the protocol: address spaces,
 *                     thread switches, page-table changes and their
 *                     flushes, accesses
 *   tlb_sim_oracle.c  judges every access against the page tables
 *   tlb_sim_workload.c  the workload language, random workloads
 *   tlb_sim_policy.c  policies as kernel command-line words
 *   tlb_sim_trace.c   the trace of the last events
 *   tlb_sim_search.c  runs, replays, exhaustive and random search
 *   test_tlb_sim.c    scenarios, policy sets, bug cases, KTAP
 *
 * Include the kernel headers first (see tests/host/host_test.h).
 */
#ifndef TESTS_HOST_TLB_SIM_H
#define TESTS_HOST_TLB_SIM_H

#include "kernel/types.h"
#include "mm/layout.h"
#include "mm/mm.h"
#include "mm/tlb.h"
#include "mm/tlb_hw.h"

/* --- Sizes ------------------------------------------------------------------- */

#define SIM_CPUS_MAX 8 /* the largest machine the workloads use */
#define SIM_MMS_MAX  6 /* address spaces of one execution */
/*
 * Each address space has SIM_TABLES page tables (one 2 MiB region each)
 * with SIM_SLOTS pages in use: enough to free one table while the other
 * stays, and to unmap ranges both under and over a small flush ceiling.
 */
#define SIM_TABLES 2
#define SIM_SLOTS  4
#define SIM_PAGES  (SIM_TABLES * SIM_SLOTS)
#define SIM_KPAGES 2 /* kernel pages that workloads remap */
/* Where the simulated user pages and kernel pages live. */
#define SIM_USER_BASE	0x400000ULL /* where user programs are linked */
#define SIM_KERNEL_BASE IOREMAP_BASE
/* Frames of one execution: far more than any workload allocates. */
#define SIM_FRAMES_MAX 4096
/*
 * Physical address of frame 1 (frame 0 means "none"): above the first
 * megabyte, so that no frame is at physical address 0.
 */
#define SIM_PHYS_BASE MiB(1)

/* --- Scheduler (tlb_sim_sched.c) ----------------------------------------------- */

enum sim_mode {
	SIM_DFS,    /* follow a recorded prefix of choices, then the default */
	SIM_RANDOM, /* random choices and hardware events from a seed */
};

/*
 * One choice the scheduler made: which of `count` moves it took. Move 0 is
 * letting the running CPU go on when go_on says it could; any other pick
 * there preempts it. Moves from first_drain on make a buffered store
 * visible; picking one instead of move 0 costs a preemption too. The
 * exhaustive search bounds how many a schedule has (sim_choice_costs).
 */
struct sim_choice {
	uint8_t pick, count, first_drain;
	bool go_on;
};

static inline bool sim_choice_costs(const struct sim_choice *c, unsigned pick)
{
	return pick && (c->go_on || pick >= c->first_drain);
}

/* Every shared access is a scheduling point: runs make many choices. */
#define SIM_CHOICES_MAX 16384

/* How one execution is to be scheduled, and what happened. */
struct sim_run {
	unsigned cpus;
	enum sim_mode mode;
	/* SIM_DFS: picks to replay, then move 0 (go on) whenever possible. */
	const uint8_t *prefix;
	size_t prefix_len;
	/* SIM_RANDOM */
	uint64_t seed;
	/* Out: every choice made (SIM_DFS), and the outcome. */
	struct sim_choice choices[SIM_CHOICES_MAX];
	size_t nchoices;
	bool failed;
	char failure[512];
	uint64_t steps;
};

/*
 * The phases of a run, separated by barriers (every CPU done, no IPI
 * queued). Only the workload phase runs CPUs concurrently and makes
 * choices; the others run one CPU at a time, in index order.
 */
enum sim_phase {
	SIM_PHASE_INIT,	 /* tlb_init_cpu, boot CPU first */
	SIM_PHASE_WORK,	 /* the workloads, interleaved */
	SIM_PHASE_SWEEP, /* every CPU touches every live page */
	SIM_PHASE_CHECK, /* references and frames add up */
	SIM_PHASES
};

/* The body each CPU runs; it calls sim_barrier() after each phase. */
typedef void (*sim_body)(unsigned cpu);

/*
 * Runs one execution to its end (the last barrier) or to its first
 * failure.
 */
void sim_run(struct sim_run *run, sim_body body);
/* The end of this CPU's part of the current phase. */
void sim_barrier(void);

/* A scheduling point: other CPUs may run, interrupts may arrive. */
void sim_point(void);
/* Interrupts off / on for this CPU (they nest, like irq_save). */
void sim_irq_off(void);
void sim_irq_on(void);
/* Fails the run if the protocol left this CPU pinned. */
void sim_check_unpinned(const char *where);
/* The CPU this thread simulates. */
unsigned sim_cpu(void);
/* The same, or -1 outside the simulated CPUs. */
int sim_current(void);
/* Scheduling points so far in this run. */
uint64_t sim_steps(void);
/* A random number from the run's seed (SIM_RANDOM), else 0. */
uint64_t sim_random(uint64_t below);
/* The next number of the sequence state (any seed). */
uint64_t sim_splitmix(uint64_t *state);

/* Ends the execution as failed. */
__noreturn void sim_fail(const char *fmt, ...) __printf(1, 2);

/*
 * A scheduling point at a shared-memory access (tlb_sim_memory.c calls it
 * before acting): like sim_point, and it ends a tlb_hw_fence spin.
 */
void sim_access_point(void);

/* --- Memory (tlb_sim_memory.c) ------------------------------------------------ */

/*
 * Per-CPU FIFO store buffers over the host's memory (the top of
 * tlb_sim_memory.c has the rules). Only the CPU holding the baton calls
 * these.
 */
void sim_memory_reset(unsigned cpus);
/* This CPU's host stack, whose buffered stores drain when a call returns. */
void sim_memory_set_stack(unsigned cpu, uintptr_t lo, uintptr_t hi);
/* A serializing instruction or MFENCE on this CPU: its buffer drains. */
void sim_memory_serialize(void);
/* Entries in cpu's buffer; whether entry i may drain now; drain it. */
unsigned sim_memory_buffered(unsigned cpu);
bool sim_memory_drainable(unsigned cpu, unsigned i);
void sim_memory_drain_entry(unsigned cpu, unsigned i);
void sim_memory_drain_all(unsigned cpu);
/* A trace line for entry i of cpu's buffer, about to drain (why: "" ...). */
void sim_memory_trace_drain(unsigned cpu, unsigned i, const char *why);
/* Drains cpu's buffered stores to its own host stack (and all before). */
void sim_memory_drain_stack(unsigned cpu);
/* Changes whenever memory's contents change (spinning CPUs wait for it). */
uint64_t sim_memory_version(void);
/*
 * God's view, for the simulator's own checks and traces: the newest value
 * of [p, p+size) in any store buffer, else in memory. Never a scheduling
 * point. SIM_PEEK(&x) has x's type.
 */
uint64_t sim_memory_peek(const void *p, size_t size);
#define SIM_PEEK(p) \
	((__typeof__(*(p)))(uintptr_t)sim_memory_peek((p), sizeof(*(p))))

/* --- Trace (tlb_sim_trace.c) ------------------------------------------------- */

/*
 * The last SIM_TRACE_LINES events of the run, printed after a failure
 * (and as they happen when sim_verbose is set).
 */
#define SIM_TRACE_LINES 400
void sim_trace(const char *fmt, ...) __printf(1, 2);
void sim_trace_print(const char *prefix, unsigned last);
void sim_trace_reset(void);
extern bool sim_verbose;

/* --- Machine (tlb_sim_mmu.c) --------------------------------------------------- */

/* What a simulated frame holds. */
enum sim_frame_kind {
	FRAME_UNUSED,
	FRAME_PAGE,  /* a user page */
	FRAME_TABLE, /* a page table (last level) */
	FRAME_ROOT,  /* a root: points at SIM_TABLES page tables */
	FRAME_KPAGE, /* a kernel page (global mapping) */
};

struct sim_frame {
	uint8_t kind;
	bool dead;		  /* freed: hardware must never use it again */
	int8_t owner;		  /* address space (index), -1: kernel */
	uint32_t next[SIM_SLOTS]; /* roots: tables; tables: pages (0: none) */
	bool writable[SIM_SLOTS]; /* tables: the write permission per page */
};

/* A translation the hardware produced for an access. */
struct sim_xlate {
	bool present;
	uint32_t frame;
	bool writable;
	bool tlb_hit;	    /* from a TLB entry, not a fresh walk */
	uint32_t via_table; /* the page table the walk read (0: TLB hit) */
};

void mmu_reset(unsigned cpus);
uint32_t mmu_alloc(enum sim_frame_kind kind, int owner);
struct sim_frame *mmu_frame(uint32_t frame);
uint64_t mmu_phys(uint32_t frame);
/* "frame 12 (page of mm2)", for messages. */
const char *mmu_name(uint32_t frame, char *buf, size_t size);
/* Marks a frame freed, after checking that no CPU can still use it. */
void mmu_free(uint32_t frame, const char *why);
/* Translates va on cpu as its hardware would, filling the TLB. */
struct sim_xlate mmu_translate(unsigned cpu, uint64_t va, bool write);
/* This CPU's CR3 root frame and current PCID. */
uint32_t mmu_root(unsigned cpu);
uint16_t mmu_pcid(unsigned cpu);
/* The kernel page table and root (shared by every address space). */
uint32_t mmu_kernel_root(void);
uint32_t mmu_kernel_table(void);
/* Whether a CPU runs user code (so its TLB entries are in use). */
void mmu_set_user_active(unsigned cpu, bool active);
/* SIM_RANDOM: the hardware drops or speculatively fills an entry. */
void mmu_random_event(void);

/* User page index (0 .. SIM_PAGES-1) to address, and back. */
static inline uint64_t sim_page_va(unsigned page)
{
	return SIM_USER_BASE + (uint64_t)(page / SIM_SLOTS) * LARGE_PAGE_SIZE +
	       (uint64_t)(page % SIM_SLOTS) * PAGE_SIZE;
}

static inline uint64_t sim_kpage_va(unsigned kpage)
{
	return SIM_KERNEL_BASE + (uint64_t)kpage * PAGE_SIZE;
}

/* --- Oracle (tlb_sim_oracle.c) ----------------------------------------------- */

/* Counts over a whole exploration (printed per test case). */
struct sim_counts {
	uint64_t executions;
	uint64_t accesses;  /* accesses judged by the oracle */
	uint64_t stale_ok;  /* stale but allowed: the flush was running */
	uint64_t faults;    /* accesses that faulted */
	uint64_t flushes;   /* page-table changes flushed */
	uint64_t frees;	    /* frames freed and checked */
	uint64_t ipis;	    /* IPIs delivered */
	uint64_t mm_deaths; /* address spaces freed and checked */
};

extern struct sim_counts sim_counts;

void oracle_reset(void);
/* A change of the tables starts: its permits share the returned token. */
unsigned oracle_begin_change(void);
/* Until the change's flush returns, owner's page may still map frame. */
void oracle_permit(unsigned token, int owner, unsigned page, uint32_t frame,
		   bool writable);
/* The change's flush returned (mm: NULL for kernel pages). */
void oracle_end_change(unsigned token, const struct mm *mm);
/* Permits not yet revoked. */
unsigned oracle_pending(void);
/*
 * Judges an access cpu made to page of owner (-1: kernel page), which
 * the hardware translated to x and the tables now map to frame now.
 */
void oracle_judge(unsigned cpu, int owner, unsigned page, bool write,
		  struct sim_xlate x, uint32_t now, bool now_writable);

/* --- Workloads (tlb_sim_workload.c) -------------------------------------------- */

/* The operations a CPU's workload is made of (tlb_sim_workload.c). */
enum sim_op_kind {
	OP_RUN,
	OP_KTHREAD,
	OP_READ,
	OP_WRITE,
	OP_KREAD,
	OP_REMAP,
	OP_UNMAP,
	OP_PROTECT,
	OP_FREE_TABLE,
	OP_KREMAP,
	OP_EXIT,
};

struct sim_op {
	uint8_t kind;
	uint8_t mm;   /* index (mm1 is 0) */
	uint8_t page; /* page; kernel page; table for OP_FREE_TABLE */
	uint8_t count;
};

#define SIM_OPS_MAX 24 /* operations in one CPU's workload */

struct sim_workload {
	unsigned cpus, mms;
	unsigned nops[SIM_CPUS_MAX];
	struct sim_op ops[SIM_CPUS_MAX][SIM_OPS_MAX];
};

/* Parses cpu's operations ("run 1, read 0"); w->mms must be set. */
bool workload_parse(struct sim_workload *w, unsigned cpu, const char *text,
		    char *err, size_t size);
/* The highest address space the operations name. */
unsigned workload_mms(const struct sim_workload *w);
/* A random machine and workload. */
void workload_generate(struct sim_workload *w, uint64_t seed);
const char *workload_op_name(const struct sim_op *op, char *buf, size_t size);
void workload_print(const struct sim_workload *w, const char *prefix);

/* --- Policies (tlb_sim_policy.c) ---------------------------------------------- */

/* From kernel command-line words ("pcid=off lazy=ipi"), else defaults. */
bool policy_parse(const char *text, struct tlb_policy *p, char *err,
		  size_t size);

/* --- Search (tlb_sim_search.c) ------------------------------------------------ */

/* A fixed workload to search, or random ones to draw. */
struct sim_scenario {
	const char *name;
	const char *why;      /* what it exercises */
	bool random;	      /* drawn from each seed; else searched */
	unsigned preemptions; /* searched: the bound */
	unsigned max_runs;    /* searched: the run cap (0: the default) */
	const char *policy;   /* the one policy set it runs under (NULL: all) */
	unsigned mms;
	const char *cpu[SIM_CPUS_MAX]; /* tlb_sim_workload.c's language */
};

/* What one search found. */
struct sim_outcome {
	uint64_t runs;
	bool complete;	     /* every schedule within the bound was run */
	unsigned bound_done; /* every schedule with this many preemptions ran */
	bool failed;
	char failure[512];
	uint64_t seed;	   /* the failing run's, random scenarios */
	char choices[512]; /* the failing run's, searched scenarios */
};

/*
 * Random scenarios: seeds per search, about a second's worth under ASan
 * on two cores, the same ones every time so results repeat.
 */
#define SIM_RANDOM_SEEDS     200
#define SIM_RANDOM_BASE_SEED 0x5eed0000ULL

/* The last run, and the workload it ran. */
extern struct sim_run sim_last;
extern struct sim_workload sim_workload;

/*
 * One run of sc under policy (command-line words): with a prefix of
 * choices, or with a seed (random choices; for random scenarios also the
 * workload). trace: mm/tlb.c's own trace lines too.
 */
void search_run(const struct sim_scenario *sc, const char *policy,
		enum tlb_bug bug, const uint8_t *prefix, size_t len,
		const uint64_t *seed, bool trace);
/* Runs until the first failure, the end of the search or max_runs. */
void search(const struct sim_scenario *sc, const char *policy, enum tlb_bug bug,
	    uint64_t max_runs, struct sim_outcome *out);
/*
 * The same search over the schedules of any body (it calls sim_barrier once
 * per phase), for cases that drive the kernel code directly.
 */
void search_body(unsigned cpus, sim_body body, unsigned bound,
		 uint64_t max_runs, struct sim_outcome *out);
/* A failing run's choices ("17:1,23:2") as a prefix; its length. */
size_t search_parse_choices(const char *text, uint8_t *prefix);

/* --- Kernel (tlb_sim_kernel.c) ------------------------------------------------- */

/*
 * Sets up the kernel tables and nmms address spaces, each with every page
 * mapped writable and one reference (its task's).
 */
void kern_reset(unsigned cpus, unsigned nmms);
uint64_t kern_kernel_root(void);
void kern_op(const struct sim_op *op);
/* The last phase: every CPU touches every live page, then tasks exit. */
void kern_sweep(bool last_cpu);
/* After an execution: references and frames add up. */
void kern_final_check(void);

#endif
