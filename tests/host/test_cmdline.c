// SPDX-License-Identifier: MIT
/*
 * lib/cmdline.c: typed options, defaults, and one reported message per
 * problem. Each command line is copied to a heap block of exactly its size
 * (ASan sees a read past the NUL); every message is captured and checked
 * for the words that make it useful (option name, bad value, what was
 * expected).
 */
#include "lib/cmdline.h"
#include "tests/host/host_test.h"

static const char *const console_choices[] = {"auto", "serial", "screen",
					      "both", NULL};
static const char *const debug_words[] = {"mm", "sched", "irq", "boot", NULL};

enum { CONSOLE, MEM, CPUS, BIG, QUIET, DEBUG, N_OPTIONS };

static const struct option_desc options[N_OPTIONS] = {
	[CONSOLE] = {.name = "console",
		     .type = OPTION_CHOICE,
		     .choices = console_choices},
	[MEM] = {.name = "mem",
		 .type = OPTION_UINT,
		 .min = 16,
		 .max = 0x100000,
		 .def = 256},
	[CPUS] = {.name = "cpus",
		  .type = OPTION_UINT,
		  .min = 1,
		  .max = 64,
		  .def = 64},
	[BIG] = {.name = "big",
		 .type = OPTION_UINT,
		 .min = 0,
		 .max = UINT64_MAX,
		 .def = 7},
	[QUIET] = {.name = "quiet", .type = OPTION_FLAG},
	[DEBUG] = {.name = "debug",
		   .type = OPTION_LIST,
		   .choices = debug_words},
};

static struct option_value values[N_OPTIONS];

/* A list value naming the words whose bits are set in low (words 0..63). */
static struct option_words words_of(uint64_t low)
{
	struct option_words w = {{low}};

	return w;
}

static bool words_equal(struct option_words a, struct option_words b)
{
	return !memcmp(&a, &b, sizeof(a));
}

/*
 * Parses line (NULL allowed) against options[0..n) into values (filled
 * with garbage first, so defaults must be set); returns the problem count
 * and checks it equals the number of messages.
 */
static int parse_n(const char *file, int line, const char *cmdline, size_t n)
{
	char *copy = cmdline ? strdup(cmdline) : NULL;
	int problems;

	memset(&messages, 0, sizeof(messages));
	memset(values, 0xa5, sizeof(values));
	problems = cmdline_parse(copy, options, n, values, capture, &messages);
	host_check(problems == messages.count, "one message per problem", file,
		   line, "%s: %d problems but %d messages", host_quote(cmdline),
		   problems, messages.count);
	for (int i = 0; i < messages.count && i < MAX_MESSAGES; i++) {
		host_check(messages.text[i][0] &&
				   !strchr(messages.text[i], '\n'),
			   "message is one line", file, line, "message %d: %s",
			   i, host_quote(messages.text[i]));
	}
	if (copy && strcmp(copy, cmdline))
		host_check(false, "line unchanged", file, line,
			   "the parser changed %s to %s", host_quote(cmdline),
			   host_quote(copy));
	free(copy);
	return problems;
}

#define PARSE(line) parse_n(__FILE__, __LINE__, (line), N_OPTIONS)

/* Problem count of line, which must equal want. */
#define PROBLEMS(line, want)                                      \
	do {                                                      \
		int got_ = PARSE(line);                           \
		CHECK(got_ == (want), "%s: %d problems, want %d", \
		      host_quote(line), got_, (want));            \
	} while (0)

/* Message i contains every one of the NULL-terminated words. */
static void message_has(const char *file, int line, int i, ...)
{
	va_list ap;

	if (!host_check(i < messages.count, "message exists", file, line,
			"only %d messages, wanted number %d", messages.count,
			i))
		return;
	va_start(ap, i);
	for (const char *w; (w = va_arg(ap, const char *));) {
		host_check(strstr(messages.text[i], w) != NULL, "word", file,
			   line, "message %s lacks %s",
			   host_quote(messages.text[i]), host_quote(w));
	}
	va_end(ap);
}

#define MESSAGE_HAS(i, ...) \
	message_has(__FILE__, __LINE__, (i), __VA_ARGS__, (const char *)NULL)

