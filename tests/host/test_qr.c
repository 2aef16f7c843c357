// SPDX-License-Identifier: MIT
/*
 * lib/qr.c, lib/deflate.c and lib/base64.c against what the standards
 * print, without a decoder (tests/qr/test_qr.py decodes images with
 * zbarimg): byte capacities (ISO/IEC 18004 Table 7), the choice of
 * version, refused arguments, Reed-Solomon codewords of two worked
 * examples, the function patterns and the format and version information
 * read back from encoded symbols (Tables C.1, D.1, E.1), every version and
 * level read back codeword by codeword without error correction, the
 * chosen mask's penalty the lowest; base64's test vectors (RFC 4648
 * section 10), Adler-32 of a known string, and zlib_compress() into
 * buffers one byte too small (tests/host/test_deflate.c has its codes).
 *
 * lib/qr.c is included, not linked, to reach its static functions.
 */
#include "lib/qr.c"
#include "lib/base64.h"
#include "lib/deflate.h"
#include "tests/host/host_test.h"

static struct qr_code code;

static const char *const level_names = "LMQH";

/* Table 7: data bytes in byte mode. */
static const struct {
	unsigned version;
	enum qr_ecc ecc;
	size_t bytes;
} capacities[] = {
	{1, QR_ECC_L, 17},    {1, QR_ECC_M, 14},    {1, QR_ECC_Q, 11},
	{1, QR_ECC_H, 7},     {2, QR_ECC_L, 32},    {2, QR_ECC_H, 14},
	{5, QR_ECC_Q, 60},    {7, QR_ECC_M, 122},   {10, QR_ECC_M, 213},
	{20, QR_ECC_L, 858},  {40, QR_ECC_L, 2953}, {40, QR_ECC_M, 2331},
	{40, QR_ECC_Q, 1663}, {40, QR_ECC_H, 1273},
};

HOST_TEST(capacity_table7)
{
	for (size_t i = 0; i < ARRAY_SIZE(capacities); i++) {
		size_t got =
			qr_capacity(capacities[i].version, capacities[i].ecc);

		CHECK(got == capacities[i].bytes, "%u-%c: %zu, not %zu",
		      capacities[i].version, level_names[capacities[i].ecc],
		      got, capacities[i].bytes);
	}
	/* Each level holds less than the one below it, each version more
	 * than the one before. */
	for (unsigned v = QR_VERSION_MIN; v <= QR_VERSION_MAX; v++) {
		for (int e = QR_ECC_L; e <= QR_ECC_H; e++) {
			size_t c = qr_capacity(v, (enum qr_ecc)e);

			if (e > QR_ECC_L)
				CHECK(c < qr_capacity(v, (enum qr_ecc)(e - 1)),
				      "%u-%c", v, level_names[e]);
			if (v > QR_VERSION_MIN)
				CHECK(c > qr_capacity(v - 1, (enum qr_ecc)e),
				      "%u-%c", v, level_names[e]);
		}
	}
}

HOST_TEST(fit_picks_smallest_version)
{
	CHECK_EQ(qr_fit(0, QR_ECC_H, 40), 1);
	CHECK_EQ(qr_fit(17, QR_ECC_L, 40), 1);
	CHECK_EQ(qr_fit(18, QR_ECC_L, 40), 2);
	CHECK_EQ(qr_fit(213, QR_ECC_M, 40), 10);
	CHECK_EQ(qr_fit(214, QR_ECC_M, 40), 11);
	CHECK_EQ(qr_fit(2953, QR_ECC_L, 40), 40);
	CHECK_EQ(qr_fit(2954, QR_ECC_L, 40), 0);
	CHECK_EQ(qr_fit(18, QR_ECC_L, 1), 0);
	CHECK_EQ(qr_fit(1, QR_ECC_L, 0), 0);
	CHECK_EQ(qr_fit(2953, QR_ECC_L, 1000), 40); /* capped at 40 */
}

