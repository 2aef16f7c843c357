/* SPDX-License-Identifier: MIT */
/*
 * QR Code Model 2 encoder, byte mode (ISO/IEC 18004:2006; section and table
 * numbers below are that edition's).
 *
 * Theory of operation. A symbol of version v is a square of 17 + 4v
 * modules. Some modules are function patterns, fixed by the version alone:
 * three finders with their light separators, two timing lines, the
 * alignment patterns, the dark module, and the areas holding the format
 * information (level and mask) and, from version 7, the version
 * information. Every other module carries one bit of the codeword stream.
 * Encoding is:
 *
 *   1. The data codewords (6.4): mode indicator 0100 (byte mode, Table 2),
 *      the byte count (8 bits up to version 9, 16 from 10: Table 3), the
 *      bytes, a terminator of up to four zero bits, zero bits to a byte
 *      boundary, then the pad bytes 0xEC 0x11 alternately to fill the
 *      data capacity.
 *   2. Error correction (6.5): the data codewords are cut into blocks
 *      (Table 9 gives the number of blocks and their error correction
 *      codewords); each block gets Reed-Solomon codewords over GF(256).
 *   3. Interleaving (6.6): the first codeword of every block, then the
 *      second of every block, and so on, data first, then the error
 *      correction codewords the same way. A reader that loses a patch of
 *      the picture loses a few codewords of many blocks, not a whole block.
 *   4. Placement (6.7.3): the bits, most significant first, go up and down
 *      two-module-wide columns from the bottom-right corner, skipping
 *      function modules; the few bits left over (remainder bits) stay 0.
 *   5. Masking (6.8): one of eight patterns is XORed onto the data modules
 *      to break up shapes a reader could mistake for finders and to balance
 *      dark and light; the pattern with the lowest penalty (four rules,
 *      Table 11) wins, and the format information names it.
 *
 * Scratch memory is static (lib/qr.h: not reentrant).
 */

#include "lib/qr.h"

#include "lib/string.h"

/*
 * Table 9: error correction codewords per block and number of blocks, by
 * level and version. The blocks of a version share its codewords as evenly
 * as they can: some hold one data codeword more than the others.
 */
static const uint8_t ecc_per_block[4][QR_VERSION_MAX] = {
	[QR_ECC_L] = {7,  10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30,
		      22, 24, 28, 30, 28, 28, 28, 28, 30, 30, 26, 28, 30, 30,
		      30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30},
	[QR_ECC_M] = {10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24,
		      24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28, 28, 28,
		      28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28},
	[QR_ECC_Q] = {13, 22, 18, 26, 18, 24, 18, 22, 20, 24, 28, 26, 24, 20,
		      30, 24, 28, 28, 26, 30, 28, 30, 30, 30, 30, 28, 30, 30,
		      30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30},
	[QR_ECC_H] = {17, 28, 22, 16, 22, 28, 26, 26, 24, 28, 24, 28, 22, 24,
		      24, 30, 28, 28, 26, 28, 30, 24, 30, 30, 30, 30, 30, 30,
		      30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30},
};

static const uint8_t ecc_blocks[4][QR_VERSION_MAX] = {
	[QR_ECC_L] = {1,  1,  1,  1,  1,  2,  2,  2,  2,  4,  4,  4,  4,  4,
		      6,  6,  6,  6,  7,  8,  8,  9,  9,  10, 12, 12, 12, 13,
		      14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25},
	[QR_ECC_M] = {1,  1,  1,  2,  2,  4,  4,  4,  5,  5,  5,  8,  9,  9,
		      10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26,
		      28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49},
	[QR_ECC_Q] = {1,  1,  2,  2,  4,  4,  6,  6,  8,  8,  8,  10, 12, 16,
		      12, 17, 16, 18, 21, 20, 23, 23, 25, 27, 29, 34, 34, 35,
		      38, 40, 43, 45, 48, 51, 53, 56, 59, 62, 65, 68},
	[QR_ECC_H] = {1,  1,  2,  4,  4,  4,  5,  6,  8,  8,  11, 11, 16, 16,
		      18, 16, 19, 21, 25, 25, 25, 34, 30, 32, 35, 37, 40, 42,
		      45, 48, 51, 54, 57, 60, 63, 66, 70, 74, 77, 81},
};

/* Table 12: the level's two bits in the format information. */
static const uint8_t ecc_format_bits[4] = {
	[QR_ECC_L] = 1,
	[QR_ECC_M] = 0,
	[QR_ECC_Q] = 3,
	[QR_ECC_H] = 2,
};

