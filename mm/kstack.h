/* SPDX-License-Identifier: MIT */
/*
 * Kernel stacks with guard pages. Each stack gets a fixed slot in the
 * kernel-stack window (arch/layout.h): KSTACK_SIZE bytes mapped at the top of
 * the slot, the rest of the slot left unmapped, so running off the bottom
 * of a stack faults instead of overwriting the stack below.
 */
#ifndef MM_KSTACK_H
#define MM_KSTACK_H

#include "lib/types.h"

#define KSTACK_SIZE	 0x4000ULL  /* 16 KiB */
#define KSTACK_SLOT_SIZE 0x10000ULL /* 64 KiB: 48 KiB of guard below */
/*
 * Stacks in use at once, at most: threads here number in the hundreds (the
 * TLB oracle's ORACLE_WORKERS_MAX, 209, is the most). 4096 stacks are 64 MiB
 * of memory; they span 256 MiB of the kernel-stack window, which bounds the
 * page tables that map them (mm/kstack.c).
 */
#define KSTACK_MAX 4096

/*
 * A new stack; returns its top (the initial RSP), or 0 when KSTACK_MAX
 * stacks are in use or memory ran out (for a page or a page table: what
 * was mapped is unmapped, flushed and freed, the slot given back).
 */
uint64_t kstack_alloc(void);

/*
 * Frees the stack whose top kstack_alloc returned: unmaps it, flushes the
 * range on every CPU, then frees its frames and slot. The page tables that
 * mapped it are kept for the slot's next stack. Nothing may run on it.
 */
void kstack_free(uint64_t top);

/* Stacks allocated and not yet freed. */
uint64_t kstack_in_use(void);

/* True when va lies in the unmapped guard part of a stack slot. */
bool kstack_is_guard(uint64_t va);

#endif
