// SPDX-License-Identifier: MIT
/*
 * The QR pieces of lib/ on the command line, for tests/qr/test_qr.py (which
 * decodes the images with zbarimg) and for trying them by hand. Reads all
 * of stdin, writes to stdout:
 *
 *	qr_tool qr [--ecc L|M|Q|H] [--version V] [--scale N] [--pbm]
 *		the input as one QR code (byte mode), a 4-module quiet zone
 *		round it, N pixels per module (default 4): a PGM image, or a
 *		PBM with --pbm. Without --version, the smallest that fits.
 *	qr_tool capacity [--ecc L|M|Q|H] --version V
 *		the bytes that version holds at that level (reads no input)
 *	qr_tool zlib		the input compressed by zlib_compress()
 *	qr_tool base64		the input in base64, no newline
 *
 * Exits 1 with a message on stderr when the input does not fit, 2 on a
 * usage error.
 */
#include "lib/base64.h"
#include "lib/deflate.h"
#include "lib/qr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUIET_ZONE 4  /* modules of light margin (section 6.3.8) */
#define MAX_SCALE  64 /* pixels per module */
#define MAX_INPUT  (64u << 20)

static struct qr_code code; /* 4 KiB: static rather than on the stack */

static void usage(void)
{
	fprintf(stderr,
		"usage: qr_tool qr [--ecc L|M|Q|H] [--version 1-40] "
		"[--scale 1-%d] [--pbm] < data > image\n"
		"       qr_tool capacity [--ecc L|M|Q|H] --version 1-40\n"
		"       qr_tool zlib < data > data.z\n"
		"       qr_tool base64 < data > text\n",
		MAX_SCALE);
	exit(2);
}

static uint8_t *read_all(FILE *f, size_t *len)
{
	size_t cap = 4096, n = 0;
	uint8_t *buf = malloc(cap);

	while (buf) {
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (n < cap) {
			if (ferror(f)) {
				perror("qr_tool: reading stdin");
				exit(1);
			}
			*len = n;
			return buf;
		}
		if (cap >= MAX_INPUT) {
			fprintf(stderr, "qr_tool: input over %u bytes\n",
				MAX_INPUT);
			exit(1);
		}
		cap *= 2;
		buf = realloc(buf, cap);
	}
	fprintf(stderr, "qr_tool: out of memory\n");
	exit(1);
}

static unsigned number_arg(const char *name, const char *value, unsigned min,
			   unsigned max)
{
	char *end;
	unsigned long v;

	if (!value)
		usage();
	v = strtoul(value, &end, 10);
	if (!*value || *end || v < min || v > max) {
		fprintf(stderr, "qr_tool: %s %s: give a number from %u to %u\n",
			name, value, min, max);
		exit(2);
	}
	return (unsigned)v;
}

static enum qr_ecc ecc_arg(const char *value)
{
	static const char levels[] = "LMQH";

	if (!value || strlen(value) != 1 || !strchr(levels, value[0])) {
		fprintf(stderr, "qr_tool: --ecc %s: give L, M, Q or H\n",
			value ? value : "(nothing)");
		exit(2);
	}
	return (enum qr_ecc)(strchr(levels, value[0]) - levels);
}

/* Pixel (px, py) of the image: dark or light. */
static bool dark_pixel(unsigned px, unsigned py, unsigned scale)
{
	unsigned x = px / scale, y = py / scale;

	if (x < QUIET_ZONE || y < QUIET_ZONE)
		return false;
	return qr_module(&code, x - QUIET_ZONE, y - QUIET_ZONE);
}

static void write_image(unsigned scale, bool pbm)
{
	unsigned side = (code.size + 2 * QUIET_ZONE) * scale;

	printf("%s\n%u %u\n%s", pbm ? "P4" : "P5", side, side,
	       pbm ? "" : "255\n");
	for (unsigned py = 0; py < side; py++) {
		uint8_t byte = 0;

		for (unsigned px = 0; px < side; px++) {
			bool dark = dark_pixel(px, py, scale);

			if (!pbm) {
				putchar(dark ? 0 : 255);
				continue;
			}
			/* PBM: 1 = black, 8 pixels a byte, rows padded. */
			byte |= (uint8_t)(dark << (7 - px % 8));
			if (px % 8 == 7 || px + 1 == side) {
				putchar(byte);
				byte = 0;
			}
		}
	}
}

