// SPDX-License-Identifier: MIT
/*
 * The results as QR codes (bench/qr_codes.h, docs/qr.md).
 *
 * Why this shape: a phone's camera app and `zbarimg` both hand back a
 * code's text, and text survives every one of them where binary does not,
 * so each code carries ASCII (base64) in byte mode. Level M restores 15%
 * of the codewords: a photograph of a screen is sharp and flat, so what it
 * loses is a glint or a moire band, not a torn corner; Q would take a
 * third more codes for damage a screen does not have. The codes are as
 * large as the screen allows with modules of at least four pixels
 * (console/fbcon.h), so that there are few of them; the data is spread
 * evenly, so the last code is not a sliver.
 */
#include "bench/qr_codes.h"
#include "bench/results.h"
#include "console/console.h"
#include "console/kprintf.h"
#include "lib/base64.h"
#include "lib/deflate.h"
#include "lib/format.h"
#include "lib/qr.h"
#include "lib/string.h"
#include "mm/heap.h"

#define QR_LEVEL QR_ECC_M
/* The standard's quiet zone: four light modules around the symbol. */
#define QR_QUIET 4
/* The codes sit below one line of text: their label. */
#define LABEL_ROWS 1
/* `shootdown K/N ID `: the most a header takes (K, N up to 9999). */
#define HEADER_MAX 32
#define CODES_MAX  9999
#define ID_BYTES   4 /* the zlib stream's Adler-32, its last four bytes */

static struct {
	char *base64; /* the whole record, compressed, in base64 */
	size_t length;
	unsigned count, version;
	size_t per_code; /* base64 characters in each code but the last */
	uint32_t id;
} codes;

static struct qr_code code;
static uint8_t payload[HEADER_MAX + 3000];

static size_t header(char *buf, size_t size, unsigned k, unsigned n)
{
	return (size_t)ksnprintf(buf, size, "shootdown %u/%u %08x ", k, n,
				 codes.id);
}

/*
 * How many codes of this version the base64 takes: each holds its header
 * (longest for K = N) and then data.
 */
static unsigned codes_needed(unsigned version)
{
	char h[HEADER_MAX];
	size_t capacity = qr_capacity(version, QR_LEVEL);

	for (unsigned n = 1; n <= CODES_MAX; n++) {
		size_t room =
			capacity - MIN(capacity, header(h, sizeof(h), n, n));

		if (room && (size_t)n * room >= codes.length)
			return n;
	}
	return 0;
}

/* The largest version that fits below the label, quiet zone included. */
static unsigned screen_version(unsigned max_version)
{
	unsigned room = console_screen_matrix_room(LABEL_ROWS);

	if (room < QR_SIZE(QR_VERSION_MIN) + 2 * QR_QUIET)
		return 0;
	return MIN(max_version,
		   (room - 2 * QR_QUIET - QR_SIZE(QR_VERSION_MIN)) / 4 +
			   QR_VERSION_MIN);
}

static bool encode_record(void)
{
	size_t length, bound, compressed_length = 0;
	bool whole;
	const char *text = bench_record_text(&length, &whole);
	uint8_t *compressed;

	if (!text || !length) {
		kprintf_serial("screen: no QR codes: no results were kept\n");
		return false;
	}
	if (!whole) {
		kprintf_serial("screen: no QR codes: the results outgrew their "
			       "buffer; the serial log has them all\n");
		return false;
	}
	bound = ZLIB_BOUND(length);
	compressed = kmalloc(bound);
	if (compressed)
		compressed_length = zlib_compress((const uint8_t *)text, length,
						  compressed, bound);
	if (!compressed || !compressed_length) {
		kfree(compressed);
		kprintf_serial("screen: no QR codes: no memory to compress "
			       "%zu bytes of results\n",
			       length);
		return false;
	}
	kfree(codes.base64);
	codes.base64 = kmalloc(BASE64_LEN(compressed_length) + 1);
	codes.length =
		codes.base64 ? base64_encode(compressed, compressed_length,
					     codes.base64,
					     BASE64_LEN(compressed_length) + 1)
			     : 0;
	codes.id = 0;
	for (size_t i = compressed_length - ID_BYTES; i < compressed_length;
	     i++)
		codes.id = codes.id << 8 | compressed[i];
	kfree(compressed);
	if (!codes.length) {
		kprintf_serial("screen: no QR codes: no memory for them\n");
		return false;
	}
	kprintf_serial("screen: results: %zu bytes, %zu compressed, %zu in "
		       "base64\n",
		       length, compressed_length, codes.length);
	return true;
}

unsigned qr_codes_prepare(unsigned max_version)
{
	unsigned largest = screen_version(max_version);
	char h[HEADER_MAX];

	codes.count = 0;
	if (!largest) {
		kprintf_serial("screen: no QR codes: the screen is too small "
			       "for one\n");
		return 0;
	}
	if (!encode_record())
		return 0;
	codes.count = codes_needed(largest);
	if (!codes.count) {
		kprintf_serial("screen: no QR codes: the results need more "
			       "than %u\n",
			       CODES_MAX);
		return 0;
	}
	/* As many codes as the largest version needs, each as small as it
	 * can be: the data spread evenly over them. */
	codes.per_code = (codes.length + codes.count - 1) / codes.count;
	codes.version = qr_fit(header(h, sizeof(h), codes.count, codes.count) +
				       codes.per_code,
			       QR_LEVEL, largest);
	kprintf_serial("screen: %u QR codes, version %u (%u modules), level M, "
		       "id %08x\n",
		       codes.count, codes.version, QR_SIZE(codes.version),
		       codes.id);
	return codes.count;
}

static bool dark_module(const void *ctx, unsigned x, unsigned y)
{
	return qr_module(ctx, x, y);
}

bool qr_codes_show(unsigned k)
{
	size_t first = (size_t)k * codes.per_code, n, used;

	if (k >= codes.count)
		return false;
	n = MIN(codes.per_code, codes.length - first);
	used = header((char *)payload, sizeof(payload), k + 1, codes.count);
	memcpy(payload + used, codes.base64 + first, n);
	if (!qr_encode(payload, used + n, codes.version, QR_LEVEL, &code)) {
		kprintf_serial("screen: QR code %u/%u did not encode\n", k + 1,
			       codes.count);
		return false;
	}
	console_screen_clear();
	kprintf_screen("shootdown results: QR code %u/%u (photograph each; "
		       "tools/bench/bench.py import-qr)",
		       k + 1, codes.count);
	return console_screen_matrix(LABEL_ROWS, code.size, QR_QUIET,
				     dark_module, &code);
}
