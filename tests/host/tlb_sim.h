/* SPDX-License-Identifier: MIT */
/*
 * The simulated machine under mm/tlb.c (docs/tlb-simulator.md): the
 * interface between its parts.
 *
 *   tlb_sim_sched.c   CPUs as host threads, one running at a time; the
 *                     scheduler that picks who runs (or whose store
 *                     drains) at each scheduling point; IPIs, interrupts
 *                     and smp/call_hw.h under smp/call_queue.c
 *   tlb_sim_memory.c  x86-TSO store buffers for every sync/shared.h access,
 *                     and the compiler's freedom with relaxed stores
 *   tlb_sim_mmu.c     physical memory (frames), CR3, CR4.PCIDE, PCID-tagged
 *                     TLBs and PML4E/PDPTE/PDE caches, the page walker
 *   tlb_sim_host.c    what the kernel files need from the rest of the
 *                     kernel: mm/pmm.h, mm/heap.h, phys_to_virt, boot_cpu
 *   tlb_sim_mmfile.c  mm/mm.c, and tlb_sim_kfiles.c mm/kmap.c and
 *                     mm/kstack.c, compiled unchanged, reset between runs
 *   sim_include/arch/x86.h    the simulated CPU's instructions (interrupts,
 *                     spin loops), first on the include path
 *   tlb_sim_kernel.c  the kernel around the protocol: a run's kernel half
 *                     and address spaces, thread switches, workload
 *                     operations as calls into mm/mm.c, mm/kmap.c and
 *                     mm/kstack.c, accesses
 *   tlb_sim_oracle.c  judges every access against the page tables
 *   tlb_sim_workload.c  the workload language, random workloads
 *   tlb_sim_policy.c  policies as kernel command-line words
 *   tlb_sim_trace.c   the trace of the last events
 *   tlb_sim_explain.c what -v adds to it: loads of the protocol's shared
 *                     variables, why each CPU was sent a request or
 *                     skipped, handlers' comparisons
 *   tlb_sim_search.c  runs, replays, exhaustive and random search
 *   test_tlb_sim.c    scenarios, policy sets, bug cases, KTAP
 *
 * Include the kernel headers first (see tests/host/host_test.h).
 */
#ifndef TESTS_HOST_TLB_SIM_H
#define TESTS_HOST_TLB_SIM_H

#include "lib/types.h"
#include "arch/layout.h"
#include "mm/mm.h"
#include "mm/tlb.h"
#include "mm/tlb_hw.h"
#include "sync/shared.h"

/* --- Sizes ------------------------------------------------------------------- */

#define SIM_CPUS_MAX 8 /* the largest machine the workloads use */
#define SIM_MMS_MAX  6 /* address spaces of one execution */
/*
 * Each address space has SIM_TABLES regions of SIM_SLOTS anonymous pages,
 * one page table each: region 0 at 0x400000 (PML4 slot 0), region 1 in a
 * PML4 slot of its own (slot 1), so that freeing region 1's table frees
 * its page directory and PDPT too. Then SIM_SHM_PAGES pages of one
 * shared-memory object every address space maps (page table 2 of region
 * 0's page directory). Pages count 0 .. SIM_ALL_PAGES-1 in that order.
 */
#define SIM_TABLES    2
#define SIM_SLOTS     4
#define SIM_PAGES     (SIM_TABLES * SIM_SLOTS) /* anonymous pages */
#define SIM_SHM_PAGES 2
#define SIM_ALL_PAGES (SIM_PAGES + SIM_SHM_PAGES)
#define SIM_KPAGES    2 /* kernel pages that workloads remap */
#define SIM_KSTACKS   3 /* kernel stacks workloads allocate and free */
/* Where the simulated user pages and kernel pages live. */
#define SIM_USER_BASE	  0x400000ULL	  /* where user programs are linked */
#define SIM_USER_FAR_BASE 0x8000000000ULL /* PML4 slot 1 */
#define SIM_SHM_BASE	  0x800000ULL
/*
 * Where "mapshm" maps the shared object again: its first page is the last
 * of the page table that maps SIM_SHM_BASE, its second the first of the
 * next page table, so that the map allocates a table half way.
 */
#define SIM_SHM_ALT_BASE (SIM_SHM_BASE + MiB(2) - PAGE_SIZE)
#define SIM_KERNEL_BASE	 IOREMAP_BASE
/* Frames of one execution: far more than any workload allocates. */
#define SIM_FRAMES_MAX 2048
/*
 * Physical address of frame 1 (frame 0 means "none"): above the first
 * megabyte, so that no frame is at physical address 0.
 */
#define SIM_PHYS_BASE MiB(1)
/* Addresses the walker fills in the speculative-refill mode, at most. */
#define SIM_FILL_VAS_MAX 32

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
/*
 * Whether the code running here could be moved to another CPU on a real
 * machine: neither pinned (tlb_hw_pin) nor with interrupts off. Here every
 * CPU runs one thread that never moves, so the simulator checks the
 * moments a move would become possible instead.
 */