#define MODE_BYTE	  0x4 /* Table 2 */
#define MODE_BITS	  4
#define PAD_FIRST	  0xec /* 6.4.10: 11101100, 00010001 alternately */
#define PAD_SECOND	  0x11
#define TERMINATOR_BITS	  4
#define MAX_CODEWORDS	  3706 /* Table 1, version 40 */
#define MAX_ECC_PER_BLOCK 30
#define MODULE_BYTES	  ((QR_SIZE_MAX * QR_SIZE_MAX + 7) / 8)
#define FINDER_SIZE	  7
#define TIMING_LINE	  6 /* the row and the column of the timing patterns */
#define VERSION_INFO_FROM 7 /* versions that carry version information */
#define MASKS		  8

/* Byte count bits (Table 3): 8 for versions 1-9, 16 for 10-40. */
static unsigned count_bits(unsigned version)
{
	return version < 10 ? 8 : 16;
}

static bool args_ok(unsigned version, enum qr_ecc ecc)
{
	return version >= QR_VERSION_MIN && version <= QR_VERSION_MAX &&
	       (unsigned)ecc <= QR_ECC_H;
}

/* Alignment patterns per row and column (Annex E): none in version 1. */
static unsigned alignment_count(unsigned version)
{
	return version == 1 ? 0 : version / 7 + 2;
}

/*
 * Codewords in the symbol (Table 1), from the modules left over by the
 * function patterns: the three finders with separators (8 x 8 each), the
 * format information and dark module (31), the timing lines between the
 * separators, the alignment patterns (5 x 5, less the three that would
 * sit on finders; those on a timing line share 5 modules with it), and
 * version information (two 6 x 3 blocks). Bits past the last whole
 * codeword are remainder bits.
 */
static unsigned total_codewords(unsigned version)
{
	unsigned size = QR_SIZE(version);
	unsigned n = alignment_count(version);
	unsigned modules = size * size - 3 * 64 - 31 - 2 * (size - 16);

	if (n) {
		modules -= 25 * (n * n - 3);
		modules += 2 * 5 * (n - 2);
	}
	if (version >= VERSION_INFO_FROM)
		modules -= 2 * 18;
	return modules / 8;
}

static unsigned data_codewords(unsigned version, enum qr_ecc ecc)
{
	return total_codewords(version) -
	       ecc_blocks[ecc][version - 1] * ecc_per_block[ecc][version - 1];
}

size_t qr_capacity(unsigned version, enum qr_ecc ecc)
{
	if (!args_ok(version, ecc))
		return 0;
	return (data_codewords(version, ecc) * 8 - MODE_BITS -
		count_bits(version)) /
	       8;
}

unsigned qr_fit(size_t len, enum qr_ecc ecc, unsigned max_version)
{
	if (max_version > QR_VERSION_MAX)
		max_version = QR_VERSION_MAX;
	for (unsigned v = QR_VERSION_MIN; v <= max_version; v++) {
		if (len <= qr_capacity(v, ecc))
			return v;
	}
	return 0;
}

/* --- Reed-Solomon over GF(256) (6.5.2, Annex A) ------------------------- */

/*
 * Product in GF(2^8) modulo the field's polynomial x^8 + x^4 + x^3 + x^2 + 1
 * (0x11d): carry-less multiplication, reducing whenever x^8 appears.
 */
static uint8_t gf_mul(uint8_t a, uint8_t b)
{
	unsigned product = 0, x = a;

	for (; b; b >>= 1) {
		if (b & 1)
			product ^= x;
		x <<= 1;
		if (x & 0x100)
			x ^= 0x11d;
	}
	return (uint8_t)product;
}

/*
 * The generator polynomial of degree n (Annex A): (x - a^0)(x - a^1)...
 * (x - a^(n-1)) with a = 2. gen[i] is the coefficient of x^(n-1-i); the
 * leading coefficient, 1, is left out.
 */
static void rs_generator(unsigned n, uint8_t *gen)
{
	uint8_t root = 1;

	memset(gen, 0, n);
	gen[n - 1] = 1; /* the polynomial 1, as the last coefficient */
	for (unsigned i = 0; i < n; i++) {
		/* Multiply by (x - root), which is (x + root) in GF(2^8). */
		for (unsigned j = 0; j < n; j++) {
			gen[j] = gf_mul(gen[j], root);
			if (j + 1 < n)
				gen[j] ^= gen[j + 1];
		}
		root = gf_mul(root, 2);
	}
}

