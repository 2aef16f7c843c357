/* SPDX-License-Identifier: MIT */
/*
 * Ticket spinlocks: CPUs take a ticket and are served in order, so no CPU
 * starves under contention (a test-and-set lock has no such promise).
 *
 * spin_lock_irqsave disables interrupts on this CPU first: a lock that an
 * interrupt handler may also take must be held with interrupts off, or the
 * handler would spin forever on its own CPU's lock.
 */
#ifndef SYNC_SPINLOCK_H
#define SYNC_SPINLOCK_H

#include "lib/types.h"
#include "arch/x86.h"

struct spinlock {
	uint32_t next_ticket; /* taken by arriving CPUs (atomic add) */
	uint32_t now_serving; /* written only by the holder, on unlock */
};

#define SPINLOCK_INIT \
	{             \
		0, 0  \
	}

/* Waits for our turn: out of line, so a lock nobody holds costs little. */
static __attribute__((noinline, unused)) void
spin_wait_turn(struct spinlock *lock, uint32_t ticket)
{
	while (__atomic_load_n(&lock->now_serving, __ATOMIC_ACQUIRE) != ticket)
		cpu_relax();
}

static inline void spin_lock(struct spinlock *lock)
{
	uint32_t ticket =
		__atomic_fetch_add(&lock->next_ticket, 1, __ATOMIC_RELAXED);

	/* Acquire: the critical section's accesses stay after this load
	 * (and after spin_wait_turn's). */
	if (unlikely(__atomic_load_n(&lock->now_serving, __ATOMIC_ACQUIRE) !=
		     ticket))
		spin_wait_turn(lock, ticket);
}

/* Takes the lock only if nobody holds it or waits for it. */
static inline bool spin_trylock(struct spinlock *lock)
{
	uint32_t serving =
		__atomic_load_n(&lock->now_serving, __ATOMIC_RELAXED);
	uint32_t expected = serving;

	/* Acquire on success, as spin_lock's load. */
	return __atomic_compare_exchange_n(&lock->next_ticket, &expected,
					   serving + 1, false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

static inline void spin_unlock(struct spinlock *lock)
{
	/* Release: the critical section's accesses stay before this store;
	 * pairs with the acquire load in spin_lock. Only the holder writes
	 * now_serving, so the increment need not be atomic: one ADD to
	 * memory, whose store x86 keeps after every earlier access (a release
	 * for the CPU), and "memory" keeps the compiler from moving any. */
	__asm__ volatile("addl $1, %0" : "+m"(lock->now_serving) : : "memory");
}

static inline bool spin_is_locked(struct spinlock *lock)
{
	return __atomic_load_n(&lock->next_ticket, __ATOMIC_RELAXED) !=
	       __atomic_load_n(&lock->now_serving, __ATOMIC_RELAXED);
}

static inline uint64_t spin_lock_irqsave(struct spinlock *lock)
{
	uint64_t flags = irq_save();

	spin_lock(lock);
	return flags;
}

static inline void spin_unlock_irqrestore(struct spinlock *lock, uint64_t flags)
{
	spin_unlock(lock);
	irq_restore(flags);
}

#endif
