/* SPDX-License-Identifier: MIT */
/*
 * Memory that CPUs share without a lock: the TLB protocol's per-CPU states,
 * address-space masks and generations, flush requests, the cross-CPU call
 * queues, and the IPC wait words. Each such variable has a type that only
 * these accessors open: SHARED(T) wraps a T in a struct, so a plain access
 * (mm->tlb_gen++, if (c->is_lazy)) does not compile. Every access names the
 * ordering it needs, in C11 terms:
 *
 *   shared_load(p, order)             order: RELAXED or ACQUIRE
 *   shared_store(p, v, order)         order: RELAXED or RELEASE
 *   shared_fetch_add(p, v, order)     locked read-modify-writes; on x86
 *   shared_add_fetch(p, v, order)     every one is a full barrier, but
 *   shared_fetch_or(p, v, order)      the compiler honours only the order
 *   shared_fetch_and(p, v, order)     given
 *   shared_exchange(p, v, order)
 *   shared_set_bit(words, bit)        locked set or clear of one bit of a
 *   shared_clear_bit(words, bit)      shared_u64 array; full barriers, to
 *                                     the compiler too (SEQ_CST)
 *   shared_cas(p, expected, v, success, failure)  compare-and-swap; false
 *                                     and *expected (a plain T) updated on
 *                                     a mismatch
 *   shared_read(dst, src, size)       a plain copy of a block that another
 *   shared_write(dst, src, size)      CPU reads or wrote, ordered by a
 *                                     release/acquire pair around it
 *
 * p is a pointer to a SHARED(T) (or a named one, shared_u64); the values
 * going in and out are plain T. shared_read and shared_write copy whole
 * blocks through void pointers: the flush requests they carry are
 * SHARED(struct ...) where they are declared, so they are not read or
 * written field by field either. Each one starts as zeroed memory (static
 * storage, kzalloc) before another CPU can see it: that needs no access.
 *
 * The wrapped member is named shared_raw: only this file and the
 * simulator's SIM_PEEK (tests/host/tlb_sim.h) reach it, never a cast or a
 * .shared_raw elsewhere. tests/shared/test_plain_access.py checks that, and
 * that plain accesses fail to compile, with both halves below. The wrapper
 * has T's size and alignment, so the kernel's generated code is what it
 * was with a plain T.
 *
 * In the kernel they are the compiler's __atomic builtins: on x86 an
 * aligned load or store of up to 8 bytes is a single access, a locked
 * instruction is a full barrier, and stores become visible in program
 * order (TSO). The orders are still written out for the compiler, which
 * may move a relaxed store above an earlier one: a store whose order
 * matters is a release, never a relaxed store justified by "x86 keeps
 * store order".
 *
 * In the TLB simulator (tests/host/tlb_sim, built with SHOOTDOWN_SIM) each
 * one is a scheduling point into simulated memory: per-CPU store buffers
 * that drain at locked operations, fences and serializing instructions,
 * loads that see their own CPU's buffered stores first, and relaxed stores
 * that may drain out of order (what the compiler may do). That is how a
 * missing fence or release shows there (docs/tlb-simulator.md). A plain
 * access would be neither a scheduling point nor buffered, so a lost update
 * written that way would pass unseen: the types make it impossible to
 * write. Spinlocks are the exception: their words are plain, used only by
 * sync/spinlock.h.
 */
#ifndef SYNC_SHARED_H
#define SYNC_SHARED_H

#include "lib/types.h"

/* A T that CPUs share without a lock: open only through the accessors. */
#define SHARED(T)             \
	struct {              \
		T shared_raw; \
	}
/* The named ones, for arrays and parameters (an unnamed SHARED(T) is a new
 * type each time it is written). */
typedef SHARED(uint64_t) shared_u64;

/* The wrapped T of p, a pointer to a SHARED(T): for the accessors alone. */
#define SHARED_RAW(p) (&(p)->shared_raw)

#ifndef SHOOTDOWN_SIM

#define shared_load(p, order)	  __atomic_load_n(SHARED_RAW(p), (order))
#define shared_store(p, v, order) __atomic_store_n(SHARED_RAW(p), (v), (order))
#define shared_fetch_add(p, v, order) \
	__atomic_fetch_add(SHARED_RAW(p), (v), (order))
#define shared_add_fetch(p, v, order) \
	__atomic_add_fetch(SHARED_RAW(p), (v), (order))