bool sim_movable(void);
/* Whether this CPU runs its call interrupt's handler. */
bool sim_in_interrupt(void);
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
 * point. x is a SHARED(T) (sync/shared.h), and SIM_PEEK(&x) is a T.
 */
uint64_t sim_memory_peek(const void *p, size_t size);
#define SIM_PEEK(p)                                              \
	((__typeof__(*SHARED_RAW(p)))(uintptr_t)sim_memory_peek( \
		SHARED_RAW(p), sizeof(*SHARED_RAW(p))))
/*
 * For the explanations (tlb_sim_explain.c), never scheduling points:
 * whether cpu's loads of [p, p+size) take any byte from its own buffer,
 * and the newest store cpu's buffer holds to exactly [p, p+size).
 */
bool sim_memory_forwards(unsigned cpu, const void *p, size_t size);
bool sim_memory_pending(unsigned cpu, const void *p, size_t size,
			uint64_t *value);

/* --- Trace (tlb_sim_trace.c) ------------------------------------------------- */

/*
 * The last SIM_TRACE_LINES events of the run, printed after a failure
 * (and as they happen when sim_verbose is set).
 */
#define SIM_TRACE_LINES 400
/* The longest line: a failure message, or -v's line of 8 CPUs' targets. */
#define SIM_TRACE_WIDTH 1024
void sim_trace(const char *fmt, ...) __printf(1, 2);
void sim_trace_print(const char *prefix, unsigned last);
void sim_trace_reset(void);
/* Whether a line of the ring holds text. */
bool sim_trace_contains(const char *text);
extern bool sim_verbose;

/* --- Explanations (tlb_sim_explain.c) ------------------------------------------ */

/*
 * Set by -v: the trace also shows each load of the protocol's shared
 * variables (cpuN.loaded_mm, cpuN.is_lazy, mmN.tlb_gen, mmN.cpu_mask) with
 * the value it returned, where from, and the stores to the same variable
 * still in other CPUs' buffers; after each of mm/tlb.c's request lines,
 * each CPU sent the request or skipped, with the value the flusher read
 * that decided; and after each handling line, the values the handler
 * compared. It reads no shared variable through an access, so a run takes
 * the same steps with it or without.
 */
extern bool sim_explain;
/* cpu's load of [p, p+size) returned v: a line if p is a named variable. */
void sim_explain_load(unsigned cpu, const void *p, size_t size, uint64_t v);

/* --- Machine (tlb_sim_mmu.c) --------------------------------------------------- */

/* What a simulated frame holds (for messages; the tables are real). */
enum sim_frame_kind {
	FRAME_UNUSED,
	FRAME_DATA,  /* handed out, not named yet */
	FRAME_PAGE,  /* a user page */
	FRAME_TABLE, /* a page table below the root (level in .level) */
	FRAME_ROOT,  /* a PML4 */
	FRAME_KPAGE, /* a kernel page (global mapping) */
	FRAME_KSTACK,
	FRAME_SHARED, /* a page of the shared-memory object */
};

struct sim_frame {
	uint8_t kind;
	uint8_t level; /* tables: 1 PT, 2 PD, 3 PDPT */
	bool dead;     /* freed, on the free list until handed out again */
	int8_t owner;  /* address space (index), -1: kernel */
	uint32_t gen;  /* its life: 1 when first handed out, +1 each reuse */
	uint64_t born; /* when this life began: mmu_births() then */
	/* What it was in its last life, for messages. */
	uint8_t was_kind, was_level;
	int8_t was_owner;
};

/* A translation the hardware produced for an access. */
struct sim_xlate {
	bool present, writable, user;
	bool tlb_hit; /* from a TLB entry, not a fresh walk */
	uint32_t frame;
	uint32_t gen; /* the frame's life the translation was made in */
};

void mmu_reset(unsigned cpus);
/*
 * Frames for mm/pmm.h (tlb_sim_host.c), zeroed: the last one freed first
 * (a freed frame is reused at once), or one never handed out (fresh: the
 * next one up, so that fresh frames in a row are contiguous).
 */
uint64_t mmu_alloc_frame(void);
uint64_t mmu_alloc_fresh_frame(void);
/*
 * Puts a frame on the free list, after checking that no CPU can still use
 * it (and, for a shared page, that no address space still maps it).
 */