HOST_TEST(bad_arguments_refused)
{
	uint8_t data[3000] = {0};

	CHECK_EQ(qr_capacity(0, QR_ECC_L), 0);
	CHECK_EQ(qr_capacity(41, QR_ECC_L), 0);
	CHECK_EQ(qr_capacity(1, (enum qr_ecc)4), 0);
	CHECK(!qr_encode(data, 1, 0, QR_ECC_M, &code), "version 0");
	CHECK(!qr_encode(data, 1, 41, QR_ECC_M, &code), "version 41");
	CHECK(!qr_encode(data, 1, 1, (enum qr_ecc)4, &code), "level 4");
	CHECK(!qr_encode(NULL, 1, 1, QR_ECC_M, &code), "no data");
	CHECK(!qr_encode(data, 1, 1, QR_ECC_M, NULL), "no output");
	CHECK(!qr_encode(data, 15, 1, QR_ECC_M, &code), "15 bytes in 1-M");
	CHECK(qr_encode(data, 14, 1, QR_ECC_M, &code), "14 bytes in 1-M");
	CHECK(!qr_encode(data, 2954, 40, QR_ECC_L, &code), "over 40-L");
	CHECK(qr_encode(data, 2953, 40, QR_ECC_L, &code), "40-L full");
	CHECK(qr_encode(NULL, 0, 1, QR_ECC_H, &code), "empty payload");
	CHECK(!qr_module(&code, code.size, 0), "off the symbol is light");
}

/*
 * Reed-Solomon codewords of two worked examples for version 1-M (10 error
 * correction codewords): "01234567" in numeric mode (the standard's Annex
 * I) and "HELLO WORLD" in alphanumeric mode. The data codewords are given;
 * the encoder's part is the remainder.
 */
HOST_TEST(reed_solomon_known_vectors)
{
	static const struct {
		const char *name;
		uint8_t data[16], ecc[10];
	} vectors[] = {
		{"01234567",
		 {0x10, 0x20, 0x0c, 0x56, 0x61, 0x80, 0xec, 0x11, 0xec, 0x11,
		  0xec, 0x11, 0xec, 0x11, 0xec, 0x11},
		 {0xa5, 0x24, 0xd4, 0xc1, 0xed, 0x36, 0xc7, 0x87, 0x2c, 0x55}},
		{"HELLO WORLD",
		 {0x20, 0x5b, 0x0b, 0x78, 0xd1, 0x72, 0xdc, 0x4d, 0x43, 0x40,
		  0xec, 0x11, 0xec, 0x11, 0xec, 0x11},
		 {0xc4, 0x23, 0x27, 0x77, 0xeb, 0xd7, 0xe7, 0xe2, 0x5d, 0x17}},
	};
	uint8_t gen[10], ecc[10];

	rs_generator(10, gen);
	for (size_t v = 0; v < ARRAY_SIZE(vectors); v++) {
		rs_remainder(vectors[v].data, 16, gen, 10, ecc);
		for (unsigned i = 0; i < 10; i++)
			CHECK(ecc[i] == vectors[v].ecc[i],
			      "%s: codeword %u is %#x, not %#x",
			      vectors[v].name, i, ecc[i], vectors[v].ecc[i]);
	}
	/* Products in GF(256) mod 0x11d: 2^8 = 0x1d, 0x80 * 0x80 = 0x13. */
	CHECK_EQ(gf_mul(0x80, 2), 0x1d);
	CHECK_EQ(gf_mul(0x80, 0x80), 0x13);
}

/* The finder's 7 x 7 profile at (x0, y0), its separator light. */
static bool finder_at(int x0, int y0)
{
	for (int dy = -1; dy <= 7; dy++) {
		for (int dx = -1; dx <= 7; dx++) {
			int x = x0 + dx, y = y0 + dy;
			int ring = MAX(MAX(-dx, dx - 6), MAX(-dy, dy - 6));
			bool want;

			if (x < 0 || y < 0 || x >= (int)code.size ||
			    y >= (int)code.size)
				continue;
			/* ring: 0 edge ... -3 centre, 1 separator */
			want = ring == 0 || ring <= -2;
			if (qr_module(&code, (unsigned)x, (unsigned)y) != want)
				return false;
		}
	}
	return true;
}

