/* SPDX-License-Identifier: MIT */
/*
 * The grade's record of what each sample of a row did, built into the
 * injection kernel alone (lib/inject.h): the default kernel measures
 * without it.
 *
 * A sample runs from bench_more() saying yes to bench_add(). In between,
 * the probe notes in order each bench_clock() read and each unit of work a
 * benchmark reports (tlb_reach's passes over its pages, bench/reach.c),
 * with whether interrupts were on. bench_end() then prints, for a row
 * whose samples reported work, one line after the row:
 *
 *	bench: probe NAME PARAMS batch=B shape=S samples=N unlike=U
 *
 * S is the first sample's record: a pass over P pages is P (Pi with
 * interrupts on), passes are joined by commas, and the first and second
 * clock reads are [ and ]: "4[4]" is one untimed pass over 4 pages, then
 * one between the clock reads. U counts the samples whose record differs
 * from the first one. The grade reads it (tools/labs/lab_checks.py); it
 * depends on no timing.
 */
#ifndef BENCH_PROBE_H
#define BENCH_PROBE_H

#include "lib/inject.h"
#include "lib/types.h"

/* The harness: a row begins, a sample begins and ends, the row ends. */
void bench_probe_row_begin(void);
void bench_probe_sample_begin(void);
void bench_probe_sample_end(void);
void bench_probe_row_end(const char *bench, const char *params, unsigned batch);

/* bench_clock() was read. */
void bench_probe_clock(void);

/* A benchmark did one unit of its work, over this many pages. */
void bench_probe_work(unsigned pages);

#endif
