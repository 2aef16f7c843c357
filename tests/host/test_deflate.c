// SPDX-License-Identifier: MIT
/*
 * lib/deflate.c's Huffman codes, which the round trips through Python's
 * zlib (tests/qr/test_qr.py) reach only by chance: lengths limited to 15
 * bits where the tree would be deeper, complete codes (Kraft sum exactly
 * one) even for one symbol or none, canonical codes as RFC 1951 3.2.2's
 * example gives them, the code-length run-length coding (3.2.7).
 *
 * lib/deflate.c is included, not linked, to reach its static functions.
 */
#include "lib/deflate.c"
#include "tests/host/host_test.h"

static struct code_table table;
static uint32_t freq[LITLEN_CODES];

/* Kraft sum of the lengths, in units of 2^-MAX_BITS: 1 << MAX_BITS for a
 * complete code. */
static unsigned long kraft(const struct code_table *t, unsigned *longest)
{
	unsigned long sum = 0;

	*longest = 0;
	for (unsigned i = 0; i < t->count; i++) {
		if (t->len[i]) {
			sum += 1ul << (MAX_BITS - t->len[i]);
			*longest = MAX(*longest, t->len[i]);
		}
	}
	return sum;
}

HOST_TEST(lengths_limited_and_complete)
{
	unsigned longest;

	/* Fibonacci counts: the Huffman tree of n symbols is n - 1 deep. */
	memset(freq, 0, sizeof(freq));
	freq[0] = freq[1] = 1;
	for (unsigned i = 2; i < 30; i++)
		freq[i] = freq[i - 1] + freq[i - 2];
	build_code(&table, freq, 30, MAX_BITS);
	CHECK_EQ(kraft(&table, &longest), 1ul << MAX_BITS);
	CHECK(longest == MAX_BITS, "longest code %u bits", longest);
	/* The rarest symbols never get shorter codes than commoner ones. */
	for (unsigned i = 1; i < 30; i++)
		CHECK(table.len[i] <= table.len[i - 1],
		      "len[%u] %u > len[%u] %u", i, table.len[i], i - 1,
		      table.len[i - 1]);
	/* The code-length code's limit is 7. */
	memcpy(freq,
	       (uint32_t[]){1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377,
			    610, 987, 1597, 2584, 4181},
	       CLEN_CODES * sizeof(freq[0]));
	build_code(&table, freq, CLEN_CODES, MAX_CLEN_BITS);
	CHECK_EQ(kraft(&table, &longest), 1ul << MAX_BITS);
	CHECK(longest <= MAX_CLEN_BITS, "longest code %u bits", longest);
}

HOST_TEST(one_symbol_or_none_gets_a_complete_code)
{
	unsigned longest;

	memset(freq, 0, sizeof(freq));
	build_code(&table, freq, DIST_CODES, MAX_BITS);
	CHECK_EQ(kraft(&table, &longest), 1ul << MAX_BITS);
	memset(freq, 0, sizeof(freq));
	freq[END_OF_BLOCK] = 1;
	build_code(&table, freq, 257 + LENGTH_CODES, MAX_BITS);
	CHECK_EQ(kraft(&table, &longest), 1ul << MAX_BITS);
	CHECK_EQ(table.len[END_OF_BLOCK], 1);
}

/* RFC 1951 3.2.2: lengths (3, 3, 3, 3, 3, 2, 4, 4) give codes 010, 011,
 * 100, 101, 110, 00, 1110, 1111. */
HOST_TEST(canonical_codes_rfc1951_example)
{
	static const uint8_t lens[8] = {3, 3, 3, 3, 3, 2, 4, 4};
	static const uint16_t codes[8] = {2, 3, 4, 5, 6, 0, 14, 15};

	table.count = 8;
	memcpy(table.len, lens, sizeof(lens));
	huffman_codes(&table);
	for (unsigned i = 0; i < 8; i++)
		CHECK(table.code[i] == codes[i], "symbol %u: code %#x, not %#x",
		      i, table.code[i], codes[i]);
}

/* 3.2.7: runs of zeros as 17 and 18, repeats of a length as 16. */
HOST_TEST(code_lengths_run_length_coded)
{
	static uint8_t lens[200];
	static const struct {
		uint8_t sym, extra;
	} want[] = {
		{8, 0},		{16, 6 - 3},
		{16, 4 - 3},		       /* 11 eights: 1, 6, 4 */
		{18, 138 - 11}, {18, 15 - 11}, /* 153 zeros */
		{5, 0},		{5, 0},	     /* 2 fives: under 3, as they are */
		{0, 0},		{0, 0},	     /* 2 zeros likewise */
		{7, 0},		{17, 5 - 3}, /* a seven, 5 zeros */
		{3, 0},
	};
	unsigned n = 0;

	for (unsigned i = 0; i < 11; i++)
		lens[n++] = 8;
	n += 153;
	lens[n++] = 5;
	lens[n++] = 5;
	n += 2;
	lens[n++] = 7;
	n += 5;
	lens[n++] = 3;
	run_length_code(lens, n);
	CHECK_EQ(header.count, ARRAY_SIZE(want));
	for (unsigned i = 0; i < MIN(header.count, ARRAY_SIZE(want)); i++)
		CHECK(header.sym[i] == want[i].sym &&
			      header.extra[i] == want[i].extra,
		      "symbol %u: %u (+%u), not %u (+%u)", i, header.sym[i],
		      header.extra[i], want[i].sym, want[i].extra);
}
