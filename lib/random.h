/* SPDX-License-Identifier: MIT */
/*
 * Deterministic pseudo-random numbers (splitmix64): for tests that vary
 * their choices with a seed (test_seed=), never for anything secret.
 */
#ifndef LIB_RANDOM_H
#define LIB_RANDOM_H

#include "lib/types.h"

/* The next number of the sequence *state walks (any start value). */
static inline uint64_t random_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform enough in [0, n) for tests; n > 0. */
static inline uint64_t random_below(uint64_t *state, uint64_t n)
{
	return random_next(state) % n;
}

#endif
