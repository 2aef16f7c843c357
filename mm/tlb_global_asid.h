/* SPDX-License-Identifier: MIT */
/*
 * Global ASIDs: PCIDs that name one address space on every CPU at once,
 * for AMD's broadcast invalidation (mm/tlb.c, "Global ASIDs", says when a
 * space gets one and how the protocol uses it; mm/tlb_global_asid.c hands
 * them out and takes them back).
 */
#ifndef MM_TLB_GLOBAL_ASID_H
#define MM_TLB_GLOBAL_ASID_H

#include "lib/types.h"

struct mm;

/*
 * Gives mm a global ASID if it has none and one is free: sets
 * mm->asid_transition, then publishes mm->global_pcid. Taking one may cost
 * the wrap-around flush (an INVLPGB of every PCID's non-global entries and
 * a TLBSYNC) on this CPU: call it pinned.
 */
void tlb_global_asid_give(struct mm *mm);

/*
 * mm is being torn down and no CPU has it loaded: its global ASID, if any,
 * joins the freed set, which comes back after the next wrap-around.
 */
void tlb_global_asid_take_back(struct mm *mm);

#endif
