/* SPDX-License-Identifier: MIT */
/*
 * The TLB protocol's per-CPU state (mm/tlb.c explains it): what each ASID
 * slot remembers, the requests a flush sends, and the states a CPU is in.
 * The protocol's files and the code that observes them (benchmarks, tests,
 * the simulator) read it. Only the protocol's files change it.
 */
#ifndef MM_TLB_CPU_H
#define MM_TLB_CPU_H

#include "lib/types.h"
#include "mm/tlb_stats.h"
#include "sync/cpumask.h"
#include "sync/shared.h"

struct mm;

/* The most ASID slots a CPU may have: PCIDs 1..TLB_ASID_SLOTS_MAX. */
#define TLB_ASID_SLOTS_MAX 32
/* PCIDs CR3 can carry: 12 bits. */
#define TLB_PCID_COUNT 4096
/* Global ASIDs (mm/tlb_global_asid.c) take the PCIDs above the slots'. */
#define TLB_GLOBAL_PCID_FIRST (TLB_ASID_SLOTS_MAX + 1)
#define TLB_GLOBAL_ASIDS_MAX  (TLB_PCID_COUNT - TLB_GLOBAL_PCID_FIRST)
/* The most address spaces one flush_tlb_mms round covers. */
#define TLB_MULTI_MMS_MAX 16

/* What one ASID slot remembers: whose translations it tags, how fresh. */
struct tlb_asid_slot {
	uint64_t context_id; /* the mm that last used it (0: none yet) */
	uint64_t tlb_gen;    /* that mm's tlb_gen the TLB is current to */
};

/* The flush a CPU is asked to do (one per flush call). */
struct tlb_flush_request {
	struct mm *mm; /* NULL: kernel mappings */
	uint64_t start, end;
	unsigned stride_shift;
	bool freed_tables;
	unsigned sender;  /* the CPU that asked */
	uint64_t new_gen; /* mm's tlb_gen after this change */
};

/* The request of one flush_tlb_mms round: one per address space. */
struct tlb_multi_request {
	unsigned count;
	unsigned sender; /* the CPU that asked */
	struct tlb_flush_request mms[TLB_MULTI_MMS_MAX];
};

/*
 * A request where its targets read it, per CPU (flush_info=percpu) or on
 * the sender's stack. The sender fills it with shared_write before the
 * call. The targets copy it out with shared_read (mm/tlb.c).
 */
typedef SHARED(struct tlb_flush_request) tlb_flush_request_placed;
typedef SHARED(struct tlb_multi_request) tlb_multi_request_placed;

/*
 * A CPU's TLB state. The first group is read by other CPUs (flushers
 * deciding whom to interrupt) and written only by the owner, with the
 * orderings mm/tlb.c describes. The rest belongs to the owning CPU alone.
 */
struct tlb_cpu {
	SHARED(struct mm *)
	loaded_mm;	      /* whose tables CR3 holds;
					* TLB_MM_SWITCHING */
	SHARED(bool) is_lazy; /* a kernel thread runs on loaded_mm */
	/* loaded_mm runs under its global ASID (stored before loaded_mm) */
	SHARED(bool) on_global_asid;

	uint16_t loaded_asid; /* slot of loaded_mm; TLB_ASID_KERNEL, _GLOBAL */
	uint16_t next_asid;   /* round-robin victim for a new context */
	unsigned backoff;     /* lazy=dynamic: switches left non-lazy */
	struct mm *lazy_ref;  /* lazy_mm=refcount: the reference held */
	struct tlb_asid_slot slots[TLB_ASID_SLOTS_MAX];
	struct tlb_stats stats;
	bool request_in_flight; /* a flush of this CPU's is under way */
	/* tlb_bug=ack_before_flush (mm/tlb_bug_ack.c): a request this CPU
	 * acknowledged and has not flushed yet, and its handler. */
	bool acked_held;
	void (*acked_handler)(void *arg);
	struct tlb_flush_request acked;
	/* flush_info=percpu: this CPU's outgoing request lives here. */
	tlb_flush_request_placed request __aligned(64);
	/* flush_info=percpu: this CPU's outgoing batch request. */
	tlb_multi_request_placed multi_request __aligned(64);
} __aligned(64);

/* loaded_mm while a CPU is between two address spaces (mm/tlb.c). */
#define TLB_MM_SWITCHING ((struct mm *)1)
/* loaded_asid while the kernel mm is loaded (PCID 0). */
#define TLB_ASID_KERNEL UINT16_MAX
/* loaded_asid while loaded_mm runs under its global ASID: no slot. */
#define TLB_ASID_GLOBAL (UINT16_MAX - 1)

extern struct tlb_cpu tlb_cpus[MAX_CPUS];

#endif