static void check_defaults(const char *file, int line, unsigned except)
{
	for (int i = 0; i < N_OPTIONS; i++) {
		const struct option_desc *d = &options[i];
		const struct option_value *v = &values[i];
		bool ok = false;

		if (except & (1u << i))
			continue;
		host_check(!v->given, "default", file, line, "%s marked given",
			   d->name);
		/* Each through its own member (the union is not all set). */
		switch (d->type) {
		case OPTION_CHOICE:
			ok = v->choice == 0;
			break;
		case OPTION_UINT:
			ok = v->number == d->def;
			break;
		case OPTION_FLAG:
			ok = !v->flag;
			break;
		case OPTION_LIST:
			ok = !option_words_any(&v->words);
			break;
		}
		host_check(ok, "default", file, line,
			   "%s does not have its default value", d->name);
	}
}

/* Every option except those in the mask has its default, not given. */
#define DEFAULTS_EXCEPT(mask) check_defaults(__FILE__, __LINE__, (mask))
#define DEFAULTS()	      DEFAULTS_EXCEPT(0)

HOST_TEST(defaults_when_absent)
{
	static const char *const blank[] = {"", " ", "\t\t", "\n", " \t\r\n "};

	CHECK_EQ(PARSE(NULL), 0);
	DEFAULTS();
	CHECK_EQ(values[CONSOLE].choice, 0);
	CHECK_EQ(values[QUIET].flag, false);
	CHECK(!option_words_any(&values[DEBUG].words), "debug named");
	for (size_t i = 0; i < ARRAY_SIZE(blank); i++) {
		CHECK_EQ(PARSE(blank[i]), 0);
		DEFAULTS();
	}
	/* No options at all: defaults only touch values[0..n). */
	memset(&messages, 0, sizeof(messages));
	CHECK_EQ(cmdline_parse("quiet", options, 0, NULL, capture, &messages),
		 1);
	CHECK_EQ(messages.count, 1);
	MESSAGE_HAS(0, "unknown", "'quiet'");
}

HOST_TEST(choice)
{
	PROBLEMS("console=screen", 0);
	CHECK_EQ(values[CONSOLE].choice, 2);
	CHECK(values[CONSOLE].given, "not given");
	DEFAULTS_EXCEPT(1u << CONSOLE);
	PROBLEMS("console=auto", 0);
	CHECK_EQ(values[CONSOLE].choice, 0);
	CHECK(values[CONSOLE].given, "not given");
	PROBLEMS("console=both", 0);
	CHECK_EQ(values[CONSOLE].choice, 3);

	static const char *const bad[] = {
		"console=bogus",	"console=Screen", "console=screens",
		"console=scree",	"console=",	  "console",
		"console=serial,screen"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		const char *value = strchr(bad[i], '=');
		char quoted[64];

		snprintf(quoted, sizeof(quoted), "'%s'",
			 value ? value + 1 : "");
		PROBLEMS(bad[i], 1);
		MESSAGE_HAS(0, "console", quoted, "auto|serial|screen|both");
		DEFAULTS();
	}
}

HOST_TEST(uint_values)
{
	static const struct {
		const char *line;
		int option;
		uint64_t want;
	} good[] = {
		{"mem=512", MEM, 512},
		{"mem=0x200", MEM, 512},
		{"mem=0X1f0", MEM, 0x1f0},
		{"mem=0xABcd", MEM, 0xabcd},
		{"mem=16", MEM, 16},		/* min */
		{"mem=1048576", MEM, 0x100000}, /* max */
		{"mem=0x100000", MEM, 0x100000},
		{"mem=00017", MEM, 17}, /* decimal, not octal */
		{"cpus=1", CPUS, 1},
		{"big=0", BIG, 0},
		{"big=18446744073709551615", BIG, UINT64_MAX},
		{"big=0xffffffffffffffff", BIG, UINT64_MAX},
		{"big=0x0000000000000000000001", BIG, 1},
		{"big=1844674407370955161", BIG, 1844674407370955161ULL},
	};

	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		int o = good[i].option;

		PROBLEMS(good[i].line, 0);
		CHECK(values[o].given && values[o].number == good[i].want,
		      "%s: given %d, %llu", good[i].line, values[o].given,
		      (unsigned long long)values[o].number);
		DEFAULTS_EXCEPT(1u << o);
	}
}

