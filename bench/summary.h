/* SPDX-License-Identifier: MIT */
/*
 * The end of the benchmarks: the headline answers, each a sentence with
 * its number, on one screen that fits 80x25 text and the framebuffer, and
 * on serial as `bench: summary KEY SENTENCE` lines, which tools/bench/bench.py
 * keeps in the results JSON (docs/bench.md says which rows each one reads).
 */
#ifndef BENCH_SUMMARY_H
#define BENCH_SUMMARY_H

/* Writes the summary from the kept rows (bench/results.h): serial, screen. */
void bench_summary_print(void);

/*
 * Shows it on the screen again, on a clear page, with a footer line if
 * not NULL (bench/screen.c says what comes next).
 */
void bench_summary_show(const char *footer);

#endif
