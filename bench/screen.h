/* SPDX-License-Identifier: MIT */
/*
 * The results on a machine that has only a screen (a laptop booted from a
 * USB stick: no serial port, no keyboard the kernel reads): after the
 * summary (bench/summary.h), every row in pages that change by themselves,
 * then QR codes carrying the complete results (bench/qr_codes.h), as
 * results_screen= says. Each page is announced on serial (`screen: ...`)
 * for the tests that photograph them.
 */
#ifndef BENCH_SCREEN_H
#define BENCH_SCREEN_H

/*
 * Runs the pages and codes after the benchmarks; returns when they have
 * been shown (or are not wanted), never under results_screen=cycle.
 */
void bench_screen_show(void);

#endif
