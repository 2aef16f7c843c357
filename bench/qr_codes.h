/* SPDX-License-Identifier: MIT */
/*
 * The complete results as QR codes (docs/qr.md): the record of the run
 * (bench/results.h), compressed (zlib), in base64, cut into as many codes
 * as it takes, each one's text `shootdown K/N ID DATA`: K of N, the run's
 * ID (the zlib stream's Adler-32, so codes of two runs never mix) and its
 * share of the base64. `tools/bench/bench.py import-qr` reads them back.
 */
#ifndef BENCH_QR_CODES_H
#define BENCH_QR_CODES_H

#include "lib/types.h"

/*
 * Compresses the record and cuts it for codes of at most max_version
 * that fit on this screen below one line of text; returns how many codes
 * it takes, or 0 after saying on serial why there are none.
 */
unsigned qr_codes_prepare(unsigned max_version);

/* Draws code k (0-based) with its label line; false if it cannot. */
bool qr_codes_show(unsigned k);

#endif
