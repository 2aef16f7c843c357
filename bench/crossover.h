/* SPDX-License-Identifier: MIT */
/*
 * The crossover of flush_local's two series (docs/bench.md): pure, so that
 * a host test (tests/host/test_crossover.c) can try it on crafted medians.
 */
#ifndef BENCH_CROSSOVER_H
#define BENCH_CROSSOVER_H

#include "lib/types.h"

/*
 * The index i of the smallest count such that, at that count and at every
 * larger one, flushing the whole context costs no more than flushing page
 * by page (medians: full[j] <= by_page[j] for every j >= i); n when page by
 * page is cheaper at the largest count.
 */
size_t flush_crossover(const uint64_t *by_page, const uint64_t *full, size_t n);

#endif
