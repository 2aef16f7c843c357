/* SPDX-License-Identifier: MIT */
/*
 * zlib compression (RFC 1950 around RFC 1951).
 *
 * Theory of operation. Deflate describes the input as literals (a byte)
 * and matches (copy `length` bytes from `distance` bytes back; length
 * 3-258, distance 1-32768), in blocks, each with its own codes.
 *
 *   1. Matches (LZ77). Every position's next three bytes are hashed:
 *      head[hash] holds the latest position with that hash, prev[pos %
 *      window] the distance back to the one before it, so each hash has a
 *      chain of earlier positions, newest first. At each position the
 *      encoder walks at most MAX_CHAIN links and takes the longest match
 *      (greedy: no lazy evaluation), or emits a literal. The symbols of
 *      DEFLATE_BLOCK_BYTES of input are kept for step 2; the window
 *      reaches back across blocks.
 *   2. Codes (RFC 1951 3.2.2). The block's symbol counts give Huffman
 *      code lengths (at most 15 bits, 7 for the code-length code), sent
 *      as a run-length coded list (3.2.7); codes are canonical, so the
 *      lengths are all the decoder needs.
 *   3. The cheapest form. The block's size in bits is counted for these
 *      dynamic codes, for the fixed codes (3.2.6: no table to send, best
 *      for small blocks) and stored (3.2.4: best for random data), and
 *      the smallest is written.
 *
 * Bits are packed starting at the least significant bit of each byte;
 * Huffman codes go most significant bit first, so they are reversed
 * before packing (RFC 1951 3.1.1).
 */

#include "lib/deflate.h"

#include "lib/string.h"

#define MIN_MATCH     3
#define MAX_MATCH     258
#define MAX_CHAIN     64 /* chain links tried per position: speed vs ratio */
#define HASH_SIZE     (1u << DEFLATE_HASH_BITS)
#define LITERALS      256
#define END_OF_BLOCK  256
#define LITLEN_CODES  288 /* 286 used; the fixed code has 288 (3.2.6) */
#define LENGTH_CODES  29
#define DIST_CODES    30
#define CLEN_CODES    19
#define MAX_BITS      15 /* longest literal/length or distance code */
#define MAX_CLEN_BITS 7	 /* longest code-length code */
#define BTYPE_STORED  0
#define BTYPE_FIXED   1
#define BTYPE_DYNAMIC 2
#define STORED_MAX    65535 /* LEN is 16 bits */
#define ADLER_MOD     65521
#define ADLER_CHUNK   5552 /* bytes summed before s2 could overflow 32 bits */

_Static_assert(DEFLATE_BLOCK_BYTES <= STORED_MAX,
	       "a block stored whole fits one stored block");

/* --- Static scratch (not reentrant) ------------------------------------- */

/* Positions + 1 (0 = none), and distances back along each chain (0 = end
 * of chain). */
static uint32_t head[HASH_SIZE];
static uint16_t prev[DEFLATE_WINDOW];
/* The block's symbols: a literal byte, or LITERALS + a match length with
 * its distance (0 for a literal). */
static uint16_t token_value[DEFLATE_BLOCK_BYTES];
static uint16_t token_distance[DEFLATE_BLOCK_BYTES];

_Static_assert(sizeof(head) + sizeof(prev) + sizeof(token_value) +
			       sizeof(token_distance) ==
		       DEFLATE_SCRATCH_BYTES,
	       "DEFLATE_SCRATCH_BYTES names the scratch memory's size");

/* RFC 1951 3.2.5: length codes 257-285, their base lengths and extra
 * bits; distance codes 0-29 likewise. */
