/* SPDX-License-Identifier: MIT */
/*
 * A zlib-format compressor: the RFC 1950 wrapper (header, Adler-32) around
 * an RFC 1951 deflate stream, which Python's zlib.decompress() and every
 * other inflater read. LZ77 over a 32 KiB window finds repeats through a
 * hash table; each block of input is then written with whichever costs
 * least: Huffman codes built for the block (dynamic), the fixed codes, or
 * stored as is, so the output never exceeds ZLIB_BOUND(n). Pure logic, no
 * allocation.
 *
 * Not reentrant: the hash table, its chains and a block's symbols are
 * static scratch memory, DEFLATE_SCRATCH_BYTES of it (the kernel calls it
 * from one thread).
 */
#ifndef LIB_DEFLATE_H
#define LIB_DEFLATE_H

#include "lib/types.h"

#define DEFLATE_WINDOW	    32768 /* the longest distance deflate has */
#define DEFLATE_HASH_BITS   14
#define DEFLATE_BLOCK_BYTES 16384 /* input bytes per block */
#define DEFLATE_SCRATCH_BYTES                              \
	((4u << DEFLATE_HASH_BITS) + 2u * DEFLATE_WINDOW + \
	 4u * DEFLATE_BLOCK_BYTES)

/* The most zlib_compress() writes for n bytes: the 2-byte header, every
 * block stored (5 bytes of framing each), the 4-byte Adler-32. */
#define ZLIB_BOUND(n) ((n) + 5 * ((n) / DEFLATE_BLOCK_BYTES + 1) + 6)

/*
 * Compresses n bytes into out (cap bytes). Returns the bytes written, 0 if
 * out is too small (a cap of ZLIB_BOUND(n) always suffices) or n is
 * 4 GiB or more.
 */
size_t zlib_compress(const uint8_t *in, size_t n, uint8_t *out, size_t cap);

#endif
