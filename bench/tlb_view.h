/* SPDX-License-Identifier: MIT */
/*
 * What the benchmarks read from the TLB code (mm/tlb.h): the policies in
 * force, printed with the results, and the counters, summed over every CPU
 * and printed beside each result as what changed during its samples.
 */
#ifndef BENCH_TLB_VIEW_H
#define BENCH_TLB_VIEW_H

#include "lib/types.h"
#include "mm/tlb.h"
#include "proc/ipc.h"

struct bench_counters {
	struct tlb_stats tlb;
	struct ipc_path_stats ipc; /* the IPC fast path's, for the IPC rows */
};

/* Every online CPU's TLB (and IPC path) counters, summed. */
void bench_counters_read(struct bench_counters *out);

/* a -= b, field by field. */
void bench_counters_sub(struct bench_counters *a,
			const struct bench_counters *b);

/*
 * The counters that are not zero, as "name=value" joined by commas, or
 * "-" when none moved. With wasted_ipis, the flush IPIs that found nothing
 * to do (ipi-unloaded, ipi-covered) are printed even at zero, for the rows
 * that count them.
 */
void bench_counters_format(const struct bench_counters *c, bool wasted_ipis,
			   char *buf, size_t size);

/* One line: `bench: tlb pcid=... lazy=...`, every field of tlb_policy. */
void bench_policy_report(void);

#endif
