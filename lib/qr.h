/* SPDX-License-Identifier: MIT */
/*
 * A QR Code Model 2 encoder (ISO/IEC 18004:2006), byte mode only: the kernel
 * shows its benchmark results as QR codes for a phone to photograph when a
 * machine has no serial port (docs/qr.md). Pure logic, no allocation.
 *
 * Usage: pick a version with qr_fit(), encode, then draw qr_module(x, y)
 * for every x, y < size, with a light margin (the quiet zone) of at least
 * four modules around the symbol.
 *
 * Not reentrant: qr_encode() works in static scratch memory (about 11 KiB:
 * the map of function modules and two codeword buffers); the kernel calls
 * it from one thread at a time.
 */
#ifndef LIB_QR_H
#define LIB_QR_H

#include "lib/types.h"

/* Error correction levels (section 6.5.1): about 7, 15, 25, 30 % of the
 * codewords can be restored. */
enum qr_ecc { QR_ECC_L, QR_ECC_M, QR_ECC_Q, QR_ECC_H };

#define QR_VERSION_MIN	 1
#define QR_VERSION_MAX	 40
#define QR_SIZE(version) (17 + 4 * (version)) /* modules per side */
#define QR_SIZE_MAX	 QR_SIZE(QR_VERSION_MAX)

struct qr_code {
	unsigned version;
	unsigned size; /* QR_SIZE(version) */
	/* One bit per module, row-major: bit (y * size + x), 1 = dark. */
	uint8_t modules[(QR_SIZE_MAX * QR_SIZE_MAX + 7) / 8];
};

/* Data bytes byte mode holds at this version and level (0 for bad args). */
size_t qr_capacity(unsigned version, enum qr_ecc ecc);

/* Smallest version in [1, max_version] that holds len bytes at ecc, 0 if
 * none does. */
unsigned qr_fit(size_t len, enum qr_ecc ecc, unsigned max_version);

/*
 * Encodes len bytes at exactly this version: false if they do not fit or
 * the arguments are bad (out is then left undefined). Chooses the mask
 * with the lowest penalty, as the standard says (section 6.8.2).
 */
bool qr_encode(const uint8_t *data, size_t len, unsigned version,
	       enum qr_ecc ecc, struct qr_code *out);

/* True for a dark module; x, y < size (false, light, off the symbol). */
bool qr_module(const struct qr_code *qr, unsigned x, unsigned y);

#endif
