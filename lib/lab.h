/* SPDX-License-Identifier: MIT */
/*
 * A lab tree's stubs (docs/labs.md). `make lab-tree` replaces the code a
 * student writes by LAB_UNWRITTEN("L3", "labs/L3-shootdown.md"), which stops
 * whatever runs it (the kernel, a host test, the TLB simulator) with a
 * message naming the lab, the function and the lab's handout, instead of
 * running on without the code.
 * The reference tree never calls it; each program that links lab code
 * defines lab_unwritten in its own way of stopping.
 */
#ifndef LIB_LAB_H
#define LIB_LAB_H

#include "lib/types.h"

__noreturn void lab_unwritten(const char *lab, const char *handout,
			      const char *function);

#define LAB_UNWRITTEN(lab, handout) lab_unwritten(lab, handout, __func__)

#endif