HOST_TEST(uint_rejected)
{
	static const char *const bad_mem[] = {
		"mem=15",    "mem=0",	  "mem=1048577", "mem=0x100001",
		"mem=-1",    "mem=+20",	  "mem=12abc",	 "mem=0x",
		"mem=0x1G",  "mem=",	  "mem",	 "mem=1.5",
		"mem=0b101", "mem=20,30", "mem=0x-20",	 "mem= ",
	};
	static const char *const overflow[] = {
		"big=18446744073709551616",    "big=18446744073709551620",
		"big=99999999999999999999999", "big=0x10000000000000000",
		"big=0x1ffffffffffffffff",     "big=184467440737095516150",
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad_mem); i++) {
		/* "mem= " is the token "mem=", then only a space. */
		PROBLEMS(bad_mem[i], 1);
		MESSAGE_HAS(0, "mem", "16", "1048576");
		DEFAULTS();
	}
	for (size_t i = 0; i < ARRAY_SIZE(overflow); i++) {
		PROBLEMS(overflow[i], 1);
		MESSAGE_HAS(0, "big", overflow[i] + 4, "18446744073709551615");
		DEFAULTS();
	}
	/* A space splits the value off: a bad empty value, then "5". */
	PROBLEMS("mem= 5", 2);
	MESSAGE_HAS(0, "mem", "''");
	MESSAGE_HAS(1, "unknown", "'5'");
}

HOST_TEST(flag)
{
	PROBLEMS("quiet", 0);
	CHECK(values[QUIET].given && values[QUIET].flag, "bare flag");
	DEFAULTS_EXCEPT(1u << QUIET);
	PROBLEMS("quiet=on", 0);
	CHECK(values[QUIET].given && values[QUIET].flag, "quiet=on");
	PROBLEMS("quiet=off", 0);
	CHECK(values[QUIET].given && !values[QUIET].flag, "quiet=off");

	static const char *const bad[] = {
		"quiet=maybe", "quiet=ON",     "quiet=1",
		"quiet=",      "quiet=on,off", "quiet==on"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		PROBLEMS(bad[i], 1);
		MESSAGE_HAS(0, "quiet", bad[i] + 6, "on or off");
		DEFAULTS();
	}
}

HOST_TEST(list)
{
	static const struct {
		const char *line;
		uint64_t words;
	} good[] = {
		{"debug=mm", 1u << 0},
		{"debug=irq", 1u << 2},
		{"debug=mm,irq", 1u << 0 | 1u << 2},
		{"debug=boot,sched", 1u << 3 | 1u << 1},
		{"debug=mm,mm", 1u << 0},
		{"debug=all", 0xf},
		{"debug=mm,all", 0xf},
		{"debug=mm,sched,irq,boot", 0xf},
	};
	static const char *const bad[] = {
		"debug=bogus", "debug=mm,",	"debug=",	  "debug",
		"debug=,mm",   "debug=mm,,irq", "debug=mm,bogus", "debug=ALL",
		"debug=all,",  "debug=,",	"debug=mm;irq",
	};

	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		PROBLEMS(good[i].line, 0);
		CHECK(values[DEBUG].given &&
			      words_equal(values[DEBUG].words,
					  words_of(good[i].words)),
		      "%s: given %d, words %#llx", good[i].line,
		      values[DEBUG].given,
		      (unsigned long long)values[DEBUG].words.bits[0]);
		DEFAULTS_EXCEPT(1u << DEBUG);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		PROBLEMS(bad[i], 1);
		MESSAGE_HAS(0, "debug", "all", "mm|sched|irq|boot");
		/* Nothing half-applied: "mm,bogus" leaves no mm bit. */
		DEFAULTS();
	}
}