HOST_TEST(function_patterns)
{
	static const uint8_t payload[] = "finder"; /* fits 1-Q */

	for (unsigned v = QR_VERSION_MIN; v <= QR_VERSION_MAX; v++) {
		unsigned s = QR_SIZE(v);

		if (!CHECK(qr_encode(payload, sizeof(payload), v, QR_ECC_Q,
				     &code),
			   "version %u", v))
			continue;
		CHECK(code.version == v && code.size == s, "version %u: %u %u",
		      v, code.version, code.size);
		CHECK(finder_at(0, 0) && finder_at((int)s - 7, 0) &&
			      finder_at(0, (int)s - 7),
		      "version %u: finders", v);
		for (unsigned i = 8; i < s - 8; i++)
			CHECK(qr_module(&code, i, 6) == (i % 2 == 0) &&
				      qr_module(&code, 6, i) == (i % 2 == 0),
			      "version %u: timing at %u", v, i);
		CHECK(qr_module(&code, 8, s - 8), "version %u: dark module", v);
	}
}

/* Table E.1: row/column coordinates of the alignment pattern centres. */
HOST_TEST(alignment_patterns_table_e1)
{
	static const struct {
		unsigned version, count, pos[7];
	} rows[] = {
		{2, 2, {6, 18}},
		{7, 3, {6, 22, 38}},
		{15, 4, {6, 26, 48, 70}},
		{32, 6, {6, 34, 60, 86, 112, 138}},
		{36, 7, {6, 24, 50, 76, 102, 128, 154}},
		{40, 7, {6, 30, 58, 86, 114, 142, 170}},
	};

	for (size_t r = 0; r < ARRAY_SIZE(rows); r++) {
		unsigned n = rows[r].count, last = rows[r].pos[n - 1];

		if (!CHECK(qr_encode(NULL, 0, rows[r].version, QR_ECC_L, &code),
			   "version %u", rows[r].version))
			continue;
		for (unsigned i = 0; i < n; i++) {
			for (unsigned j = 0; j < n; j++) {
				unsigned x = rows[r].pos[i], y = rows[r].pos[j];
				bool ok = true;

				if ((x == 6 && (y == 6 || y == last)) ||
				    (y == 6 && x == last))
					continue; /* finder corners */
				for (int d = -2; d <= 2; d++) {
					bool ring = d == -2 || d == 2;

					ok &= qr_module(&code, x + d, y - 2) &&
					      qr_module(&code, x + d, y + 2) &&
					      qr_module(&code, x - 2, y + d) &&
					      qr_module(&code, x + 2, y + d);
					ok &= qr_module(&code, x + d, y - 1) ==
					      ring;
				}
				ok &= qr_module(&code, x, y);
				CHECK(ok, "version %u: no alignment at %u,%u",
				      rows[r].version, x, y);
			}
		}
	}
}

/* Table C.1: the format information for each level (L M Q H) and mask. */
static const uint16_t format_table[4][8] = {
	{0x77c4, 0x72f3, 0x7daa, 0x789d, 0x662f, 0x6318, 0x6c41, 0x6976},
	{0x5412, 0x5125, 0x5e7c, 0x5b4b, 0x45f9, 0x40ce, 0x4f97, 0x4aa0},
	{0x355f, 0x3068, 0x3f31, 0x3a06, 0x24b4, 0x2183, 0x2eda, 0x2bed},
	{0x1689, 0x13be, 0x1ce7, 0x19d0, 0x0762, 0x0255, 0x0d0c, 0x083b},
};

/* The two copies of the format bits (Figure 25), bit 14 first. */
static void read_format(unsigned *first, unsigned *second)
{
	unsigned s = code.size;

	*first = *second = 0;
	for (unsigned i = 0; i < 15; i++) {
		unsigned bit = 14 - i; /* read from the most significant */
		unsigned x1, y1, x2, y2;

		if (bit < 6)
			x1 = 8, y1 = bit;
		else if (bit < 8)
			x1 = 8, y1 = bit + 1;
		else if (bit == 8)
			x1 = 7, y1 = 8;
		else
			x1 = 14 - bit, y1 = 8;
		if (bit < 8)
			x2 = s - 1 - bit, y2 = 8;
		else
			x2 = 8, y2 = s - 15 + bit;
		*first = *first << 1 | qr_module(&code, x1, y1);
		*second = *second << 1 | qr_module(&code, x2, y2);
	}
}