#define shared_fetch_or(p, v, order) \
	__atomic_fetch_or(SHARED_RAW(p), (v), (order))
#define shared_fetch_and(p, v, order) \
	__atomic_fetch_and(SHARED_RAW(p), (v), (order))
#define shared_exchange(p, v, order) \
	__atomic_exchange_n(SHARED_RAW(p), (v), (order))
#define shared_cas(p, expected, v, success, failure)                       \
	__atomic_compare_exchange_n(SHARED_RAW(p), (expected), (v), false, \
				    (success), (failure))
#define shared_read(dst, src, size)  __builtin_memcpy((dst), (src), (size))
#define shared_write(dst, src, size) __builtin_memcpy((dst), (src), (size))

/*
 * LOCK BTS and BTR take the bit's number whole (the word is found from it),
 * so a set or clear is one instruction. "memory": the compiler keeps every
 * access on its side, as the barrier the CPU makes of it.
 */
static inline void shared_set_bit(shared_u64 *words, unsigned bit)
{
	__asm__ volatile("lock btsq %1, %0"
			 : "+m"(*SHARED_RAW(words))
			 : "r"((uint64_t)bit)
			 : "memory", "cc");
}

static inline void shared_clear_bit(shared_u64 *words, unsigned bit)
{
	__asm__ volatile("lock btrq %1, %0"
			 : "+m"(*SHARED_RAW(words))
			 : "r"((uint64_t)bit)
			 : "memory", "cc");
}

#else /* the simulator's memory: tests/host/tlb_sim_memory.c */

enum sim_rmw {
	SIM_RMW_ADD,
	SIM_RMW_OR,
	SIM_RMW_AND,
	SIM_RMW_XCHG,
};

uint64_t sim_shared_load(const void *p, size_t size, int order);
void sim_shared_store(void *p, size_t size, uint64_t v, int order);
/* Returns the old value. */
uint64_t sim_shared_rmw(void *p, size_t size, enum sim_rmw op, uint64_t v,
			int order);
bool sim_shared_cas(void *p, size_t size, void *expected, uint64_t v,
		    int success, int failure);
void sim_shared_read(void *dst, const void *src, size_t size);
void sim_shared_write(void *dst, const void *src, size_t size);

/* The value as the wrapped type (integers, bools and pointers). */
#define SIM_AS(p, x) ((__typeof__(*SHARED_RAW(p)))(uintptr_t)(x))
#define SIM_SIZE(p)  sizeof(*SHARED_RAW(p))
#define SIM_RMW(p, op, v, order)                                   \
	SIM_AS(p, sim_shared_rmw(SHARED_RAW(p), SIM_SIZE(p), (op), \
				 (uint64_t)(v), (order)))

#define shared_load(p, order) \
	SIM_AS(p, sim_shared_load(SHARED_RAW(p), SIM_SIZE(p), (order)))
#define shared_store(p, v, order)                                              \
	sim_shared_store(SHARED_RAW(p), SIM_SIZE(p), (uint64_t)(uintptr_t)(v), \
			 (order))
#define shared_fetch_add(p, v, order) SIM_RMW(p, SIM_RMW_ADD, v, order)
#define shared_add_fetch(p, v, order) (SIM_RMW(p, SIM_RMW_ADD, v, order) + (v))
#define shared_fetch_or(p, v, order)  SIM_RMW(p, SIM_RMW_OR, v, order)
#define shared_fetch_and(p, v, order) SIM_RMW(p, SIM_RMW_AND, v, order)
#define shared_exchange(p, v, order)  SIM_RMW(p, SIM_RMW_XCHG, v, order)
#define shared_cas(p, expected, v, success, failure)           \
	sim_shared_cas(SHARED_RAW(p), SIM_SIZE(p), (expected), \
		       (uint64_t)(uintptr_t)(v), (success), (failure))
#define shared_read(dst, src, size)  sim_shared_read((dst), (src), (size))
#define shared_write(dst, src, size) sim_shared_write((dst), (src), (size))
#define shared_set_bit(words, bit)                                  \
	shared_fetch_or(&(words)[(bit) / 64], 1ULL << ((bit) % 64), \
			__ATOMIC_SEQ_CST)
#define shared_clear_bit(words, bit)                                    \
	shared_fetch_and(&(words)[(bit) / 64], ~(1ULL << ((bit) % 64)), \
			 __ATOMIC_SEQ_CST)

#endif

#endif
