/* SPDX-License-Identifier: MIT */
/*
 * What the two halves of the TLB oracle share, and the tests do not see:
 * the versions a group goes through (tlb_oracle.c), the calls the setting
 * up makes into the threads' side (tlb_oracle_threads.c), and the one
 * oracle.
 */
#ifndef TESTS_KERNEL_TLB_ORACLE_INTERNAL_H
#define TESTS_KERNEL_TLB_ORACLE_INTERNAL_H

#include "lib/types.h"
#include "tests/kernel/tlb_oracle.h"

/*
 * How long a wait may last before the run is declared stuck: far beyond
 * any round, even Bochs with 8 CPUs, yet it ends a run that a bug has
 * wedged with a report instead of the runner's timeout.
 */
#define WAIT_LIMIT_NS 30000000000ULL
#define RUN_LIMIT_NS  240000000000ULL
#define REAP_LIMIT_NS 20000000000ULL
#define POLL_NS	      1000000ULL

/*
 * How long a witness (oracle_add_witness) holds interrupts off at most: a
 * correct flush waits for it all that time, every round, so a witness
 * costs a correct kernel this much per round; a flush that does not wait
 * has this long to finish the round under the witness's eyes. Far below
 * the cross-CPU call watchdog's 10 s.
 */
#define WITNESS_HOLD_NS 100000000ULL

enum phase {
	PHASE_FILLED,	 /* writable, first word = pattern of this version */
	PHASE_READ_ONLY, /* the previous version's contents, read-only */
	PHASE_UNMAPPED,
	PHASE_ZEROED, /* just mapped by mm_map_anon: zero-filled */
};

struct page_state {
	bool present;
	bool writable;
	uint64_t value; /* the first word, when present */
};

/* One oracle at a time: tests run one after the other. */
extern struct oracle oracle_instance;

/* tlb_oracle.c: the versions. */
uint64_t oracle_pattern(const struct group *g, unsigned page, uint64_t version);
enum phase oracle_phase_of(const struct group *g, uint64_t version);
struct page_state oracle_state_of(const struct group *g, unsigned page,
				  uint64_t version);

/* tlb_oracle_threads.c: what setting up and running need. */
uint64_t oracle_kernel_pte_flags(void);
int oracle_fill(struct group *g, uint64_t version);
void oracle_stop_all(struct oracle *o);
void oracle_worker_main(void *arg);

#endif