void mmu_free_frame(uint64_t phys, const char *why);
/* Frames handed out so far in the run (each life counts). */
uint64_t mmu_births(void);
/* Whether a translation made in frame's life gen is stale: freed since. */
bool mmu_stale(uint32_t frame, uint32_t gen);
/* Frames handed out and not freed; the highest frame number used. */
uint32_t mmu_frames_in_use(void);
uint32_t mmu_frames_max(void);
/* Who frames this CPU allocates from now on belong to (-1: kernel). */
void mmu_set_owner(int owner);
void mmu_label(uint64_t phys, enum sim_frame_kind kind, int owner);
struct sim_frame *mmu_frame(uint32_t frame);
uint64_t mmu_phys(uint32_t frame);
uint32_t mmu_frame_at(uint64_t phys, const char *what);
void *mmu_phys_to_virt(uint64_t phys);
uint64_t mmu_virt_to_phys(const void *virt);
/* "frame 12 (page of mm2)", for messages. */
const char *mmu_name(uint32_t frame, char *buf, size_t size);
/*
 * The same for a frame reached through a stale translation: "frame 12
 * (page of mm2)" if it is still free, else "frame 12 (reused as page table
 * (PT) of mm3, was page of mm2)".
 */
const char *mmu_name_stale(uint32_t frame, char *buf, size_t size);
/*
 * Translates va on cpu as its hardware would, filling the TLB and the
 * paging-structure caches; a failed translation (a page fault) drops
 * what it used.
 */
struct sim_xlate mmu_translate(unsigned cpu, uint64_t va, bool write);
/* This CPU's CR3 root frame and current PCID. */
uint32_t mmu_root(unsigned cpu);
uint16_t mmu_pcid(unsigned cpu);
/* Whether a CPU runs user code (so its TLB entries are in use). */
void mmu_set_user_active(unsigned cpu, bool active);
/* The speculative-refill mode: refill after every invalidation. */
void mmu_set_refill(bool on);
/* INVPCID type 3 (mm/tlb.c has no caller: not in mm/tlb_hw.h). */
void mmu_invpcid_all_nonglobal(void);
/*
 * On a simulated CPU with PCIDE on: fills PCIDs 1 and 2 (roots root1 and
 * root2) with user address u and global kernel address k, and checks what
 * each invalidation leaves; fails the run at the first difference.
 */
void mmu_selftest(uint64_t root1, uint64_t root2, uint64_t u, uint64_t k);
/*
 * The same for INVLPGB and TLBSYNC, with two CPUs: what a request drops on
 * the other CPU, that it drops nothing before it completes, and that a
 * TLBSYNC completes only its own CPU's requests.
 */
void mmu_broadcast_selftest(uint64_t root1, uint64_t root2, uint64_t u,
			    uint64_t k);
/* SIM_RANDOM: the hardware drops or speculatively fills an entry. */
void mmu_random_event(void);
/*
 * INVLPGB requests issued by a CPU and not completed yet (at most
 * SIM_BROADCASTS_MAX: one more completes the oldest). Completing one
 * applies it to every CPU's TLB and paging-structure caches; the scheduler
 * completes them (BCAST moves, the end of a phase), and TLBSYNC completes
 * its own CPU's. Completing may fail the run (a refill walk reads a freed
 * table): not with the scheduler's lock held.
 */
#define SIM_BROADCASTS_MAX 16
unsigned mmu_broadcasts(unsigned cpu);
void mmu_broadcast_complete(unsigned cpu, unsigned i, const char *why);
void mmu_broadcasts_complete_all(unsigned cpu, const char *why);

/* User page index (0 .. SIM_ALL_PAGES-1) to address. */
static inline uint64_t sim_page_va(unsigned page)
{
	if (page >= SIM_PAGES)
		return SIM_SHM_BASE + (uint64_t)(page - SIM_PAGES) * PAGE_SIZE;
	return (page / SIM_SLOTS ? SIM_USER_FAR_BASE : SIM_USER_BASE) +
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
	uint64_t accesses;   /* accesses judged by the oracle */
	uint64_t stale_ok;   /* stale but allowed: the flush was running */
	uint64_t faults;     /* accesses the page tables refuse, faulted */
	uint64_t spurious;   /* faults the page tables allow: retried */
	uint64_t flushes;    /* page-table changes flushed */
	uint64_t frees;	     /* frames freed and checked */
	uint64_t ipis;	     /* IPIs delivered */
	uint64_t broadcasts; /* INVLPGBs issued */
	uint64_t mm_deaths;  /* address spaces freed and checked */
};

extern struct sim_counts sim_counts;

void oracle_reset(void);
/* A change of the tables starts: its permits share the returned token. */
unsigned oracle_begin_change(void);
/*
 * Until the change's call returns, owner's (-1: the kernel's) va may
 * still translate to frame.
 */
void oracle_permit(unsigned token, int owner, uint64_t va, uint32_t frame,
		   bool writable);
/*
 * A call just mapped va to frame (no other CPU ran since the store): the
 * changes of va still running may clear that mapping too, so each gets a
 * permit for it.
 */