/*
 * The error correction codewords of one block: the remainder of
 * data(x) * x^n divided by the generator, computed as a shift register.
 */
static void rs_remainder(const uint8_t *data, unsigned len, const uint8_t *gen,
			 unsigned n, uint8_t *ecc)
{
	memset(ecc, 0, n);
	for (unsigned i = 0; i < len; i++) {
		uint8_t factor = data[i] ^ ecc[0];

		memmove(ecc, ecc + 1, n - 1);
		ecc[n - 1] = 0;
		for (unsigned j = 0; j < n; j++)
			ecc[j] ^= gf_mul(gen[j], factor);
	}
}

/* --- Scratch memory (not reentrant) -------------------------------------- */

static uint8_t data_scratch[MAX_CODEWORDS];   /* step 1, in block order */
static uint8_t stream_scratch[MAX_CODEWORDS]; /* step 3, interleaved */
static uint8_t function_map[MODULE_BYTES];    /* 1 = function module */

/* --- Steps 1 to 3: the codeword stream ----------------------------------- */

struct bit_writer {
	uint8_t *buf;
	unsigned bits;
};

/* Appends the low n bits of value, most significant first. */
static void put_bits(struct bit_writer *w, unsigned value, unsigned n)
{
	while (n--) {
		if ((value >> n) & 1)
			w->buf[w->bits / 8] |= (uint8_t)(0x80 >> (w->bits % 8));
		w->bits++;
	}
}

static void build_data(const uint8_t *data, size_t len, unsigned version,
		       unsigned capacity, uint8_t *out)
{
	struct bit_writer w = {out, 0};
	unsigned limit = capacity * 8;

	memset(out, 0, capacity);
	put_bits(&w, MODE_BYTE, MODE_BITS);
	put_bits(&w, (unsigned)len, count_bits(version));
	for (size_t i = 0; i < len; i++)
		put_bits(&w, data[i], 8);
	/* The terminator may be cut short by the end of the capacity. */
	w.bits += MIN(TERMINATOR_BITS, limit - w.bits);
	w.bits = ALIGN_UP(w.bits, 8);
	for (unsigned i = w.bits / 8, pad = PAD_FIRST; i < capacity; i++) {
		out[i] = (uint8_t)pad;
		pad = pad == PAD_FIRST ? PAD_SECOND : PAD_FIRST;
	}
}

/* Steps 2 and 3: data in block order, in[], to the symbol's stream, out[]. */
static void add_ecc_and_interleave(const uint8_t *in, unsigned version,
				   enum qr_ecc ecc, uint8_t *out)
{
	unsigned blocks = ecc_blocks[ecc][version - 1];
	unsigned n = ecc_per_block[ecc][version - 1];
	unsigned total = total_codewords(version);
	/* The first blocks are one data codeword short of the others. */
	unsigned short_blocks = blocks - total % blocks;
	unsigned short_data = total / blocks - n;
	uint8_t gen[MAX_ECC_PER_BLOCK], block_ecc[MAX_ECC_PER_BLOCK];
	unsigned data_total = total - blocks * n;
	const uint8_t *block = in;

	rs_generator(n, gen);
	for (unsigned b = 0; b < blocks; b++) {
		unsigned len = short_data + (b >= short_blocks);

		/* Data codeword i of block b: after i codewords of every
		 * block, but the short blocks have none at short_data. */
		for (unsigned i = 0; i < len; i++) {
			unsigned at = i * blocks + b;

			if (i == short_data)
				at -= short_blocks;
			out[at] = block[i];
		}
		rs_remainder(block, len, gen, n, block_ecc);
		for (unsigned i = 0; i < n; i++)
			out[data_total + i * blocks + b] = block_ecc[i];
		block += len;
	}
}

/* --- The module map -------------------------------------------------------- */

static bool map_get(const uint8_t *map, unsigned size, unsigned x, unsigned y)
{
	unsigned bit = y * size + x;

	return (map[bit / 8] >> (bit % 8)) & 1;
}

static void map_set(uint8_t *map, unsigned size, unsigned x, unsigned y,
		    bool on)
{
	unsigned bit = y * size + x;

	if (on)
		map[bit / 8] |= (uint8_t)(1u << (bit % 8));
	else
		map[bit / 8] &= (uint8_t) ~(1u << (bit % 8));
}