HOST_TEST(format_information_table_c1)
{
	uint8_t payload[64];

	host_rand_seed(18004);
	for (unsigned i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)host_rand();
	for (int e = QR_ECC_L; e <= QR_ECC_H; e++) {
		for (unsigned v = 1; v <= 40; v += 3) {
			unsigned first, second;
			int mask = -1;
			size_t len = MIN(qr_capacity(v, (enum qr_ecc)e),
					 sizeof(payload));

			if (!CHECK(qr_encode(payload, len, v, (enum qr_ecc)e,
					     &code),
				   "%u-%c", v, level_names[e]))
				continue;
			read_format(&first, &second);
			CHECK(first == second, "%u-%c: copies %#x and %#x", v,
			      level_names[e], first, second);
			for (int m = 0; m < 8; m++) {
				if (format_table[e][m] == first)
					mask = m;
			}
			CHECK(mask >= 0,
			      "%u-%c: format bits %#x not in Table C.1", v,
			      level_names[e], first);
		}
	}
}

/* Table D.1: versions 7, 8, 21 and 40. */
HOST_TEST(version_information_table_d1)
{
	static const struct {
		unsigned version;
		uint32_t bits;
	} rows[] = {{7, 0x07c94}, {8, 0x085bc}, {21, 0x15683}, {40, 0x28c69}};

	for (size_t r = 0; r < ARRAY_SIZE(rows); r++) {
		uint32_t top_right = 0, bottom_left = 0;
		unsigned s = QR_SIZE(rows[r].version);

		qr_encode(NULL, 0, rows[r].version, QR_ECC_M, &code);
		for (int i = 17; i >= 0; i--) {
			unsigned a = s - 11 + (unsigned)i % 3,
				 b = (unsigned)i / 3;

			top_right = top_right << 1 | qr_module(&code, a, b);
			bottom_left = bottom_left << 1 | qr_module(&code, b, a);
		}
		CHECK(top_right == rows[r].bits && bottom_left == rows[r].bits,
		      "version %u: %#x and %#x, not %#x", rows[r].version,
		      top_right, bottom_left, rows[r].bits);
	}
}

/* Penalty rule 4 and the mask choice: no mask scores below the chosen. */
HOST_TEST(chosen_mask_has_lowest_penalty)
{
	static const uint8_t payload[] = "benchmark: flush ns=1234 ipis=56";
	unsigned first, second, chosen = 8, best;

	qr_encode(payload, sizeof(payload) - 1, 3, QR_ECC_M, &code);
	read_format(&first, &second);
	for (unsigned m = 0; m < 8; m++) {
		if (format_table[QR_ECC_M][m] == first)
			chosen = m;
	}
	if (!CHECK(chosen < 8, "format bits %#x", first))
		return;
	best = penalty(&code);
	apply_mask(&code, chosen);
	for (unsigned m = 0; m < 8; m++) {
		apply_mask(&code, m);
		draw_format(&code, format_bits(QR_ECC_M, m));
		CHECK(penalty(&code) >= best,
		      "mask %u scores %u < %u (mask %u)", m, penalty(&code),
		      best, chosen);
		apply_mask(&code, m);
	}
}

/*
 * The symbol read back as a reader would but without error correction,
 * which would hide a few wrong codewords per block (a decoder's success
 * proves less than this): the mask named by the format information
 * removed, the codewords read along the placement path, dealt back into
 * blocks in turn, every block a Reed-Solomon codeword (all its syndromes
 * zero), and the data codewords exactly the payload with its header,
 * terminator and padding (section 6.4).
 */
#define MAX_BLOCKS    81  /* Table 9, 40-H */
#define MAX_BLOCK_LEN 160 /* 40-L's are 148 or 149 codewords */

static uint8_t stream_read[MAX_CODEWORDS];

