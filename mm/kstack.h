/* SPDX-License-Identifier: MIT */
/*
 * Kernel stacks with guard pages. Each stack gets a fixed slot in the
 * kernel-stack window (mm/layout.h): KSTACK_SIZE bytes mapped at the top of
 * the slot, the rest of the slot left unmapped, so running off the bottom
 * of a stack faults instead of overwriting the stack below.
 */
#ifndef MM_KSTACK_H
#define MM_KSTACK_H

#include "kernel/types.h"

#define KSTACK_SIZE	 0x4000ULL  /* 16 KiB */
#define KSTACK_SLOT_SIZE 0x10000ULL /* 64 KiB: 48 KiB of guard below */

/* A new stack; returns its top (the initial RSP), or 0 when out of memory. */
uint64_t kstack_alloc(void);

/*
 * Frees the stack whose top kstack_alloc returned: unmaps it, flushes the
 * range on every CPU, then frees its frames and slot. Nothing may run on it.
 */
void kstack_free(uint64_t top);

/* Stacks allocated and not yet freed. */
uint64_t kstack_in_use(void);

/* True when va lies in the unmapped guard part of a stack slot. */
bool kstack_is_guard(uint64_t va);

#endif
