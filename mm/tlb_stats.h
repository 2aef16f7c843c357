/* SPDX-License-Identifier: MIT */
/*
 * The TLB counters: one list, from which the struct, the printed names and
 * the printout all come (mm/tlb_stats.c), so they cannot drift apart.
 *
 * Each CPU counts its own events without atomics. Readers add them up while
 * the counts may still move, which is exact once the CPUs are quiet (the
 * benchmarks read between runs).
 */
#ifndef MM_TLB_STATS_H
#define MM_TLB_STATS_H

#include "lib/types.h"

/* X(field, printed name, what it counts), in the order they print. */
#define TLB_STATS_LIST(X)                                                      \
	X(ipis_sent, "ipi-sent", "flush requests sent to other CPUs")          \
	X(ipis_received, "ipi-recv", "flush requests handled from others")     \
	X(flush_full, "full", "whole-context flushes")                         \
	X(flush_partial, "partial", "range flushes, page by page")             \
	X(flush_pages, "pages", "single pages invalidated")                    \
	X(flush_kernel, "kernel", "kernel-range flushes handled")              \
	X(flush_up_to_date, "current", "requests found already covered")       \
	X(ipis_not_loaded, "ipi-unloaded",                                     \
	  "IPIs from others that found the mm left")                           \
	X(ipis_covered, "ipi-covered",                                         \
	  "IPIs from others an earlier flush had covered")                     \
	X(asid_hits, "asid-hit", "switch found next's slot current")           \
	X(asid_misses, "asid-miss", "switch took a new or stale slot")         \
	X(lazy_skips, "lazy-skip", "lazy CPUs a flush did not interrupt")      \
	X(lazy_leaves, "lazy-leave", "flush IPIs that made a lazy CPU leave")  \
	X(gen_catchups, "catch-up", "switches that found a slot behind")       \
	X(cpumask_atomics, "mask-atomic", "locked cpumask updates")            \
	X(mm_switches, "cr3-load", "CR3 loads by switch_mm_irqs_off")          \
	X(lazy_entries, "lazy-enter", "switches to a kernel thread kept lazy") \
	X(lazy_shootdowns, "lazy-shoot", "CPUs sent away at an mm's teardown") \
	X(batch_rounds, "batch-round", "flush rounds sent by flush_tlb_mms")   \
	X(batch_mms, "batch-mm", "address spaces those rounds covered")        \
	X(batch_ipis, "batch-ipi", "requests those rounds sent to others")     \
	X(spurious_faults, "spurious",                                         \
	  "faults the page tables allowed: retried")                           \
	X(broadcasts, "invlpgb", "INVLPGBs issued")                            \
	X(tlbsyncs, "tlbsync", "TLBSYNC waits for them")                       \
	X(ipis_avoided, "ipi-avoid", "CPUs a broadcast reached without IPI")   \
	X(global_asid_gets, "gasid-get", "global ASIDs given (in use: - put)") \
	X(global_asid_puts, "gasid-put", "global ASIDs freed at teardown")     \
	X(global_asid_wraps, "gasid-wrap",                                     \
	  "wrap-around flushes of freed ones")                                 \
	X(transitions, "transition", "transitions to a global ASID ended")

/* One CPU's counters (tlb_cpu.stats), one field per entry of the list. */
struct tlb_stats {
#define TLB_STATS_FIELD(field, name, what) uint64_t field;
	TLB_STATS_LIST(TLB_STATS_FIELD)
#undef TLB_STATS_FIELD
};

/* The counters one by one, by the names tlb_stats_print gives them. */
#define TLB_STATS_COUNT (sizeof(struct tlb_stats) / sizeof(uint64_t))
const char *tlb_stats_name(size_t i);
uint64_t *tlb_stats_field(struct tlb_stats *s, size_t i);

/* Sums every online CPU's counters into out. */
void tlb_stats_sum(struct tlb_stats *out);
/* Prints the per-CPU counters as a table (tlb_stats on the command line). */
void tlb_stats_print(void);
/* The same when the tlb_stats flag was given (mm/tlb_stats.c has it). */
void tlb_stats_print_if_requested(void);

#endif