struct qr_options {
	enum qr_ecc ecc;
	unsigned version; /* 0: the smallest that fits */
	unsigned scale;
	bool pbm;
};

static struct qr_options parse_options(int argc, char **argv)
{
	struct qr_options o = {.ecc = QR_ECC_M, .scale = 4};

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--ecc"))
			o.ecc = ecc_arg(argv[++i]);
		else if (!strcmp(argv[i], "--version"))
			o.version = number_arg("--version", argv[++i],
					       QR_VERSION_MIN, QR_VERSION_MAX);
		else if (!strcmp(argv[i], "--scale"))
			o.scale =
				number_arg("--scale", argv[++i], 1, MAX_SCALE);
		else if (!strcmp(argv[i], "--pbm"))
			o.pbm = true;
		else
			usage();
	}
	return o;
}

static int cmd_capacity(int argc, char **argv)
{
	struct qr_options o = parse_options(argc, argv);

	if (!o.version)
		usage();
	printf("%zu\n", qr_capacity(o.version, o.ecc));
	return 0;
}

static int cmd_qr(int argc, char **argv, const uint8_t *in, size_t n)
{
	struct qr_options o = parse_options(argc, argv);
	enum qr_ecc ecc = o.ecc;
	unsigned version = o.version;

	if (!version)
		version = qr_fit(n, ecc, QR_VERSION_MAX);
	if (!version || !qr_encode(in, n, version, ecc, &code)) {
		fprintf(stderr,
			"qr_tool: %zu bytes do not fit version %u level %c "
			"(it holds %zu)\n",
			n, version ? version : QR_VERSION_MAX, "LMQH"[ecc],
			qr_capacity(version ? version : QR_VERSION_MAX, ecc));
		return 1;
	}
	write_image(o.scale, o.pbm);
	return 0;
}

static int cmd_zlib(const uint8_t *in, size_t n)
{
	size_t cap = ZLIB_BOUND(n), len;
	uint8_t *out = malloc(cap);

	if (!out) {
		fprintf(stderr, "qr_tool: out of memory\n");
		return 1;
	}
	len = zlib_compress(in, n, out, cap);
	if (!len) {
		fprintf(stderr, "qr_tool: zlib_compress refused %zu bytes\n",
			n);
		return 1;
	}
	fwrite(out, 1, len, stdout);
	free(out);
	return 0;
}

static int cmd_base64(const uint8_t *in, size_t n)
{
	size_t cap = BASE64_LEN(n) + 1, len;
	char *out = malloc(cap);

	if (!out) {
		fprintf(stderr, "qr_tool: out of memory\n");
		return 1;
	}
	len = base64_encode(in, n, out, cap);
	if (len != BASE64_LEN(n) || out[len]) {
		fprintf(stderr,
			"qr_tool: base64_encode gave %zu chars of %zu\n", len,
			(size_t)BASE64_LEN(n));
		return 1;
	}
	fwrite(out, 1, len, stdout);
	free(out);
	return 0;
}

int main(int argc, char **argv)
{
	size_t n;
	uint8_t *in;
	int status;
	bool qr;

	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "capacity"))
		return cmd_capacity(argc - 2, argv + 2);
	qr = !strcmp(argv[1], "qr");
	if (!qr && strcmp(argv[1], "zlib") && strcmp(argv[1], "base64"))
		usage();
	if (!qr && argc > 2)
		usage();
	in = read_all(stdin, &n);
	if (qr)
		status = cmd_qr(argc - 2, argv + 2, in, n);
	else if (!strcmp(argv[1], "zlib"))
		status = cmd_zlib(in, n);
	else
		status = cmd_base64(in, n);
	free(in);
	if (fflush(stdout)) {
		perror("qr_tool: writing stdout");
		return 1;
	}
	return status;
}