static const uint16_t length_base[LENGTH_CODES] = {
	3,  4,	5,  6,	7,  8,	9,  10, 11,  13,  15,  17,  19,	 23, 27,
	31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t length_extra[LENGTH_CODES] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1,
						   1, 1, 2, 2, 2, 2, 3, 3, 3, 3,
						   4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t distance_base[DIST_CODES] = {
	1,    2,    3,	  4,	5,    7,    9,	  13,	 17,	25,
	33,   49,   65,	  97,	129,  193,  257,  385,	 513,	769,
	1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t distance_extra[DIST_CODES] = {
	0, 0, 0, 0, 1, 1, 2, 2,	 3,  3,	 4,  4,	 5,  5,	 6,
	6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
/* 3.2.7: the order in which the code-length code's lengths are sent
 * (the likely ones first, so trailing zeros can be left off). */
static const uint8_t clen_order[CLEN_CODES] = {
	16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
/* Code-length symbols 16, 17, 18: extra bits and the least repeat. */
#define REPEAT_PREVIOUS	 16 /* 3-6 copies of the previous length */
#define REPEAT_ZERO	 17 /* 3-10 zeros */
#define REPEAT_ZERO_LONG 18 /* 11-138 zeros */
static const uint8_t clen_extra[3] = {2, 3, 7};

/* --- Bit output ---------------------------------------------------------- */

struct bit_sink {
	uint8_t *out;
	size_t cap, len;
	uint32_t bits; /* pending bits, the first in the low bit */
	unsigned count;
	bool overflow; /* cap was reached: the output is incomplete */
};

static void put_byte(struct bit_sink *s, uint8_t byte)
{
	if (s->len < s->cap)
		s->out[s->len++] = byte;
	else
		s->overflow = true;
}

/* Appends the low n (<= 16) bits of value, the least significant first. */
static void put_bits(struct bit_sink *s, uint32_t value, unsigned n)
{
	s->bits |= value << s->count;
	s->count += n;
	while (s->count >= 8) {
		put_byte(s, (uint8_t)s->bits);
		s->bits >>= 8;
		s->count -= 8;
	}
}

/* Pads to a byte boundary with zero bits. */
static void flush_bits(struct bit_sink *s)
{
	if (s->count)
		put_bits(s, 0, 8 - s->count);
}

/* --- Huffman codes (RFC 1951 3.2.2) --------------------------------------- */

struct code_table {
	unsigned count;		   /* symbols */
	uint8_t len[LITLEN_CODES]; /* 0: the symbol does not occur */
	uint16_t code[LITLEN_CODES];
};

/* The block's symbol counts, and its codes: its own, and the fixed. */
static uint32_t litlen_freq[LITLEN_CODES], distance_freq[DIST_CODES],
	clen_freq[CLEN_CODES];
static struct code_table litlen, distances, clen, fixed_litlen, fixed_distances;

/* A Huffman code of len bits, its most significant bit first. */
static void put_code(struct bit_sink *s, const struct code_table *t,
		     unsigned sym)
{
	unsigned code = t->code[sym], len = t->len[sym], reversed = 0;

	for (unsigned i = 0; i < len; i++)
		reversed |= ((code >> i) & 1) << (len - 1 - i);
	put_bits(s, reversed, len);
}

/*
 * Code lengths of a Huffman tree for the counts in_freq, none over limit.
 * The tree is built in place (leaves first, then inner nodes, each
 * pointing to its parent) by joining the two lightest roots until one is
 * left; a leaf's depth is its length. If some length exceeds the limit,
 * the counts are halved (nonzero stays nonzero) and the tree built again:
 * flatter counts give a flatter tree, and equal counts a balanced one,
 * which fits.
 */
static void huffman_lengths(struct code_table *t, const uint32_t *in_freq,
			    unsigned limit)
{
	static uint32_t weight[2 * LITLEN_CODES];
	static uint16_t parent[2 * LITLEN_CODES];
	static bool root[2 * LITLEN_CODES];
	static uint32_t freq[LITLEN_CODES];
	unsigned longest;

	memcpy(freq, in_freq, t->count * sizeof(freq[0]));
	do {
		unsigned nodes = t->count, roots = 0;

		for (unsigned i = 0; i < t->count; i++) {
			weight[i] = freq[i];
			root[i] = freq[i] != 0;
			roots += root[i];
		}
		while (roots > 1) {
			unsigned a = nodes, b = nodes; /* lightest, next */

			for (unsigned i = 0; i < nodes; i++) {
				if (!root[i])
					continue;
				if (a == nodes || weight[i] < weight[a]) {
					b = a;
					a = i;
				} else if (b == nodes ||
					   weight[i] < weight[b]) {
					b = i;
				}
			}
			weight[nodes] = weight[a] + weight[b];
			root[nodes] = true;
			root[a] = root[b] = false;
			parent[a] = parent[b] = (uint16_t)nodes;
			nodes++;
			roots--;
		}
		longest = 0;
		for (unsigned i = 0; i < t->count; i++) {
			unsigned depth = 0;

			if (freq[i])
				for (unsigned n = i; n != nodes - 1;
				     n = parent[n])
					depth++;
			t->len[i] = (uint8_t)depth;
			longest = MAX(longest, depth);
		}
		for (unsigned i = 0; i < t->count; i++)
			freq[i] = freq[i] ? (freq[i] >> 1) | 1 : 0;
	} while (longest > limit);
}

/* 3.2.2: canonical codes from the lengths, consecutive within a length,
 * shorter codes first. */
static void huffman_codes(struct code_table *t)
{
	unsigned per_length[MAX_BITS + 1] = {0}, next[MAX_BITS + 1];
	unsigned code = 0;

	for (unsigned i = 0; i < t->count; i++)
		per_length[t->len[i]]++;
	per_length[0] = 0;
	for (unsigned bits = 1; bits <= MAX_BITS; bits++) {
		code = (code + per_length[bits - 1]) << 1;
		next[bits] = code;
	}
	for (unsigned i = 0; i < t->count; i++) {
		if (t->len[i])
			t->code[i] = (uint16_t)next[t->len[i]]++;
	}
}

/*
 * A code for count symbols with these counts. At least two symbols get a
 * code (a count of 1 is made up if need be), so the code is complete,
 * which every inflater accepts (one code alone would be incomplete).
 */
static void build_code(struct code_table *t, uint32_t *freq, unsigned count,
		       unsigned limit)
{
	unsigned used = 0;

	t->count = count;
	for (unsigned i = 0; i < count; i++)
		used += freq[i] != 0;
	for (unsigned i = 0; used < 2; i++) {
		if (!freq[i]) {
			freq[i] = 1;
			used++;
		}
	}
	huffman_lengths(t, freq, limit);
	huffman_codes(t);
}

/* 3.2.6: the fixed literal/length and distance codes. */
static void build_fixed_codes(void)
{
	fixed_litlen.count = LITLEN_CODES;
	for (unsigned i = 0; i < LITLEN_CODES; i++)
		fixed_litlen.len[i] = i < 144	? 8
				      : i < 256 ? 9
				      : i < 280 ? 7
						: 8;
	fixed_distances.count = DIST_CODES;
	for (unsigned i = 0; i < DIST_CODES; i++)
		fixed_distances.len[i] = 5;
	huffman_codes(&fixed_litlen);
	huffman_codes(&fixed_distances);
}

/* --- Step 1: matches -------------------------------------------------------- */

/* The code whose base is the largest not above value. */
static unsigned code_for(const uint16_t *base, unsigned count, unsigned value)
{
	unsigned code = 0;

	while (code + 1 < count && base[code + 1] <= value)
		code++;
	return code;
}

static unsigned hash3(const uint8_t *p)
{
	return ((unsigned)p[0] << 10 ^ (unsigned)p[1] << 5 ^ p[2]) &
	       (HASH_SIZE - 1);
}

/* Adds position pos (which has MIN_MATCH bytes after it) to its chain. */
static void insert(const uint8_t *in, size_t pos)
{
	unsigned h = hash3(in + pos);
	size_t distance = head[h] ? pos - (head[h] - 1) : 0;

	prev[pos % DEFLATE_WINDOW] =
		distance <= DEFLATE_WINDOW ? (uint16_t)distance : 0;
	head[h] = (uint32_t)pos + 1;
}

/* The longest earlier match for pos along its chain, at most limit long:
 * its length (0 if under MIN_MATCH), its distance in *distance. */
static unsigned longest_match(const uint8_t *in, size_t pos, unsigned limit,
			      unsigned *distance)
{
	unsigned best = 0, chain = MAX_CHAIN;
	uint32_t entry = head[hash3(in + pos)];
	size_t cand;

	if (!entry)
		return 0;
	for (cand = entry - 1; chain--;) {
		unsigned len = 0;
		uint16_t back;

		if (pos - cand > DEFLATE_WINDOW)
			break;
		while (len < limit && in[cand + len] == in[pos + len])
			len++;
		if (len > best) {
			best = len;
			*distance = (unsigned)(pos - cand);
			if (len == limit)
				break;
		}
		/* Read before pos is inserted, and cand is within the
		 * window: the slot still holds cand's own link. */
		back = prev[cand % DEFLATE_WINDOW];
		if (!back || back > cand)
			break;
		cand -= back;
	}
	return best >= MIN_MATCH ? best : 0;
}

/* The symbols of in[start, end) (matches do not reach past end) into
 * token_value/token_distance; returns how many. */
static unsigned find_matches(const uint8_t *in, size_t n, size_t start,
			     size_t end)
{
	unsigned tokens = 0;

	for (size_t pos = start; pos < end; tokens++) {
		unsigned distance = 0, len = 0;
		unsigned limit = (unsigned)MIN(end - pos, (size_t)MAX_MATCH);

		if (n - pos >= MIN_MATCH) {
			if (limit >= MIN_MATCH)
				len = longest_match(in, pos, limit, &distance);
			insert(in, pos);
		}
		if (!len) {
			token_value[tokens] = in[pos++];
			token_distance[tokens] = 0;
			continue;
		}
		token_value[tokens] = (uint16_t)(LITERALS + len);
		token_distance[tokens] = (uint16_t)distance;
		/* The matched positions join their chains too. */
		for (size_t match_end = pos + len; ++pos < match_end;) {
			if (n - pos >= MIN_MATCH)
				insert(in, pos);
		}
	}
	return tokens;
}

/* --- Steps 2 and 3: a block --------------------------------------------------- */

/* Symbol counts of the tokens (and one end of block). */
static void count_symbols(unsigned tokens)
{
	memset(litlen_freq, 0, sizeof(litlen_freq));
	memset(distance_freq, 0, sizeof(distance_freq));
	for (unsigned i = 0; i < tokens; i++) {
		unsigned v = token_value[i];

		if (v < LITERALS) {
			litlen_freq[v]++;
			continue;
		}
		litlen_freq[257 + code_for(length_base, LENGTH_CODES,
					   v - LITERALS)]++;
		distance_freq[code_for(distance_base, DIST_CODES,
				       token_distance[i])]++;
	}
	litlen_freq[END_OF_BLOCK]++;
}

/* Bits the counted symbols take in these codes, extra bits too. */
static size_t symbol_bits(const struct code_table *lit,
			  const struct code_table *dist)
{
	size_t bits = 0;

	for (unsigned i = 0; i < 257 + LENGTH_CODES; i++) {
		bits += (size_t)litlen_freq[i] * lit->len[i];
		if (i > 256)
			bits += (size_t)litlen_freq[i] * length_extra[i - 257];
	}
	for (unsigned i = 0; i < DIST_CODES; i++)
		bits += (size_t)distance_freq[i] *
			(dist->len[i] + distance_extra[i]);
	return bits;
}

/* The dynamic block's header: the code lengths of both codes as one
 * sequence, run-length coded (3.2.7). */
struct dynamic_header {
	unsigned hlit, hdist, hclen; /* codes sent of each */
	unsigned count;		     /* run-length symbols */
	uint8_t sym[LITLEN_CODES + DIST_CODES];
	uint8_t extra[LITLEN_CODES + DIST_CODES];
};

static struct dynamic_header header;

static void add_run_symbol(unsigned sym, unsigned extra)
{
	header.sym[header.count] = (uint8_t)sym;
	header.extra[header.count++] = (uint8_t)extra;
	clen_freq[sym]++;
}

static void run_length_code(const uint8_t *lens, unsigned n)
{
	header.count = 0;
	memset(clen_freq, 0, sizeof(clen_freq));
	for (unsigned i = 0; i < n;) {
		unsigned run = 1, len = lens[i];

		while (i + run < n && lens[i + run] == len)
			run++;
		i += run;
		if (len == 0) {
			for (; run >= 11; run -= MIN(run, 138u))
				add_run_symbol(REPEAT_ZERO_LONG,
					       MIN(run, 138u) - 11);
			if (run >= 3) {
				add_run_symbol(REPEAT_ZERO, run - 3);
				run = 0;
			}
		} else {
			add_run_symbol(len, 0);
			for (run--; run >= 3; run -= MIN(run, 6u))
				add_run_symbol(REPEAT_PREVIOUS,
					       MIN(run, 6u) - 3);
		}
		while (run--)
			add_run_symbol(len, 0);
	}
}

/* Builds the block's own codes and header; returns its size in bits. */
static size_t plan_dynamic(void)
{
	static uint8_t lens[LITLEN_CODES + DIST_CODES];
	size_t bits = 3 + 5 + 5 + 4;

	build_code(&litlen, litlen_freq, 257 + LENGTH_CODES, MAX_BITS);
	build_code(&distances, distance_freq, DIST_CODES, MAX_BITS);
	header.hlit = litlen.count;
	while (header.hlit > 257 && !litlen.len[header.hlit - 1])
		header.hlit--;
	header.hdist = distances.count;
	while (header.hdist > 1 && !distances.len[header.hdist - 1])
		header.hdist--;
	memcpy(lens, litlen.len, header.hlit);
	memcpy(lens + header.hlit, distances.len, header.hdist);
	run_length_code(lens, header.hlit + header.hdist);
	build_code(&clen, clen_freq, CLEN_CODES, MAX_CLEN_BITS);
	header.hclen = CLEN_CODES;
	while (header.hclen > 4 && !clen.len[clen_order[header.hclen - 1]])
		header.hclen--;
	bits += 3 * header.hclen;
	for (unsigned i = 0; i < header.count; i++) {
		unsigned sym = header.sym[i];

		bits += clen.len[sym];
		if (sym >= REPEAT_PREVIOUS)
			bits += clen_extra[sym - REPEAT_PREVIOUS];
	}
	return bits + symbol_bits(&litlen, &distances);
}

static void put_dynamic_header(struct bit_sink *s)
{
	put_bits(s, header.hlit - 257, 5);
	put_bits(s, header.hdist - 1, 5);
	put_bits(s, header.hclen - 4, 4);
	for (unsigned i = 0; i < header.hclen; i++)
		put_bits(s, clen.len[clen_order[i]], 3);
	for (unsigned i = 0; i < header.count; i++) {
		unsigned sym = header.sym[i];

		put_code(s, &clen, sym);
		if (sym >= REPEAT_PREVIOUS)
			put_bits(s, header.extra[i],
				 clen_extra[sym - REPEAT_PREVIOUS]);
	}
}

static void put_tokens(struct bit_sink *s, const struct code_table *lit,
		       const struct code_table *dist, unsigned tokens)
{
	for (unsigned i = 0; i < tokens; i++) {
		unsigned v = token_value[i], length, distance, lc, dc;

		if (v < LITERALS) {
			put_code(s, lit, v);
			continue;
		}
		length = v - LITERALS;
		distance = token_distance[i];
		lc = code_for(length_base, LENGTH_CODES, length);
		dc = code_for(distance_base, DIST_CODES, distance);
		put_code(s, lit, 257 + lc);
		put_bits(s, length - length_base[lc], length_extra[lc]);
		put_code(s, dist, dc);
		put_bits(s, distance - distance_base[dc], distance_extra[dc]);
	}
	put_code(s, lit, END_OF_BLOCK);
}

/* 3.2.4: the bytes as they are, after LEN and its complement NLEN. */
static void put_stored(struct bit_sink *s, const uint8_t *in, size_t len)
{
	flush_bits(s);
	put_bits(s, (uint32_t)len, 16);
	put_bits(s, (uint32_t)len ^ 0xffff, 16);
	for (size_t i = 0; i < len; i++)
		put_byte(s, in[i]);
}

/* One block of in[start, end), in the form that takes fewest bits. */
static void put_block(struct bit_sink *s, const uint8_t *in, size_t n,
		      size_t start, size_t end)
{
	unsigned tokens = find_matches(in, n, start, end);
	size_t dynamic_bits, fixed_bits, stored_bits;

	count_symbols(tokens);
	dynamic_bits = plan_dynamic();
	fixed_bits = 3 + symbol_bits(&fixed_litlen, &fixed_distances);
	/* Stored: the 3 header bits, padding to a byte, LEN, NLEN, data. */
	stored_bits = 3 + (8 - (s->count + 3) % 8) % 8 + 32 + 8 * (end - start);
	put_bits(s, end == n, 1); /* BFINAL */
	if (stored_bits <= MIN(dynamic_bits, fixed_bits)) {
		put_bits(s, BTYPE_STORED, 2);
		put_stored(s, in + start, end - start);
	} else if (fixed_bits <= dynamic_bits) {
		put_bits(s, BTYPE_FIXED, 2);
		put_tokens(s, &fixed_litlen, &fixed_distances, tokens);
	} else {
		put_bits(s, BTYPE_DYNAMIC, 2);
		put_dynamic_header(s);
		put_tokens(s, &litlen, &distances, tokens);
	}
}

/* RFC 1950 2.2: sums modulo 65521, s2 in the high half. */
static uint32_t adler32(const uint8_t *in, size_t n)
{
	uint32_t s1 = 1, s2 = 0;

	while (n) {
		size_t chunk = MIN(n, (size_t)ADLER_CHUNK);

		n -= chunk;
		while (chunk--) {
			s1 += *in++;
			s2 += s1;
		}
		s1 %= ADLER_MOD;
		s2 %= ADLER_MOD;
	}
	return s2 << 16 | s1;
}

size_t zlib_compress(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	/* CMF: method 8 (deflate), window 2^(7+8); FLG: level 0 ("fastest"),
	 * check bits making CMF * 256 + FLG a multiple of 31. */
	const unsigned cmf = 0x78, flevel = 0 << 6;
	struct bit_sink s = {.out = out, .cap = cap};
	size_t start = 0;
	uint32_t adler;

	if ((!in && n) || !out || n >= UINT32_MAX)
		return 0;
	memset(head, 0, sizeof(head));
	build_fixed_codes();
	put_byte(&s, (uint8_t)cmf);
	put_byte(&s, (uint8_t)(flevel + 31 - (cmf * 256 + flevel) % 31));
	do {
		size_t end =
			start + MIN(n - start, (size_t)DEFLATE_BLOCK_BYTES);

		put_block(&s, in, n, start, end);
		start = end;
	} while (start < n && !s.overflow);
	flush_bits(&s);
	adler = adler32(in, n);
	for (int shift = 24; shift >= 0; shift -= 8)
		put_byte(&s, (uint8_t)(adler >> shift));
	return s.overflow ? 0 : s.len;
}
