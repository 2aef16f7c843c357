/* SPDX-License-Identifier: MIT */
/*
 * tlb_trace: one line per event of the TLB protocol (mm/tlb_trace.c writes
 * them; docs/tlb.md, "Watching it", reads them). mm/tlb.c calls the inline
 * functions here, each a test of tlb_policy.trace when it is off.
 */
#ifndef MM_TLB_TRACE_H
#define MM_TLB_TRACE_H

#include "lib/types.h"
#include "mm/tlb.h"

struct cpumask;
struct mm;

/* A generation the event did not read: it prints as "-". */
#define TRACE_GEN_UNREAD UINT64_MAX

void tlb_trace_event(const char *event, const struct mm *mm, uint16_t asid,
		     uint64_t local_gen, uint64_t mm_gen);
void tlb_trace_handling(const char *event, const struct tlb_flush_request *r,
			uint16_t asid, uint64_t local_gen, uint64_t mm_gen);
void tlb_trace_request(const struct mm *mm, uint16_t asid, uint64_t new_gen,
		       const struct cpumask *targets);
void tlb_trace_switch(const struct tlb_cpu *c, const struct mm *next,
		      uint16_t asid, uint64_t cr3);
void tlb_trace_spurious(const struct mm *mm, uint16_t asid, uint64_t local_gen,
			uint64_t va);

/* An event on this CPU alone. */
static inline void trace(const char *event, const struct mm *mm, uint16_t asid,
			 uint64_t local_gen, uint64_t mm_gen)
{
	if (unlikely(tlb_policy.trace))
		tlb_trace_event(event, mm, asid, local_gen, mm_gen);
}

/* This CPU handles request r: the line names the CPU that sent it. */
static inline void trace_handling(const char *event,
				  const struct tlb_flush_request *r,
				  uint16_t asid, uint64_t local_gen,
				  uint64_t mm_gen)
{
	if (unlikely(tlb_policy.trace))
		tlb_trace_handling(event, r, asid, local_gen, mm_gen);
}

/*
 * A request is sent, taking the mm from new_gen - 1 to new_gen: the line
 * names the other CPUs it goes to.
 */
static inline void trace_request(const struct mm *mm, uint16_t asid,
				 uint64_t new_gen,
				 const struct cpumask *targets)
{
	if (unlikely(tlb_policy.trace))
		tlb_trace_request(mm, asid, new_gen, targets);
}

/* This CPU switches to next in ASID asid with CR3 value cr3. */
static inline void trace_switch(const struct tlb_cpu *c, const struct mm *next,
				uint16_t asid, uint64_t cr3)
{
	if (unlikely(tlb_policy.trace))
		tlb_trace_switch(c, next, asid, cr3);
}

/* A spurious fault at va was retried after one INVLPG. */
static inline void trace_spurious(const struct mm *mm, uint16_t asid,
				  uint64_t local_gen, uint64_t va)
{
	if (unlikely(tlb_policy.trace))
		tlb_trace_spurious(mm, asid, local_gen, va);
}

#endif
