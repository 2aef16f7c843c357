/* SPDX-License-Identifier: MIT */
/*
 * The machine under the TLB protocol: everything mm/tlb.c and
 * mm/tlb_batch.c need from the CPU and from other CPUs, and nothing more.
 *
 * Two implementations: mm/tlb_hw.c (real instructions) with smp/call.c
 * (tlb_hw_call: smp_call_function_many, a layer above mm/), and
 * tests/host/tlb_sim (a simulated machine with PCID-tagged TLBs, delayed
 * IPIs and an interleaving scheduler). Every call here is a point where,
 * in the simulator, other CPUs may run.
 */
#ifndef MM_TLB_HW_H
#define MM_TLB_HW_H

#include "lib/types.h"
#include "mm/tlb_hw_cpu.h" /* inline here, functions there */
#include "sync/cpumask.h"

/* CR3 = page-table root | PCID (bits 11:0) | no-flush (bit 63, with PCID). */
#define CR3_PCID_MASK 0xfffULL
#define CR3_NOFLUSH   (1ULL << 63)

/* The CPUs online. */
const struct cpumask *tlb_hw_online(void);

/*
 * A clock for tlb_trace's timestamps: the TSC here, the scheduling step in
 * the simulator. Read by the trace alone, and no scheduling point there, so
 * a run traced takes the steps it takes untraced.
 */
uint64_t tlb_hw_clock(void);

/*
 * A full memory barrier (MFENCE): orders this CPU's earlier stores before
 * its later loads, which x86 otherwise lets pass them. mm/tlb.c says at each
 * use what it orders and what it pairs with.
 */
void tlb_hw_fence(void);

/* Keeps the caller on this CPU (no preemption) until unpinned. */
void tlb_hw_pin(void);
void tlb_hw_unpin(void);

/* tlb_hw_load_cr3: in mm/tlb_hw_cpu.h. */
/* Sets CR4.PCIDE (CR3's PCID must be 0) or leaves PCID off. */
void tlb_hw_set_pcide(bool on);

/* INVLPG: drops va in the current PCID, and va's global entry. */
void tlb_hw_invlpg(uint64_t va);
/* INVPCID type 0: va in pcid (not global entries). */
void tlb_hw_invpcid_address(uint16_t pcid, uint64_t va);
/* INVPCID type 1: every non-global entry of pcid. */
void tlb_hw_invpcid_context(uint16_t pcid);
/* INVPCID type 2: everything, global entries included, every PCID. */
void tlb_hw_invpcid_all(void);
/* Without INVPCID: toggles CR4.PGE, which drops everything, global too. */
void tlb_hw_flush_everything(void);

/*
 * INVLPGB (AMD): invalidates, in every CPU's TLB, the translations one
 * request names; weakly ordered: it completes at some moment before this
 * CPU's next TLBSYNC returns, in any order with other INVLPGBs.
 */
struct tlb_hw_broadcast {
	uint64_t va;	/* first page (page-aligned), when has_va */
	unsigned pages; /* with has_va: 1 .. tlb_policy.invlpgb_max_pages */
	bool stride_2m; /* pages are 2 MiB apart (ECX[31]) instead of 4 KiB */
	bool has_va;	/* false: every address */
	bool has_pcid;	/* false: every PCID */
	uint16_t pcid;	/* with has_pcid */
	bool include_global; /* global entries too */
	bool final_only;     /* keep paging-structure-cache entries */
};
void tlb_hw_invlpgb(const struct tlb_hw_broadcast *b);
/* TLBSYNC: waits until every INVLPGB this CPU issued has completed. */
void tlb_hw_tlbsync(void);

enum tlb_hw_wait {
	TLB_HW_NO_WAIT, /* return once every request is queued */
	TLB_HW_WAIT,	/* return once every target has run fn */
};

/*
 * Runs fn(arg) on every CPU in targets, this one included if it is in
 * targets (here, directly, after the requests to the others are sent, so
 * its work overlaps theirs). Waits as told; while waiting, this CPU keeps
 * running requests sent to it.
 */
void tlb_hw_call(const struct cpumask *targets, void (*fn)(void *arg),
		 void *arg, enum tlb_hw_wait wait);

#endif
