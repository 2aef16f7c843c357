// SPDX-License-Identifier: MIT
#include "lib/cmdline.h"
#include "lib/inject.h"
#include "lib/string.h"

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Words of a CHOICE or LIST option, "a|b|c", for messages. */
static void choices_text(const struct option_desc *d, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (const char *const *c = d->choices; *c; c++) {
		size_t len = strlen(*c);

		if (used + len + 2 > size)
			break;
		if (used)
			buf[used++] = '|';
		memcpy(buf + used, *c, len);
		used += len;
		buf[used] = '\0';
	}
}

/* Index of word in d's choices (a LIST's first OPTION_LIST_MAX), or -1. */
static int find_choice(const struct option_desc *d, const char *word,
		       size_t len)
{
	for (int i = 0; d->choices[i]; i++) {
		if (d->type == OPTION_LIST && i == OPTION_LIST_MAX)
			break;
		if (strlen(d->choices[i]) == len &&
		    !strncmp(d->choices[i], word, len))
			return i;
	}
	return -1;
}

/* Decimal or 0x-prefixed hexadecimal, no sign, no overflow. */
static bool parse_uint(const char *s, uint64_t *out)
{
	unsigned base = 10;
	uint64_t v = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned digit;

		if (*s >= '0' && *s <= '9')
			digit = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			digit = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			digit = (unsigned)(*s - 'A' + 10);
		else
			return false;
		if (v > (UINT64_MAX - digit) / base)
			return false;
		v = v * base + digit;
	}
	*out = v;
	return true;
}

/*
 * Whether d is a subsystem's deliberate-bug switch (lib/inject.h): a
 * CHOICE named `<subsystem>_bug`, whose words past the first (none) exist
 * only in the injection kernel.
 */
static bool is_bug_option(const struct option_desc *d)
{
	size_t len = strlen(d->name);

	return d->type == OPTION_CHOICE && len > 4 &&
	       !strcmp(d->name + len - 4, "_bug");
}

/* Parses value for option d into *v; returns false if it is not valid. */
static bool parse_value(const struct option_desc *d, const char *value,
			struct option_value *v)
{
	int i;

	switch (d->type) {
	case OPTION_CHOICE:
		if (!value || (i = find_choice(d, value, strlen(value))) < 0)
			return false;
		v->choice = (unsigned)i;
		return true;
	case OPTION_UINT:
		return value && parse_uint(value, &v->number) &&
		       v->number >= d->min && v->number <= d->max;
	case OPTION_FLAG:
		if (!value || !strcmp(value, "on"))
			v->flag = true;
		else if (!strcmp(value, "off"))
			v->flag = false;
		else
			return false;
		return true;
	case OPTION_LIST:
		if (!value || !*value)
			return false;
		v->words = (struct option_words){0};
		for (const char *w = value; *w;) {
			size_t len = 0;

			while (w[len] && w[len] != ',')
				len++;
			if (len == 3 && !strncmp(w, "all", 3)) {
				for (i = 0; d->choices[i]; i++)
					option_words_add(&v->words, (size_t)i);
			} else if ((i = find_choice(d, w, len)) >= 0) {
				option_words_add(&v->words, (size_t)i);
			} else {
				return false;
			}
			w += len;
			if (*w == ',' && *++w == '\0')
				return false; /* trailing comma */
		}
		return true;
	}
	return false;
}

static void report_bad_value(const struct option_desc *d, const char *value,
			     cmdline_report report, void *ctx)
{
	char expected[160];

	switch (d->type) {
	case OPTION_CHOICE:
		choices_text(d, expected, sizeof(expected));
		report(ctx, "option %s: bad value '%s' (expected %s)", d->name,
		       value ? value : "", expected);
		break;
	case OPTION_UINT:
		report(ctx,
		       "option %s: bad value '%s' (expected a number from "
		       "%llu to %llu)",
		       d->name, value ? value : "", (unsigned long long)d->min,
		       (unsigned long long)d->max);
		break;
	case OPTION_FLAG:
		report(ctx, "option %s: bad value '%s' (expected on or off)",
		       d->name, value);
		break;
	case OPTION_LIST:
		choices_text(d, expected, sizeof(expected));
		report(ctx,
		       "option %s: bad value '%s' (expected all or a "
		       "comma-separated list of %s)",
		       d->name, value ? value : "", expected);
		break;
	}
}