bool qr_module(const struct qr_code *qr, unsigned x, unsigned y)
{
	/* Off the symbol is the light quiet zone. */
	if (x >= qr->size || y >= qr->size)
		return false;
	return map_get(qr->modules, qr->size, x, y);
}

static void set_function(struct qr_code *qr, unsigned x, unsigned y, bool dark)
{
	map_set(qr->modules, qr->size, x, y, dark);
	map_set(function_map, qr->size, x, y, true);
}

/*
 * A finder (6.3.2: dark 7 x 7 ring, light ring, dark 3 x 3 core) with its
 * light separator, centred on (cx, cy); the parts off the symbol are cut.
 */
static void draw_finder(struct qr_code *qr, int cx, int cy)
{
	for (int dy = -4; dy <= 4; dy++) {
		for (int dx = -4; dx <= 4; dx++) {
			int x = cx + dx, y = cy + dy;
			int ring = MAX(dx < 0 ? -dx : dx, dy < 0 ? -dy : dy);

			if (x < 0 || y < 0 || x >= (int)qr->size ||
			    y >= (int)qr->size)
				continue;
			set_function(qr, (unsigned)x, (unsigned)y,
				     ring != 2 && ring != 4);
		}
	}
}

/* An alignment pattern (6.3.6): dark 5 x 5 ring, light ring, dark centre. */
static void draw_alignment(struct qr_code *qr, unsigned cx, unsigned cy)
{
	for (int dy = -2; dy <= 2; dy++) {
		for (int dx = -2; dx <= 2; dx++) {
			int ring = MAX(dx < 0 ? -dx : dx, dy < 0 ? -dy : dy);

			set_function(qr, (unsigned)((int)cx + dx),
				     (unsigned)((int)cy + dy), ring != 1);
		}
	}
}

/*
 * Table E.1's row and column coordinates of the alignment centres: 6, the
 * last at size - 7, the rest spaced evenly between them by an even step
 * (version 32's step, 26, is the exception to the rounding). Returns the
 * count.
 */
static unsigned alignment_positions(unsigned version, unsigned *pos)
{
	unsigned n = alignment_count(version);
	unsigned last = QR_SIZE(version) - 7, step;

	if (!n)
		return 0;
	if (version == 32)
		step = 26;
	else
		step = (version * 4 + n * 2 + 1) / (n * 2 - 2) * 2;
	pos[0] = 6;
	for (unsigned i = n - 1; i >= 1; i--)
		pos[i] = last - (n - 1 - i) * step;
	return n;
}

/* 6.9: 5 bits (level, mask) and 10 bits of BCH(15,5) code, XOR 0x5412 so
 * that no format information is all zero (Annex C, Table C.1). */
static unsigned format_bits(enum qr_ecc ecc, unsigned mask)
{
	unsigned data = (unsigned)ecc_format_bits[ecc] << 3 | mask;
	unsigned rem = data << 10;

	for (int bit = 14; bit >= 10; bit--) {
		if (rem & (1u << bit))
			rem ^= 0x537u
			       << (bit - 10); /* x^10+x^8+x^5+x^4+x^2+x+1 */
	}
	return ((data << 10) | rem) ^ 0x5412;
}

/* 6.10: 6 bits of version and 12 bits of BCH(18,6) code (Annex D). */
static unsigned version_bits(unsigned version)
{
	unsigned rem = version << 12;

	for (int bit = 17; bit >= 12; bit--) {
		if (rem & (1u << bit))
			rem ^= 0x1f25u
			       << (bit -
				   12); /* x^12+x^11+x^10+x^9+x^8+x^5+x^2+1 */
	}
	return (version << 12) | rem;
}

/*
 * Figure 25: the two copies of the 15 format bits (bit 14 most
 * significant). One runs down column 8 beside the top-left finder and
 * left along row 8 below it, stepping over the timing lines; the other is
 * split between row 8 under the top-right finder (bits 0-7, right to
 * left) and column 8 beside the bottom-left finder (bits 8-14, top to
 * bottom). Also draws the dark module (6.9.1), which sits beside it.
 */
static void draw_format(struct qr_code *qr, unsigned bits)
{
	unsigned size = qr->size;

	for (unsigned i = 0; i < 15; i++) {
		bool dark = (bits >> i) & 1;

		if (i < 6)
			set_function(qr, 8, i, dark);
		else if (i < 8)
			set_function(qr, 8, i + 1, dark);
		else if (i == 8)
			set_function(qr, 7, 8, dark);
		else
			set_function(qr, 14 - i, 8, dark);
		if (i < 8)
			set_function(qr, size - 1 - i, 8, dark);
		else
			set_function(qr, 8, size - 15 + i, dark);
	}
	set_function(qr, 8, size - 8, true);
}