static unsigned read_codewords(void)
{
	unsigned first, second, mask = 8, s = code.size, bits = 0;

	read_format(&first, &second);
	for (unsigned e = 0; e < 4; e++) {
		for (unsigned m = 0; m < 8; m++) {
			if (format_table[e][m] == first)
				mask = m;
		}
	}
	if (mask == 8)
		return 0;
	memset(stream_read, 0, sizeof(stream_read));
	/* Two-module columns from the right, up first, then alternately
	 * down; column 6 (timing) is not part of any. */
	for (unsigned pair = 0, up = 1; pair < (s - 1) / 2; pair++, up ^= 1) {
		unsigned right = s - 1 - 2 * pair - (2 * pair >= s - 7);

		for (unsigned k = 0; k < s; k++) {
			unsigned y = up ? s - 1 - k : k;

			for (unsigned x = right + 1; x-- > right - 1;) {
				bool dark;

				if (map_get(function_map, s, x, y))
					continue;
				dark = qr_module(&code, x, y) ^
				       mask_inverts(mask, y, x);
				if (bits / 8 < MAX_CODEWORDS)
					stream_read[bits / 8] |=
						(uint8_t)(dark
							  << (7 - bits % 8));
				bits++;
			}
		}
	}
	return bits;
}

/* The block's polynomial (first codeword highest) at a^j, j < n: zero
 * for every j exactly when the generator divides it. */
static bool rs_syndromes_zero(const uint8_t *block, unsigned len, unsigned n)
{
	uint8_t root = 1;

	for (unsigned j = 0; j < n; j++, root = gf_mul(root, 2)) {
		uint8_t value = 0;

		for (unsigned i = 0; i < len; i++)
			value = gf_mul(value, root) ^ block[i];
		if (value)
			return false;
	}
	return true;
}

/* Problems found, reported; 0 if the symbol holds payload exactly. */
static unsigned check_symbol(const uint8_t *payload, size_t len, unsigned v,
			     enum qr_ecc e)
{
	unsigned blocks = ecc_blocks[e][v - 1], n = ecc_per_block[e][v - 1];
	unsigned total = total_codewords(v), data_total = total - blocks * n;
	unsigned bits = read_codewords(), next = 0, problems = 0;
	static uint8_t block[MAX_BLOCKS][MAX_BLOCK_LEN];
	unsigned fill[MAX_BLOCKS] = {0}, data_len[MAX_BLOCKS];
	static uint8_t data[MAX_CODEWORDS];
	unsigned at = 0, want_bits;

	if (!CHECK(bits / 8 == total, "%u-%c: %u bits read", v, level_names[e],
		   bits) ||
	    !CHECK(blocks <= MAX_BLOCKS && total / blocks + 1 <= MAX_BLOCK_LEN,
		   "%u-%c: %u blocks of %u codewords", v, level_names[e],
		   blocks, total / blocks))
		return 1;
	/* Deal the data codewords out a column at a time: the first
	 * blocks are one short, so they drop out of the last column. */
	for (unsigned b = 0; b < blocks; b++)
		data_len[b] = data_total / blocks +
			      (b >= blocks - data_total % blocks);
	for (unsigned i = 0; next < data_total; i++) {
		for (unsigned b = 0; b < blocks; b++) {
			if (i < data_len[b])
				block[b][fill[b]++] = stream_read[next++];
		}
	}
	for (unsigned i = 0; i < n; i++) {
		for (unsigned b = 0; b < blocks; b++)
			block[b][fill[b]++] = stream_read[next++];
	}
	for (unsigned b = 0; b < blocks; b++) {
		problems += !CHECK(rs_syndromes_zero(block[b], fill[b], n),
				   "%u-%c: block %u is no RS codeword", v,
				   level_names[e], b);
		memcpy(data + at, block[b], data_len[b]);
		at += data_len[b];
	}
	/* The data: 0100, the count, the bytes, then zeros to a byte
	 * boundary (the terminator), then 0xec 0x11 ... */
	struct bit_writer w = {calloc(MAX_CODEWORDS, 1), 0};

	put_bits(&w, MODE_BYTE, MODE_BITS);
	put_bits(&w, (unsigned)len, count_bits(v));
	for (size_t i = 0; i < len; i++)
		put_bits(&w, payload[i], 8);
	want_bits = ALIGN_UP(w.bits, 8);
	for (unsigned i = want_bits / 8; i < data_total; i++)
		w.buf[i] = (i - want_bits / 8) % 2 ? 0x11 : 0xec;
	if (want_bits / 8 > data_total)
		problems += !CHECK(false, "%u-%c: no room", v, level_names[e]);
	else
		problems += !CHECK(!memcmp(w.buf, data, data_total),
				   "%u-%c: the data codewords differ", v,
				   level_names[e]);
	free(w.buf);
	return problems;
}

