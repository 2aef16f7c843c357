/* SPDX-License-Identifier: MIT */
/*
 * The kernel command-line parser: typed options, every problem reported.
 * Pure logic (no hardware, no globals), so host unit tests run it on crafted
 * input. The kernel's options are declared by the subsystems they steer
 * (lib/option.h) and collected by boot/options.c.
 *
 * Syntax: options separated by spaces or tabs; each is `name=value`, or
 * `name` alone for a flag. A value is one word: no quoting, no spaces.
 */
#ifndef LIB_CMDLINE_H
#define LIB_CMDLINE_H

#include "lib/types.h"

enum option_type {
	OPTION_CHOICE, /* one of a list of words; the first is the default */
	OPTION_UINT,   /* a decimal or 0x number within [min, max] */
	OPTION_FLAG,   /* present or not; `name=on|off` also accepted */
	OPTION_LIST,   /* comma-separated words from a list, or `all` */
};

/*
 * Words a list option can name: a LIST option's choices beyond the first
 * OPTION_LIST_MAX cannot be selected (naming one is a bad value). 256 is
 * room for every benchmark and group, test suite and boot module with
 * plenty to spare, in 32 bytes.
 */
#define OPTION_LIST_MAX	   256
#define OPTION_WORD_BITS   64
#define OPTION_WORD_CHUNKS (OPTION_LIST_MAX / OPTION_WORD_BITS)

/* The words a LIST option names: bit i = choices[i]. */
struct option_words {
	uint64_t bits[OPTION_WORD_CHUNKS];
};

static inline bool option_words_has(const struct option_words *w, size_t i)
{
	return i < OPTION_LIST_MAX &&
	       (w->bits[i / OPTION_WORD_BITS] >> (i % OPTION_WORD_BITS) & 1);
}

static inline void option_words_add(struct option_words *w, size_t i)
{
	if (i < OPTION_LIST_MAX)
		w->bits[i / OPTION_WORD_BITS] |= 1ULL << (i % OPTION_WORD_BITS);
}

/* True when w names at least one word. */
static inline bool option_words_any(const struct option_words *w)
{
	for (size_t c = 0; c < OPTION_WORD_CHUNKS; c++) {
		if (w->bits[c])
			return true;
	}
	return false;
}

struct option_desc {
	const char *name;
	enum option_type type;
	const char *const *choices; /* CHOICE and LIST: NULL-terminated */
	uint64_t min, max, def;	    /* UINT */
	const char *help;	    /* one line, for the boot report */
};

struct option_value {
	bool given; /* named on the command line */
	union {
		unsigned choice;	   /* CHOICE: index into choices */
		uint64_t number;	   /* UINT */
		bool flag;		   /* FLAG */
		struct option_words words; /* LIST */
	};
};

typedef void (*cmdline_report)(void *ctx, const char *fmt, ...) __printf(2, 3);

/* Longest option (name=value) the parser handles; longer ones are refused. */
#define CMDLINE_TOKEN_MAX 128

/*
 * Parses line against the n options in desc, filling values[i] for
 * desc[i] (defaults first). Each unknown name, bad value, or repeated option
 * is passed to report as one message; returns the number of problems.
 * A bad value leaves the default in place.
 */
int cmdline_parse(const char *line, const struct option_desc *desc, size_t n,
		  struct option_value *values, cmdline_report report,
		  void *ctx);

/*
 * Writes the value in force as the command line would spell it ("on",
 * "33", "boot,mm", "all", "" for an empty list); returns its length.
 */
size_t cmdline_format_value(const struct option_desc *desc,
			    const struct option_value *value, char *buf,
			    size_t size);

#endif
