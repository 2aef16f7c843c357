/* SPDX-License-Identifier: MIT */
/*
 * CPU masks: one bit per CPU index (not APIC ID), up to MAX_CPUS.
 *
 * A struct cpumask is one CPU's (a local copy, a target list being built)
 * or has one writer at a time (cpu_online_mask, cpu/percpu.h), and its
 * operations are plain. A struct shared_cpumask is
 * changed by several CPUs at once without a lock, such as an address
 * space's mask of CPUs that may cache it: its words are SHARED
 * (sync/shared.h), so only the _atomic operations and cpumask_copy reach
 * them. Each _atomic one is a single locked read-modify-write of one 64-bit
 * word, and counts as one "cpumask atomic" in the TLB statistics; the
 * other operations work on a snapshot (cpumask_copy).
 */
#ifndef SYNC_CPUMASK_H
#define SYNC_CPUMASK_H

#include "lib/types.h"
#include "sync/shared.h"

/* The TLB simulator builds with fewer (tests/host/tlb_sim.h). */
#ifndef MAX_CPUS
#define MAX_CPUS 256
#endif
#define CPUMASK_WORDS (MAX_CPUS / 64)

_Static_assert(MAX_CPUS % 64 == 0, "cpumask words are 64 bits");

struct cpumask {
	uint64_t bits[CPUMASK_WORDS];
};

struct shared_cpumask {
	shared_u64 bits[CPUMASK_WORDS];
};

_Static_assert(sizeof(struct shared_cpumask) == sizeof(struct cpumask),
	       "a shared mask is laid out as a plain one");

static inline void cpumask_clear_all(struct cpumask *m)
{
	for (int i = 0; i < CPUMASK_WORDS; i++)
		m->bits[i] = 0;
}

static inline void cpumask_set(struct cpumask *m, unsigned cpu)
{
	m->bits[cpu / 64] |= 1ULL << (cpu % 64);
}

static inline void cpumask_clear(struct cpumask *m, unsigned cpu)
{
	m->bits[cpu / 64] &= ~(1ULL << (cpu % 64));
}

/* For masks this CPU owns, or a snapshot (cpumask_copy). */
static inline bool cpumask_test(const struct cpumask *m, unsigned cpu)
{
	return (m->bits[cpu / 64] >> (cpu % 64)) & 1;
}

/* Atomic set/clear: one locked instruction; a full barrier. */
static inline void cpumask_set_atomic(struct shared_cpumask *m, unsigned cpu)
{
	shared_set_bit(m->bits, cpu);
}

static inline void cpumask_clear_atomic(struct shared_cpumask *m, unsigned cpu)
{
	shared_clear_bit(m->bits, cpu);
}

/*
 * Word-by-word snapshot of a mask other CPUs may be changing (each word
 * one load: a CPU's bit is either seen or not, never torn).
 */
static inline void cpumask_snapshot(struct cpumask *dst,
				    const struct shared_cpumask *src)
{
	for (int i = 0; i < CPUMASK_WORDS; i++)
		dst->bits[i] = shared_load(&src->bits[i], __ATOMIC_RELAXED);
}

static inline void cpumask_copy_plain(struct cpumask *dst,
				      const struct cpumask *src)
{
	for (int i = 0; i < CPUMASK_WORDS; i++)
		dst->bits[i] = src->bits[i];
}

/* dst = src: a snapshot if src is a shared mask, else a plain copy. */
#define cpumask_copy(dst, src) \
	_Generic((src),                                           \
		struct shared_cpumask *: cpumask_snapshot,        \
		const struct shared_cpumask *: cpumask_snapshot,  \
		default: cpumask_copy_plain)((dst), (src))

static inline void cpumask_and(struct cpumask *dst, const struct cpumask *a,
			       const struct cpumask *b)
{
	for (int i = 0; i < CPUMASK_WORDS; i++)
		dst->bits[i] = a->bits[i] & b->bits[i];
}

/* Set bits in a word (no POPCNT assumed: it is not in baseline x86-64). */
static inline unsigned bits_set(uint64_t x)
{
	unsigned n = 0;

	for (; x; x &= x - 1)
		n++;
	return n;
}

static inline unsigned cpumask_weight(const struct cpumask *m)
{
	unsigned n = 0;

	for (int i = 0; i < CPUMASK_WORDS; i++)
		n += bits_set(m->bits[i]);
	return n;
}

static inline bool cpumask_empty(const struct cpumask *m)
{
	for (int i = 0; i < CPUMASK_WORDS; i++) {
		if (m->bits[i])
			return false;
	}
	return true;
}

/* The first set bit at or after cpu, or MAX_CPUS: skips empty words. */
static inline unsigned cpumask_next(const struct cpumask *m, unsigned cpu)
{
	while (cpu < MAX_CPUS) {
		uint64_t word = m->bits[cpu / 64] >> (cpu % 64);

		if (word)
			return cpu + (unsigned)__builtin_ctzll(word);
		cpu = (cpu / 64 + 1) * 64;
	}
	return MAX_CPUS;
}

#define for_each_cpu(cpu, mask)                                 \
	for ((cpu) = cpumask_next((mask), 0); (cpu) < MAX_CPUS; \
	     (cpu) = cpumask_next((mask), (cpu) + 1))

#endif