void oracle_mapped(int owner, uint64_t va, uint32_t frame, bool writable);
/*
 * Until the change's call returns, owner's va may translate to any frame
 * handed out to owner from now on: a map that fails half way unmaps the
 * pages it mapped, and CPUs may use them until its flush returns.
 */
void oracle_permit_new(unsigned token, int owner, uint64_t va);
/* The change's call returned (mm: NULL for kernel mappings). */
void oracle_end_change(unsigned token, const struct mm *mm);
/* The moment a call begins, for its oracle_settled. */
unsigned oracle_mark(void);
/*
 * A map, unmap, protect or revoke of owner's va returned, which began at
 * moment since (oracle_mark): the translations permitted before then go,
 * whichever change left them (a running change keeps its mark, for
 * oracle_mapped, and what it was permitted since).
 */
void oracle_settled(int owner, uint64_t va, unsigned since);
/* Permits not yet revoked. */
unsigned oracle_pending(void);
/*
 * Judges an access cpu made to va of owner (-1: the kernel half), which
 * the hardware translated to x and the page tables now map to frame now
 * (0: not mapped). what names it for messages.
 */
void oracle_judge(unsigned cpu, int owner, uint64_t va, const char *what,
		  bool write, struct sim_xlate x, uint32_t now,
		  bool now_writable);

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
	OP_KSTACK_ALLOC,
	OP_KSTACK_FREE,
	OP_KSTACK_TOUCH,
	OP_REVOKE,
	OP_MAP,
	OP_MAPSHM,
};

struct sim_op {
	uint8_t kind;
	uint8_t mm;   /* index (mm1 is 0) */
	uint8_t page; /* page; kernel page; table; kernel stack */
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

/* --- Failure injection (tlb_sim_host.c) --------------------------------------- */

/*
 * Allocation k (1, 2, ...) of each run's workload fails: pmm_alloc_frame
 * returns 0, kzalloc NULL (0: none fails). Set-up and sweep allocate
 * without counting. sim_alloc_most: the most allocations a run made since
 * the caller last set it to 0.
 */
extern uint64_t sim_alloc_fail_at, sim_alloc_most;
/* Counting starts (from 0) or stops: kern_reset's set-up does not count. */
void sim_alloc_count(bool on);
/* Whether this run's failing allocation has happened. */
bool sim_alloc_failed(void);

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
	const char *policy;   /* the sets it runs under, by name (NULL: all) */
	unsigned mms;
	const char *cpu[SIM_CPUS_MAX]; /* tlb_sim_workload.c's language */
	bool refill;		       /* the MMU's speculative-refill mode */
	/* Searched once per allocation k failing, k = 1, 2, ... */
	bool fail_each;
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
 * on two cores, the same ones every time so results repeat. The first
 * seed is SIM_RANDOM_BASE_SEED, or HOST_TEST_SEED when that is set (a
 * teacher grading on seeds the students never saw: make grade GRADE_SEED=).
 */
#define SIM_RANDOM_SEEDS     200
#define SIM_RANDOM_BASE_SEED 0x5eed0000ULL
uint64_t sim_random_base_seed(void);

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
 * Sets up the kernel half (a root, the PDPTs of the PML4 slots the
 * simulator uses, SIM_KPAGES kernel pages, kernel stack 0) and nmms
 * address spaces (mm_create, every page mapped writable, the shared
 * object mapped), each with one reference (its task's).
 */
void kern_reset(unsigned cpus, unsigned nmms);
uint64_t kern_kernel_root(void);
/* The root of address space index (mm1 is 0). */
uint64_t kern_mm_root(unsigned index);
/* Address space index (mm1 is 0) of this run, NULL past the last. */
struct mm *kern_mm(unsigned index);
/* The index of mm, or -1 if it is none of this run's address spaces. */
int kern_mm_index(const struct mm *mm);
void kern_op(const struct sim_op *op);
/* The last phase: every CPU touches every live page, then tasks exit. */
void kern_sweep(bool last_cpu);
/* After an execution: references and frames add up. */
void kern_final_check(void);
/* Addresses the kernel uses, for speculative fills; how many. */
size_t kern_fill_vas(uint64_t *vas, size_t max);
/* kfree of a struct mm the simulator tracks: checks, keeps it; true. */
bool kern_mm_freed(void *p);
/*
 * A shared page is being freed (named name, by why): no address space
 * that is alive (not being torn down) may still map it.
 */
void kern_check_unmapped(uint32_t frame, const char *why, const char *name);

/* File-scope state of the host-compiled kernel files, between runs. */
void sim_kfiles_reset(uint64_t kernel_root);
void sim_mmfile_reset(void);
/* The frames of shm (up to max), none once it is revoked; how many. */
uint64_t sim_shm_frames(const struct shm *shm, uint64_t *frames, uint64_t max);

#endif