HOST_TEST(unknown_options)
{
	PROBLEMS("frobnicate", 1);
	MESSAGE_HAS(0, "unknown", "'frobnicate'");
	DEFAULTS();
	PROBLEMS("frob=12", 1);
	MESSAGE_HAS(0, "unknown", "'frob'");
	/* Prefixes and case variants of known names are unknown too. */
	PROBLEMS("memory=5 Mem=5 me=5 quiet2", 4);
	MESSAGE_HAS(0, "'memory'");
	MESSAGE_HAS(1, "'Mem'");
	MESSAGE_HAS(2, "'me'");
	MESSAGE_HAS(3, "'quiet2'");
	DEFAULTS();
	/* Unknown ones do not disturb the known ones around them. */
	PROBLEMS("a mem=100 b=2 quiet c", 3);
	CHECK_EQ(values[MEM].number, 100);
	CHECK(values[QUIET].flag, "quiet lost");
	DEFAULTS_EXCEPT(1u << MEM | 1u << QUIET);
}

HOST_TEST(duplicates_last_wins)
{
	PROBLEMS("mem=100 mem=200", 1);
	CHECK_EQ(values[MEM].number, 200);
	CHECK(values[MEM].given, "not given");
	MESSAGE_HAS(0, "mem", "twice");
	PROBLEMS("quiet quiet=off", 1);
	CHECK(values[QUIET].given && !values[QUIET].flag, "quiet=off lost");
	MESSAGE_HAS(0, "quiet", "twice");
	PROBLEMS("console=serial console=screen console=both", 2);
	CHECK_EQ(values[CONSOLE].choice, 3);
	MESSAGE_HAS(0, "console", "twice");
	MESSAGE_HAS(1, "console", "twice");
	PROBLEMS("debug=mm debug=irq", 1);
	CHECK(words_equal(values[DEBUG].words, words_of(1u << 2)), "irq");
	/* A bad second value keeps the first (one problem: the bad value). */
	PROBLEMS("mem=100 mem=5", 1);
	CHECK_EQ(values[MEM].number, 100);
	MESSAGE_HAS(0, "mem", "'5'");
	/* A bad first value does not make the second a repeat. */
	PROBLEMS("mem=5 mem=100", 1);
	CHECK_EQ(values[MEM].number, 100);
	MESSAGE_HAS(0, "mem", "'5'");
}

HOST_TEST(value_without_name)
{
	PROBLEMS("=5", 1);
	MESSAGE_HAS(0, "'=5'", "no name");
	DEFAULTS();
	PROBLEMS("=", 1);
	MESSAGE_HAS(0, "'='", "no name");
	PROBLEMS("==on", 1);
	MESSAGE_HAS(0, "'==on'", "no name");
	PROBLEMS("quiet =on", 1);
	CHECK(values[QUIET].flag, "quiet lost");
}

/* A line of n copies of c. */
static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);

	memset(s, c, n);
	s[n] = '\0';
	return s;
}

HOST_TEST(overlong_tokens)
{
	char line[1200];
	char *name = repeat('x', CMDLINE_TOKEN_MAX);
	char *value = repeat('7', CMDLINE_TOKEN_MAX - 4);
	char *huge = repeat('y', 1000);

	/* Exactly CMDLINE_TOKEN_MAX: parsed (an unknown name). */
	PROBLEMS(name, 1);
	MESSAGE_HAS(0, "unknown", name);
	/* "big=" + 124 digits is 128 characters: a (bad, too big) number. */
	snprintf(line, sizeof(line), "big=%s", value);
	CHECK_EQ(strlen(line), CMDLINE_TOKEN_MAX);
	PROBLEMS(line, 1);
	MESSAGE_HAS(0, "big", "bad value");
	/* One more: refused whole, the message shows its start. */
	snprintf(line, sizeof(line), "big=%s7", value);
	PROBLEMS(line, 1);
	MESSAGE_HAS(0, "big=77777", "longer than 128");
	DEFAULTS();
	/* The tokens around a refused one still count. */
	snprintf(line, sizeof(line), "quiet %s mem=0x40", huge);
	PROBLEMS(line, 1);
	MESSAGE_HAS(0, "yyyyyyyy", "longer than 128");
	CHECK(values[QUIET].flag, "quiet lost");
	CHECK_EQ(values[MEM].number, 0x40);
	free(name);
	free(value);
	free(huge);
}

