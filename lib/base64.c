/* SPDX-License-Identifier: MIT */
/*
 * Base64 (RFC 4648 section 4): every 3 bytes become 4 characters of 6 bits
 * each, the first byte's high bits first. A last group of 1 or 2 bytes is
 * padded with zero bits to whole characters, then with '=' to 4.
 */

#include "lib/base64.h"

static const char alphabet[64] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

#define PAD '='

size_t base64_encode(const uint8_t *in, size_t n, char *out, size_t cap)
{
	size_t len, o = 0;

	/* n bytes give more than n characters: a wrapped length is too big. */
	if (n > (SIZE_MAX - 2) / 4 * 3 || (n && !in) || !out)
		return 0;
	len = BASE64_LEN(n);
	if (cap < len)
		return 0;
	for (size_t i = 0; i < n; i += 3) {
		size_t left = n - i;
		uint32_t group = (uint32_t)in[i] << 16;

		if (left > 1)
			group |= (uint32_t)in[i + 1] << 8;
		if (left > 2)
			group |= in[i + 2];
		out[o++] = alphabet[group >> 18 & 63];
		out[o++] = alphabet[group >> 12 & 63];
		out[o++] = left > 1 ? alphabet[group >> 6 & 63] : PAD;
		out[o++] = left > 2 ? alphabet[group & 63] : PAD;
	}
	if (cap > len)
		out[len] = '\0';
	return len;
}
