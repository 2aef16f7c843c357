/* SPDX-License-Identifier: MIT */
/*
 * The kernel command-line parser: typed options, every problem reported.
 * Pure logic (no hardware, no globals), so host unit tests run it on crafted
 * input. kernel/options.c holds the kernel's own option table.
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

#define OPTION_LIST_MAX 32 /* words a list option can name */

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
		unsigned choice; /* CHOICE: index into choices */
		uint64_t number; /* UINT */
		bool flag;	 /* FLAG */
		uint32_t words;	 /* LIST: bit i = choices[i] named */
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