HOST_TEST(whitespace)
{
	PROBLEMS("  console=screen\tquiet\n\nmem=0x100 \r\n cpus=8\t", 0);
	CHECK_EQ(values[CONSOLE].choice, 2);
	CHECK(values[QUIET].flag, "quiet lost");
	CHECK_EQ(values[MEM].number, 0x100);
	CHECK_EQ(values[CPUS].number, 8);
	DEFAULTS_EXCEPT(1u << CONSOLE | 1u << QUIET | 1u << MEM | 1u << CPUS);
	PROBLEMS("\tquiet", 0);
	CHECK(values[QUIET].flag, "quiet lost");
}

HOST_TEST(many_problems)
{
	PROBLEMS("console=x mem=1 cpus=65 big=-1 quiet=2 debug=, bogus =3 "
		 "mem=20 mem=30 quiet",
		 9);
	CHECK_EQ(values[MEM].number, 30);
	CHECK(values[QUIET].flag, "quiet lost");
	MESSAGE_HAS(0, "console");
	MESSAGE_HAS(1, "mem", "'1'");
	MESSAGE_HAS(2, "cpus", "'65'", "1 to 64");
	MESSAGE_HAS(3, "big", "'-1'");
	MESSAGE_HAS(4, "quiet", "'2'");
	MESSAGE_HAS(5, "debug", "','");
	MESSAGE_HAS(6, "'bogus'");
	MESSAGE_HAS(7, "'=3'");
	MESSAGE_HAS(8, "mem", "twice");
}

/* The "expected ..." list is cut to its buffer, not overflowed. */
HOST_TEST(long_choice_lists)
{
	static const char *const words[] = {
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
		"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc",
		"dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd",
		NULL};
	const struct option_desc desc[] = {
		{.name = "pick", .type = OPTION_CHOICE, .choices = words},
		{.name = "some", .type = OPTION_LIST, .choices = words},
	};
	struct option_value v[2];

	memset(&messages, 0, sizeof(messages));
	CHECK_EQ(cmdline_parse("pick=x some=y", desc, 2, v, capture, &messages),
		 2);
	CHECK_EQ(messages.count, 2);
	MESSAGE_HAS(0, "pick", words[0], words[1]);
	MESSAGE_HAS(1, "some", words[0], words[1]);
	CHECK(!strstr(messages.text[0], words[3]), "%s",
	      host_quote(messages.text[0]));
}

/* --- cmdline_format_value ------------------------------------------------ */

/*
 * The text for value v of option o, checked at every buffer size from 0 to
 * past its length (exactly-sized heap blocks): same length returned, a
 * prefix written, always terminated.
 */
static void formats_as(const char *file, int line, int o, struct option_value v,
		       const char *want)
{
	size_t len = strlen(want);

	for (size_t size = 0; size <= len + 2; size++) {
		char *buf = size ? malloc(size) : NULL;
		size_t keep = size ? MIN(size - 1, len) : 0;
		size_t n;

		if (size)
			memset(buf, '~', size);
		n = cmdline_format_value(&options[o], &v, buf, size);
		host_check(n == len, "length", file, line,
			   "%s as %s in %zu bytes: returned %zu",
			   options[o].name, host_quote(want), size, n);
		if (size)
			host_check(!memcmp(buf, want, keep) &&
					   buf[keep] == '\0',
				   "text", file, line,
				   "%s in %zu bytes: %s, want a prefix of %s",
				   options[o].name, size,
				   host_quote_n(buf, size), host_quote(want));
		free(buf);
	}
}

#define FORMATS_AS(o, want, ...)            \
	formats_as(__FILE__, __LINE__, (o), \
		   (struct option_value){.given = true, __VA_ARGS__}, (want))

