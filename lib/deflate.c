/* SPDX-License-Identifier: MIT */
/*
 * zlib compression (RFC 1950 around RFC 1951), LZ77 with fixed Huffman
 * codes.
 *
 * Theory of operation. Deflate describes the input as literals (a byte)
 * and matches (copy `length` bytes from `distance` bytes back; length
 * 3-258, distance 1-32768). To find matches, every position's next three
 * bytes are hashed: head[hash] holds the latest position with that hash,
 * prev[pos % window] the distance back to the one before it, so each hash
 * has a chain of earlier positions, newest first. At each position the
 * encoder walks at most MAX_CHAIN links of the chain and takes the longest
 * match (greedy: no lazy evaluation), or emits a literal.
 *
 * The symbols are written with the fixed Huffman code (RFC 1951 3.2.6),
 * which needs no code tables in the stream: on text, repeats are where the
 * gain is, and dynamic codes would save another 10-20 % for a lot more
 * code. Everything is one final block. If that would come out larger than
 * the input stored as is (random data), stored blocks are written instead.
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
#define END_OF_BLOCK  256
#define BTYPE_STORED  0
#define BTYPE_FIXED   1
#define ADLER_MOD     65521
#define ADLER_CHUNK   5552 /* bytes summed before s2 could overflow 32 bits */
#define ZLIB_OVERHEAD 6	   /* 2 header bytes, 4 of Adler-32 */

/* Static scratch (not reentrant): positions + 1 (0 = none) and distances
 * back along each chain (0 = end of chain). */
static uint32_t head[HASH_SIZE];
static uint16_t prev[DEFLATE_WINDOW];

_Static_assert(sizeof(head) + sizeof(prev) == DEFLATE_SCRATCH_BYTES,
	       "DEFLATE_SCRATCH_BYTES names the scratch memory's size");

/* RFC 1951 3.2.5: length codes 257-285, their base lengths and extra
 * bits; distance codes 0-29 likewise. */
