// SPDX-License-Identifier: MIT
/*
 * flush_local's crossover (bench/crossover.h). No state but its arguments:
 * the kernel prints what it returns, and a host test checks it on medians
 * the emulator seldom gives (page by page winning again after a loss, ties).
 */
#include "bench/crossover.h"

size_t flush_crossover(const uint64_t *by_page, const uint64_t *full, size_t n)
{
	/* LAB(L6) begin: the smallest i such that full[j] <= by_page[j] for
	 * every j >= i, or n if there is none */
	size_t from = n;

	while (from > 0 && full[from - 1] <= by_page[from - 1])
		from--;
	return from;
	/* LAB(L6) end */
}