HOST_TEST(format_value)
{
	FORMATS_AS(CONSOLE, "auto", .choice = 0);
	FORMATS_AS(CONSOLE, "both", .choice = 3);
	FORMATS_AS(QUIET, "on", .flag = true);
	FORMATS_AS(QUIET, "off", .flag = false);
	FORMATS_AS(MEM, "0", .number = 0);
	FORMATS_AS(MEM, "7", .number = 7);
	FORMATS_AS(MEM, "1048576", .number = 0x100000);
	FORMATS_AS(BIG, "18446744073709551615", .number = UINT64_MAX);
	FORMATS_AS(BIG, "10000000000000000000",
		   .number = 10000000000000000000ULL);
	FORMATS_AS(DEBUG, "", .words = words_of(0));
	FORMATS_AS(DEBUG, "sched", .words = words_of(1u << 1));
	/* In the order of the choices, not of any command line. */
	FORMATS_AS(DEBUG, "mm,irq,boot",
		   .words = words_of(1u << 3 | 1u << 2 | 1u << 0));
	FORMATS_AS(DEBUG, "all", .words = words_of(0xf));
	FORMATS_AS(DEBUG, "mm,sched,irq", .words = words_of(0x7));
}

/* What format_value writes, parsed again, is the same value. */
HOST_TEST(format_value_round_trip)
{
	char text[64], line[96];

	host_rand_seed(1234);
	for (int iter = 0; iter < 3000; iter++) {
		int o = (int)host_rand_below(N_OPTIONS);
		struct option_value v = {.given = true};
		struct option_value before;

		switch (options[o].type) {
		case OPTION_CHOICE:
			v.choice = (unsigned)host_rand_below(4);
			break;
		case OPTION_UINT: {
			uint64_t span = options[o].max - options[o].min;

			v.number =
				options[o].min +
				(span == UINT64_MAX ? host_rand()
						    : host_rand() % (span + 1));
			if (host_rand_below(4) == 0)
				v.number = host_rand_below(2) ? options[o].min
							      : options[o].max;
			break;
		}
		case OPTION_FLAG:
			v.flag = host_rand_below(2);
			break;
		case OPTION_LIST:
			v.words = words_of(1 + host_rand_below(15));
			break;
		}
		cmdline_format_value(&options[o], &v, text, sizeof(text));
		snprintf(line, sizeof(line), "%s=%s", options[o].name, text);
		before = v;
		if (!CHECK(PARSE(line) == 0, "%s: %s", line,
			   messages.count ? messages.text[0] : ""))
			continue;
		switch (options[o].type) {
		case OPTION_CHOICE:
			CHECK(values[o].choice == before.choice, "%s", line);
			break;
		case OPTION_UINT:
			CHECK(values[o].number == before.number, "%s", line);
			break;
		case OPTION_FLAG:
			CHECK(values[o].flag == before.flag, "%s", line);
			break;
		case OPTION_LIST:
			CHECK(words_equal(values[o].words, before.words), "%s",
			      line);
			break;
		}
	}
}

/* --- Long lists: more words than one machine word holds ------------------ */

/* Choices "w0" ... "w<n-1>", NULL-terminated, for lists of any length. */
#define LONG_LIST_WORDS (OPTION_LIST_MAX + 44)
static char long_names[LONG_LIST_WORDS][8];
static const char *long_choices[LONG_LIST_WORDS + 1];

static const char *const *long_list(size_t n)
{
	for (size_t i = 0; i < LONG_LIST_WORDS; i++) {
		snprintf(long_names[i], sizeof(long_names[i]), "w%zu", i);
		long_choices[i] = long_names[i];
	}
	long_choices[n] = NULL;
	return long_choices;
}

/* Parses line against one list option of n words into *v. */
static int parse_long(const char *line, size_t n, struct option_value *v)
{
	const struct option_desc desc = {
		.name = "pick", .type = OPTION_LIST, .choices = long_list(n)};
	char *copy = strdup(line);
	int problems;

	memset(&messages, 0, sizeof(messages));
	memset(v, 0xa5, sizeof(*v));
	problems = cmdline_parse(copy, &desc, 1, v, capture, &messages);
	free(copy);
	return problems;
}

static size_t words_named(const struct option_words *w)
{
	size_t n = 0;

	for (size_t i = 0; i < OPTION_LIST_MAX; i++)
		n += option_words_has(w, i);
	return n;
}

