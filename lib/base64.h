/* SPDX-License-Identifier: MIT */
/*
 * Base64 encoding (RFC 4648 section 4: the standard alphabet, '=' padding):
 * the QR codes carry text, which phone apps pass on unchanged, where they
 * would mangle binary (docs/qr.md). Pure logic.
 */
#ifndef LIB_BASE64_H
#define LIB_BASE64_H

#include "lib/types.h"

/* Characters that n bytes encode to (the NUL not counted). */
#define BASE64_LEN(n) (((n) + 2) / 3 * 4)

/*
 * Encodes n bytes into out: returns the characters written (0 for n = 0),
 * NUL-terminated when cap leaves room, or 0 if cap < BASE64_LEN(n) (out is then
 * untouched).
 */
size_t base64_encode(const uint8_t *in, size_t n, char *out, size_t cap);

#endif