static void set_defaults(const struct option_desc *desc, size_t n,
			 struct option_value *values)
{
	for (size_t i = 0; i < n; i++) {
		values[i] = (struct option_value){0};
		if (desc[i].type == OPTION_UINT)
			values[i].number = desc[i].def;
	}
}

/* One token "name" or "name=value" (NUL-terminated copy). */
static int parse_token(char *token, const struct option_desc *desc, size_t n,
		       struct option_value *values, cmdline_report report,
		       void *ctx)
{
	char *value = NULL;
	char *eq = token;
	struct option_value parsed;

	while (*eq && *eq != '=')
		eq++;
	if (*eq == '=') {
		*eq = '\0';
		value = eq + 1;
	}
	if (!*token) {
		report(ctx, "option '=%s' has no name", value);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		if (strcmp(desc[i].name, token))
			continue;
		if (!parse_value(&desc[i], value, &parsed)) {
			report_bad_value(&desc[i], value, report, ctx);
			return 1;
		}
		if (!INJECT_BUILT && is_bug_option(&desc[i]) && parsed.choice) {
			report(ctx,
			       "option %s=%s: this kernel has no deliberate "
			       "bugs built in; `make inject` builds one "
			       "(build/inject/shootdown.elf)",
			       token, value);
			return 1;
		}
		parsed.given = true;
		if (values[i].given) {
			values[i] = parsed;
			report(ctx,
			       "option %s given twice: the last one counts",
			       token);
			return 1;
		}
		values[i] = parsed;
		return 0;
	}
	report(ctx, "unknown option '%s' (ignored)", token);
	return 1;
}

static size_t append(char *buf, size_t size, size_t used, const char *s)
{
	size_t len = strlen(s);

	if (size && used < size - 1) {
		size_t n = MIN(len, size - 1 - used);

		memcpy(buf + used, s, n);
		buf[used + n] = '\0';
	}
	return used + len;
}

size_t cmdline_format_value(const struct option_desc *d,
			    const struct option_value *v, char *buf,
			    size_t size)
{
	size_t used = 0;
	char number[24];
	bool all = true, any = false;
	size_t i;

	if (size)
		buf[0] = '\0';
	switch (d->type) {
	case OPTION_CHOICE:
		return append(buf, size, 0, d->choices[v->choice]);
	case OPTION_FLAG:
		return append(buf, size, 0, v->flag ? "on" : "off");
	case OPTION_UINT: {
		uint64_t n = v->number;
		size_t len = 0;

		do {
			number[sizeof(number) - 2 - len++] =
				(char)('0' + n % 10);
			n /= 10;
		} while (n);
		number[sizeof(number) - 1] = '\0';
		return append(buf, size, 0, number + sizeof(number) - 1 - len);
	}
	case OPTION_LIST:
		/* "all": every word that can be named is named. */
		for (i = 0; i < OPTION_LIST_MAX && d->choices[i]; i++) {
			any |= option_words_has(&v->words, i);
			all &= option_words_has(&v->words, i);
		}
		if (any && all)
			return append(buf, size, 0, "all");
		for (i = 0; d->choices[i]; i++) {
			if (!option_words_has(&v->words, i))
				continue;
			if (used)
				used = append(buf, size, used, ",");
			used = append(buf, size, used, d->choices[i]);
		}
		return used;
	}
	return 0;
}

int cmdline_parse(const char *line, const struct option_desc *desc, size_t n,
		  struct option_value *values, cmdline_report report, void *ctx)
{
	int problems = 0;

	set_defaults(desc, n, values);
	if (!line)
		return 0;
	while (*line) {
		char token[CMDLINE_TOKEN_MAX + 1];
		size_t len = 0;

		while (is_space(*line))
			line++;
		if (!*line)
			break;
		while (line[len] && !is_space(line[len]))
			len++;
		if (len > CMDLINE_TOKEN_MAX) {
			report(ctx,
			       "option '%.24s...' is longer than %d "
			       "characters (ignored)",
			       line, CMDLINE_TOKEN_MAX);
			problems++;
		} else {
			memcpy(token, line, len);
			token[len] = '\0';
			problems += parse_token(token, desc, n, values, report,
						ctx);
		}
		line += len;
	}
	return problems;
}