HOST_TEST(list_beyond_32_words)
{
	static const size_t picks[] = {
		0, 31, 32, 33, 63, 64, 65, 127, 128, 200, OPTION_LIST_MAX - 1};
	struct option_value v;
	char line[400];
	size_t used;

	CHECK(OPTION_LIST_MAX >= 128, "lists hold %d words", OPTION_LIST_MAX);
	/* Each word on its own: exactly its bit, whichever 64-bit chunk. */
	for (size_t p = 0; p < ARRAY_SIZE(picks); p++) {
		snprintf(line, sizeof(line), "pick=w%zu", picks[p]);
		CHECK_EQ(parse_long(line, LONG_LIST_WORDS, &v), 0);
		CHECK(v.given && option_words_has(&v.words, picks[p]) &&
			      words_named(&v.words) == 1,
		      "%s: %zu words named", line, words_named(&v.words));
	}
	/* All of them at once, and back to text in the choices' order. */
	used = (size_t)snprintf(line, sizeof(line), "pick=");
	for (size_t p = ARRAY_SIZE(picks); p-- > 0;)
		used += (size_t)snprintf(line + used, sizeof(line) - used,
					 "w%zu%s", picks[p], p ? "," : "");
	CHECK_EQ(parse_long(line, LONG_LIST_WORDS, &v), 0);
	CHECK_EQ(words_named(&v.words), ARRAY_SIZE(picks));
	{
		const struct option_desc desc = {
			.name = "pick",
			.type = OPTION_LIST,
			.choices = long_list(LONG_LIST_WORDS)};
		char text[400];

		cmdline_format_value(&desc, &v, text, sizeof(text));
		CHECK(!strcmp(text, "w0,w31,w32,w33,w63,w64,w65,w127,w128,"
				    "w200,w255"),
		      "formats as %s", host_quote(text));
	}
}

HOST_TEST(list_words_past_the_limit)
{
	struct option_value v;
	char line[64];

	/* A word past OPTION_LIST_MAX cannot be held: a bad value, reported,
	 * and the default (nothing named) kept. */
	snprintf(line, sizeof(line), "pick=w1,w%d", OPTION_LIST_MAX);
	CHECK_EQ(parse_long(line, LONG_LIST_WORDS, &v), 1);
	MESSAGE_HAS(0, "pick", "bad value");
	CHECK(!v.given && !option_words_any(&v.words), "half applied");
	/* "all" names every word that can be held, and formats as "all". */
	CHECK_EQ(parse_long("pick=all", LONG_LIST_WORDS, &v), 0);
	CHECK_EQ(words_named(&v.words), OPTION_LIST_MAX);
	/* A list of exactly 200 words: all of them, or all but one. */
	CHECK_EQ(parse_long("pick=all", 200, &v), 0);
	CHECK_EQ(words_named(&v.words), 200);
	{
		const struct option_desc desc = {.name = "pick",
						 .type = OPTION_LIST,
						 .choices = long_list(200)};
		char text[2048];

		cmdline_format_value(&desc, &v, text, sizeof(text));
		CHECK(!strcmp(text, "all"), "%s", host_quote(text));
		v.words.bits[1] &= ~(1ULL << 3); /* w67 */
		cmdline_format_value(&desc, &v, text, sizeof(text));
		CHECK(strstr(text, "w66,w68,") && !strstr(text, "w67,") &&
			      strncmp(text, "all", 3),
		      "%.80s", text);
	}
	/* w200 is not a choice of a 200-word list. */
	CHECK_EQ(parse_long("pick=w200", 200, &v), 1);
	MESSAGE_HAS(0, "pick", "'w200'");
}

