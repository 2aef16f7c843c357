/* SPDX-License-Identifier: MIT */
/*
 * The TLB protocol's deliberate bugs (tlb_bug=), for the tests and labs
 * that must catch them. Each place that breaks the protocol asks
 * INJECTED(tlb, TLB_BUG_...) (lib/inject.h), which only the injection
 * kernel and the simulator build in.
 */
#ifndef MM_TLB_BUG_H
#define MM_TLB_BUG_H

#include "lib/inject.h"
#include "sync/cpumask.h"

enum tlb_bug {
	TLB_BUG_NONE,
	TLB_BUG_SKIP_REMOTE,		/* no flush IPIs at all */
	TLB_BUG_NO_WAIT,		/* do not wait for the targets */
	TLB_BUG_ACK_BEFORE_FLUSH,	/* targets acknowledge, then flush */
	TLB_BUG_NO_GEN_CHECK,		/* every ASID slot counts as current */
	TLB_BUG_REUSE_ASID_NOFLUSH,	/* recycle a slot without a flush */
	TLB_BUG_LAZY_SKIP_FREED_TABLES, /* skip lazy CPUs even for freed tables */
	TLB_BUG_FREE_BEFORE_ACK,      /* free pages before the flush is done */
	TLB_BUG_BATCH_FIRST_MM_ONLY,  /* a batch targets its first mm's CPUs */
	TLB_BUG_REVOKE_SKIPS_CLEARED, /* revoke flushes present PTEs only */
	TLB_BUG_MAP_NO_WAIT,	 /* map over a range whose flush is pending */
	TLB_BUG_TLBSYNC_SKIPPED, /* INVLPGB, and no TLBSYNC to wait for it */
	/* a freed global ASID handed out without the wrap-around flush */
	TLB_BUG_GLOBAL_ASID_REUSE_NOFLUSH,
	TLB_BUG_INVLPGB_WITHOUT_PCID, /* INVLPGB kept on with PCID off */
	/* a transition ends while a CPU is SWITCHING */
	TLB_BUG_TRANSITION_SKIPS_SWITCHING,
	/* unpinned between the INVLPGBs and their TLBSYNC */
	TLB_BUG_TLBSYNC_AFTER_MIGRATE,
	TLB_BUG_COUNT
};

/* The bug in force (tlb_bug=; mm/tlb_options.c). */
extern enum tlb_bug tlb_bug_choice;
/* The words of tlb_bug=, in the order of enum tlb_bug (NULL-terminated). */
extern const char *const tlb_bug_names[TLB_BUG_COUNT + 1];

/*
 * tlb_bug=ack_before_flush, emulated in mm/tlb_bug_ack.c (the injection
 * build alone has it): targets acknowledge a request, then flush it later.
 *
 * tlb_ack_call runs handler(arg) on targets as that bug does (arg is a
 * tlb_flush_request_placed). tlb_ack_flush_held flushes what this CPU
 * acknowledged and still holds: at each TLB event (a request, a switch, a
 * timer tick, a teardown's shootdown).
 */
void tlb_ack_call(const struct cpumask *targets, void (*handler)(void *),
		  void *arg);
void tlb_ack_flush_held(void);

#endif