/*
 * Figure 27: the 18 version bits twice, in a 6 x 3 block left of the
 * top-right finder and its mirror image above the bottom-left one.
 */
static void draw_version(struct qr_code *qr)
{
	unsigned bits = version_bits(qr->version);

	for (unsigned i = 0; i < 18; i++) {
		bool dark = (bits >> i) & 1;
		unsigned a = qr->size - 11 + i % 3, b = i / 3;

		set_function(qr, a, b, dark);
		set_function(qr, b, a, dark);
	}
}

/* Every function pattern; the format areas reserved (drawn light). */
static void draw_function_patterns(struct qr_code *qr)
{
	unsigned size = qr->size, pos[7];
	unsigned n = alignment_positions(qr->version, pos);

	/* Timing (6.3.5): alternating, dark on even coordinates. */
	for (unsigned i = 0; i < size; i++) {
		set_function(qr, TIMING_LINE, i, i % 2 == 0);
		set_function(qr, i, TIMING_LINE, i % 2 == 0);
	}
	draw_finder(qr, 3, 3);
	draw_finder(qr, (int)size - 4, 3);
	draw_finder(qr, 3, (int)size - 4);
	for (unsigned i = 0; i < n; i++) {
		for (unsigned j = 0; j < n; j++) {
			/* Not where a finder is. */
			if ((i == 0 && j == 0) || (i == 0 && j == n - 1) ||
			    (i == n - 1 && j == 0))
				continue;
			draw_alignment(qr, pos[i], pos[j]);
		}
	}
	draw_format(qr, 0);
	if (qr->version >= VERSION_INFO_FROM)
		draw_version(qr);
}

/* --- Step 4: placement ------------------------------------------------------ */

static void place_codewords(struct qr_code *qr, const uint8_t *stream,
			    unsigned count)
{
	unsigned size = qr->size, bit = 0;

	/* Column pairs right to left; the vertical timing line is skipped
	 * whole, so the pairs left of it start one column further left. */
	for (int right = (int)size - 1; right >= 1; right -= 2) {
		if (right == TIMING_LINE)
			right--;
		/* Up in the first pair, then alternately down and up. */
		bool upward = ((right + 1) & 2) == 0;

		for (unsigned step = 0; step < size; step++) {
			unsigned y = upward ? size - 1 - step : step;

			for (int dx = 0; dx < 2; dx++) {
				unsigned x = (unsigned)(right - dx);

				if (map_get(function_map, size, x, y))
					continue;
				if (bit < count * 8) {
					bool dark = (stream[bit / 8] >>
						     (7 - bit % 8)) &
						    1;

					map_set(qr->modules, size, x, y, dark);
				}
				bit++;
			}
		}
	}
}

/* --- Step 5: masking ------------------------------------------------------------ */

/* Table 10: where mask pattern m inverts a module (i = row, j = column). */
static bool mask_inverts(unsigned m, unsigned i, unsigned j)
{
	switch (m) {
	case 0:
		return (i + j) % 2 == 0;
	case 1:
		return i % 2 == 0;
	case 2:
		return j % 3 == 0;
	case 3:
		return (i + j) % 3 == 0;
	case 4:
		return (i / 2 + j / 3) % 2 == 0;
	case 5:
		return (i * j) % 2 + (i * j) % 3 == 0;
	case 6:
		return ((i * j) % 2 + (i * j) % 3) % 2 == 0;
	default:
		return ((i + j) % 2 + (i * j) % 3) % 2 == 0;
	}
}

/* XORs mask m onto the data modules: applying it twice undoes it. */
static void apply_mask(struct qr_code *qr, unsigned m)
{
	for (unsigned y = 0; y < qr->size; y++) {
		for (unsigned x = 0; x < qr->size; x++) {
			if (map_get(function_map, qr->size, x, y) ||
			    !mask_inverts(m, y, x))
				continue;
			map_set(qr->modules, qr->size, x, y,
				!qr_module(qr, x, y));
		}
	}
}