/* Random subsets of a long list survive format and parse. */
HOST_TEST(list_long_round_trip)
{
	const struct option_desc desc = {.name = "pick",
					 .type = OPTION_LIST,
					 .choices = long_list(OPTION_LIST_MAX)};
	static char text[OPTION_LIST_MAX * 5], line[OPTION_LIST_MAX * 5 + 8];

	host_rand_seed(99);
	for (int iter = 0; iter < 200; iter++) {
		struct option_value v = {.given = true}, back;
		const struct option_desc *d = &desc;
		char *copy;

		for (size_t i = 0; i < OPTION_LIST_MAX; i++) {
			if (host_rand_below(8) == 0)
				option_words_add(&v.words, i);
		}
		option_words_add(&v.words, host_rand_below(OPTION_LIST_MAX));
		cmdline_format_value(d, &v, text, sizeof(text));
		snprintf(line, sizeof(line), "pick=%s", text);
		/* Longer than one token may be: parse the words in pieces. */
		memset(&back, 0, sizeof(back));
		copy = strdup(text);
		for (char *w = strtok(copy, ","); w; w = strtok(NULL, ",")) {
			struct option_value one;
			char token[32];

			snprintf(token, sizeof(token), "pick=%s", w);
			memset(&messages, 0, sizeof(messages));
			CHECK_EQ(cmdline_parse(token, d, 1, &one, capture,
					       &messages),
				 0);
			for (size_t c = 0; c < OPTION_WORD_CHUNKS; c++)
				back.words.bits[c] |= one.words.bits[c];
		}
		free(copy);
		CHECK(words_equal(back.words, v.words), "%.60s...", line);
	}
}

/* The parser keeps no state between calls: each table parses alone. */
HOST_TEST(tables_are_independent)
{
	static const char *const on_off[] = {"on", "off", NULL};
	const struct option_desc a[] = {
		{.name = "x2apic", .type = OPTION_CHOICE, .choices = on_off},
		{.name = "slice",
		 .type = OPTION_UINT,
		 .min = 1,
		 .max = 9,
		 .def = 5},
	};
	const struct option_desc b[] = {
		{.name = "stats", .type = OPTION_FLAG},
	};
	struct option_value va[2], vb[1];

	memset(&messages, 0, sizeof(messages));
	/* Table a does not know stats; b knows neither x2apic nor slice. */
	CHECK_EQ(cmdline_parse("x2apic=off stats slice=7", a, 2, va, capture,
			       &messages),
		 1);
	MESSAGE_HAS(0, "unknown", "'stats'");
	CHECK(va[0].given && va[0].choice == 1, "x2apic");
	CHECK(va[1].given && va[1].number == 7, "slice");
	memset(&messages, 0, sizeof(messages));
	CHECK_EQ(cmdline_parse("x2apic=off stats slice=7", b, 1, vb, capture,
			       &messages),
		 2);
	CHECK(vb[0].given && vb[0].flag, "stats");
	/* And once more, a fresh start: nothing given now. */
	CHECK_EQ(cmdline_parse("", a, 2, va, capture, &messages), 0);
	CHECK(!va[0].given && !va[1].given && va[1].number == 5, "reset");
}

/*
 * A deliberate-bug switch (a CHOICE named <subsystem>_bug, lib/inject.h)
 * takes only its first word in a kernel built without the bugs: this host
 * build is one. The message names the way to a kernel that has them. A
 * name that merely contains "_bug" is an ordinary option.
 */
HOST_TEST(bug_options_need_the_injection_build)
{
	static const char *const words[] = {"none", "drop", NULL};
	const struct option_desc desc[] = {
		{.name = "call_bug", .type = OPTION_CHOICE, .choices = words},
		{.name = "bug_report", .type = OPTION_CHOICE, .choices = words},
	};
	struct option_value v[2];

	memset(&messages, 0, sizeof(messages));
	CHECK_EQ(cmdline_parse("call_bug=drop bug_report=drop", desc, 2, v,
			       capture, &messages),
		 1);
	MESSAGE_HAS(0, "call_bug=drop", "make inject");
	CHECK(!v[0].given && v[0].choice == 0, "call_bug kept at none");
	CHECK(v[1].given && v[1].choice == 1, "bug_report=drop taken");
	memset(&messages, 0, sizeof(messages));
	CHECK_EQ(cmdline_parse("call_bug=none", desc, 2, v, capture, &messages),
		 0);
	CHECK(v[0].given && v[0].choice == 0, "call_bug=none taken");
}