HOST_TEST(symbols_read_back_exactly)
{
	static uint8_t payload[3000];

	host_rand_seed(2006);
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)host_rand();
	for (unsigned v = QR_VERSION_MIN; v <= QR_VERSION_MAX; v++) {
		for (int e = QR_ECC_L; e <= QR_ECC_H; e++) {
			size_t cap = qr_capacity(v, (enum qr_ecc)e);
			/* Full, or (every other one) a random length below. */
			size_t len = (v + (unsigned)e) % 2
					     ? cap
					     : host_rand_below(cap + 1);

			if (!CHECK(qr_encode(payload, len, v, (enum qr_ecc)e,
					     &code),
				   "%u-%c", v, level_names[e]))
				continue;
			if (check_symbol(payload, len, v, (enum qr_ecc)e))
				return; /* one symbol's problems suffice */
		}
	}
}

HOST_TEST(base64_rfc4648_vectors)
{
	static const char *const vectors[][2] = {
		{"", ""},
		{"f", "Zg=="},
		{"fo", "Zm8="},
		{"foo", "Zm9v"},
		{"foob", "Zm9vYg=="},
		{"fooba", "Zm9vYmE="},
		{"foobar", "Zm9vYmFy"},
	};
	char out[16];

	for (size_t i = 0; i < ARRAY_SIZE(vectors); i++) {
		size_t n = strlen(vectors[i][0]);
		size_t len = base64_encode((const uint8_t *)vectors[i][0], n,
					   out, sizeof(out));

		CHECK_EQ(len, strlen(vectors[i][1]));
		CHECK_EQ(len, BASE64_LEN(n));
		CHECK_STR(out, vectors[i][1]);
	}
	/* Exactly BASE64_LEN: no room for the NUL, none written. */
	memset(out, 'x', sizeof(out));
	CHECK_EQ(base64_encode((const uint8_t *)"foob", 4, out, 8), 8);
	CHECK_EQ(out[8], 'x');
	/* One short: nothing written at all. */
	memset(out, 'x', sizeof(out));
	CHECK_EQ(base64_encode((const uint8_t *)"foob", 4, out, 7), 0);
	CHECK_EQ(out[0], 'x');
}

/* The Adler-32 at the end of the stream: of "Wikipedia", 0x11e60398. */
HOST_TEST(zlib_adler32_trailer)
{
	uint8_t out[64];
	size_t len = zlib_compress((const uint8_t *)"Wikipedia", 9, out,
				   sizeof(out));

	if (!CHECK(len > 6, "compressed to %zu bytes", len))
		return;
	CHECK_EQ((unsigned)out[0] << 8 | out[1], 0x7801);
	CHECK_EQ((uint32_t)out[len - 4] << 24 | (uint32_t)out[len - 3] << 16 |
			 (uint32_t)out[len - 2] << 8 | out[len - 1],
		 0x11e60398);
}

/*
 * Into an exactly sized heap buffer the output fits; one byte less and
 * zlib_compress() refuses without writing past the end (ASan watches).
 * ZLIB_BOUND holds for data that does not compress.
 */
HOST_TEST(zlib_output_bounds)
{
	static uint8_t in[70000];
	size_t sizes[] = {0, 1, 100, 65535, 65536, sizeof(in)};

	host_rand_seed(1950);
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)host_rand();
	for (size_t k = 0; k < ARRAY_SIZE(sizes); k++) {
		size_t n = sizes[k], bound = ZLIB_BOUND(n);
		uint8_t *out = malloc(bound);
		size_t len = zlib_compress(in, n, out, bound);

		free(out);
		if (!CHECK(len > 0 && len <= bound, "%zu bytes: %zu, bound %zu",
			   n, len, bound))
			continue;
		out = malloc(len);
		CHECK_EQ(zlib_compress(in, n, out, len), len);
		free(out);
		out = malloc(len - 1);
		CHECK_EQ(zlib_compress(in, n, out, len - 1), 0);
		free(out);
	}
	CHECK_EQ(zlib_compress(NULL, 1, in, sizeof(in)), 0);
}