static const uint16_t length_base[29] = {
	3,  4,	5,  6,	7,  8,	9,  10, 11,  13,  15,  17,  19,	 23, 27,
	31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t length_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1,
					 1, 1, 2, 2, 2, 2, 3, 3, 3, 3,
					 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t distance_base[30] = {
	1,    2,    3,	  4,	5,    7,    9,	  13,	 17,	25,
	33,   49,   65,	  97,	129,  193,  257,  385,	 513,	769,
	1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t distance_extra[30] = {
	0, 0, 0, 0, 1, 1, 2, 2,	 3,  3,	 4,  4,	 5,  5,	 6,
	6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

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

/* A Huffman code of len bits, its most significant bit first. */
static void put_code(struct bit_sink *s, unsigned code, unsigned len)
{
	unsigned reversed = 0;

	for (unsigned i = 0; i < len; i++)
		reversed |= ((code >> i) & 1) << (len - 1 - i);
	put_bits(s, reversed, len);
}

/* RFC 1951 3.2.6: the fixed literal/length code. */
static void put_symbol(struct bit_sink *s, unsigned sym)
{
	if (sym < 144)
		put_code(s, 0x30 + sym, 8);
	else if (sym < 256)
		put_code(s, 0x190 + (sym - 144), 9);
	else if (sym < 280)
		put_code(s, sym - 256, 7);
	else
		put_code(s, 0xc0 + (sym - 280), 8);
}

/* The code whose base is the largest not above value. */
static unsigned code_for(const uint16_t *base, unsigned count, unsigned value)
{
	unsigned code = 0;

	while (code + 1 < count && base[code + 1] <= value)
		code++;
	return code;
}

static void put_match(struct bit_sink *s, unsigned length, unsigned distance)
{
	unsigned lc = code_for(length_base, 29, length);
	unsigned dc = code_for(distance_base, 30, distance);

	put_symbol(s, 257 + lc);
	put_bits(s, length - length_base[lc], length_extra[lc]);
	put_code(s, dc, 5); /* fixed distance codes: 5 bits each */
	put_bits(s, distance - distance_base[dc], distance_extra[dc]);
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

/* The longest earlier match for pos along its chain: its length (0 if
 * under MIN_MATCH), its distance in *distance. */
static unsigned longest_match(const uint8_t *in, size_t n, size_t pos,
			      unsigned *distance)
{
	unsigned best = 0, chain = MAX_CHAIN;
	unsigned limit = (unsigned)MIN(n - pos, (size_t)MAX_MATCH);
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

static void deflate_fixed(const uint8_t *in, size_t n, struct bit_sink *s)
{
	size_t pos = 0;

	memset(head, 0, sizeof(head));
	put_bits(s, 1, 1); /* BFINAL: the only block */
	put_bits(s, BTYPE_FIXED, 2);
	while (pos < n && !s->overflow) {
		unsigned distance = 0, len = 0;

		if (n - pos >= MIN_MATCH) {
			len = longest_match(in, n, pos, &distance);
			insert(in, pos);
		}
		if (!len) {
			put_symbol(s, in[pos++]);
			continue;
		}
		put_match(s, len, distance);
		/* The matched positions join their chains too. */
		for (size_t end = pos + len; ++pos < end;) {
			if (n - pos >= MIN_MATCH)
				insert(in, pos);
		}
	}
	put_symbol(s, END_OF_BLOCK);
	flush_bits(s);
}

/* RFC 1951 3.2.4: blocks of at most ZLIB_STORED_MAX bytes, each a header
 * byte, LEN and its complement NLEN (little-endian), then the bytes. */
static void deflate_stored(const uint8_t *in, size_t n, struct bit_sink *s)
{
	size_t pos = 0;

	do {
		size_t len = MIN(n - pos, (size_t)ZLIB_STORED_MAX);
		bool last = pos + len == n;

		put_bits(s, last, 1);
		put_bits(s, BTYPE_STORED, 2);
		flush_bits(s);
		put_bits(s, (uint32_t)len, 16);
		put_bits(s, (uint32_t)len ^ 0xffff, 16);
		for (size_t i = 0; i < len; i++)
			put_byte(s, in[pos + i]);
		pos += len;
	} while (pos < n);
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

/* One attempt at the whole stream; false if it did not fit in cap. */
static bool zlib_write(const uint8_t *in, size_t n, uint8_t *out, size_t cap,
		       bool stored, size_t *written)
{
	/* CMF: method 8 (deflate), window 2^(7+8); FLG: level 0 ("fastest"),
	 * check bits making CMF * 256 + FLG a multiple of 31. */
	const unsigned cmf = 0x78, flevel = 0 << 6;
	struct bit_sink s = {.out = out, .cap = cap};
	uint32_t adler = adler32(in, n);

	put_byte(&s, (uint8_t)cmf);
	put_byte(&s, (uint8_t)(flevel + 31 - (cmf * 256 + flevel) % 31));
	if (stored)
		deflate_stored(in, n, &s);
	else
		deflate_fixed(in, n, &s);
	for (int shift = 24; shift >= 0; shift -= 8)
		put_byte(&s, (uint8_t)(adler >> shift));
	*written = s.len;
	return !s.overflow;
}

size_t zlib_compress(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	size_t blocks = n ? (n + ZLIB_STORED_MAX - 1) / ZLIB_STORED_MAX : 1;
	size_t stored_size = ZLIB_OVERHEAD + n + 5 * blocks, written;

	if ((!in && n) || !out || n >= UINT32_MAX)
		return 0;
	/* Compressed output must beat the stored form to be kept. */
	if (zlib_write(in, n, out, MIN(cap, stored_size - 1), false, &written))
		return written;
	if (stored_size <= cap && zlib_write(in, n, out, cap, true, &written))
		return written;
	return 0;
}