/* Table 11's weights. */
#define PENALTY_RUN	 3  /* N1: a run of 5 + k alike, plus k */
#define PENALTY_BLOCK	 3  /* N2: each 2 x 2 block alike */
#define PENALTY_FINDER	 40 /* N3: 1:1:3:1:1 with 4 light on a side */
#define PENALTY_BALANCE	 10 /* N4: each 5 % of imbalance from 50 % dark */
#define PENALTY_RUN_FROM 5

/* Module i of line `line`, read along a row (across) or a column. */
static bool line_module(const struct qr_code *qr, bool across, unsigned line,
			unsigned i)
{
	return across ? qr_module(qr, i, line) : qr_module(qr, line, i);
}

/* Light modules i..i+3, where those off the symbol count as the light
 * quiet zone. */
static bool light_run_of_four(const struct qr_code *qr, bool across,
			      unsigned line, int i)
{
	for (int k = i; k < i + 4; k++) {
		if (k >= 0 && k < (int)qr->size &&
		    line_module(qr, across, line, (unsigned)k))
			return false;
	}
	return true;
}

/* Rules 1 and 3 along every row (across) or every column. */
static unsigned line_penalty(const struct qr_code *qr, bool across)
{
	/* dark, light, dark, dark, dark, light, dark: a finder's profile */
	static const bool finder[7] = {1, 0, 1, 1, 1, 0, 1};
	unsigned size = qr->size, penalty = 0;

	for (unsigned line = 0; line < size; line++) {
		unsigned run = 0;

		for (unsigned i = 0; i < size; i++) {
			bool dark = line_module(qr, across, line, i);

			if (i > 0 &&
			    dark == line_module(qr, across, line, i - 1))
				run++;
			else
				run = 1;
			if (run == PENALTY_RUN_FROM)
				penalty += PENALTY_RUN;
			else if (run > PENALTY_RUN_FROM)
				penalty++;
		}
		for (unsigned i = 0; i + 7 <= size; i++) {
			unsigned k = 0;

			while (k < 7 && line_module(qr, across, line, i + k) ==
						finder[k])
				k++;
			if (k == 7 &&
			    (light_run_of_four(qr, across, line, (int)i - 4) ||
			     light_run_of_four(qr, across, line, (int)i + 7)))
				penalty += PENALTY_FINDER;
		}
	}
	return penalty;
}

static unsigned penalty(const struct qr_code *qr)
{
	unsigned size = qr->size, dark = 0, total = size * size;
	unsigned score = line_penalty(qr, true) + line_penalty(qr, false);

	for (unsigned y = 0; y < size; y++) {
		for (unsigned x = 0; x < size; x++) {
			bool d = qr_module(qr, x, y);

			dark += d;
			/* Rule 2 */
			if (x + 1 < size && y + 1 < size &&
			    d == qr_module(qr, x + 1, y) &&
			    d == qr_module(qr, x, y + 1) &&
			    d == qr_module(qr, x + 1, y + 1))
				score += PENALTY_BLOCK;
		}
	}
	/* Rule 4: whole 5 % steps between the dark share and 50 %, that is
	 * |100 dark / total - 50| / 5 = |20 dark - 10 total| / total. */
	unsigned twenty = 20 * dark, ten = 10 * total;
	unsigned steps = (twenty > ten ? twenty - ten : ten - twenty) / total;

	return score + PENALTY_BALANCE * steps;
}

bool qr_encode(const uint8_t *data, size_t len, unsigned version,
	       enum qr_ecc ecc, struct qr_code *out)
{
	unsigned best_mask = 0, best_penalty = ~0u;

	if (!out || !args_ok(version, ecc) || (len && !data) ||
	    len > qr_capacity(version, ecc))
		return false;
	out->version = version;
	out->size = QR_SIZE(version);
	memset(out->modules, 0, sizeof(out->modules));
	memset(function_map, 0, sizeof(function_map));

	draw_function_patterns(out);
	build_data(data, len, version, data_codewords(version, ecc),
		   data_scratch);
	add_ecc_and_interleave(data_scratch, version, ecc, stream_scratch);
	place_codewords(out, stream_scratch, total_codewords(version));

	for (unsigned m = 0; m < MASKS; m++) {
		unsigned p;

		apply_mask(out, m);
		draw_format(out, format_bits(ecc, m));
		p = penalty(out);
		if (p < best_penalty) {
			best_penalty = p;
			best_mask = m;
		}
		apply_mask(out, m);
	}
	apply_mask(out, best_mask);
	draw_format(out, format_bits(ecc, best_mask));
	return true;
}
