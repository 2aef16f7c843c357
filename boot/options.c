// SPDX-License-Identifier: MIT
/*
 * The command-line collector. Every subsystem declares its own options in
 * the registry (lib/option.h). This file walks the registry, parses the
 * command line against all of them at once with lib/cmdline.c, hands each
 * value to its owner, and prints the report. It owns one option, `help`,
 * which prints the registry as the table of docs/options.md.
 */
#include "boot/options.h"
#include "lib/option.h"
#include "console/kprintf.h"
#include "trap/panic.h"
#include "lib/format.h"

extern const struct kernel_option option_table_start[], option_table_end[];

/*
 * Options in the whole registry (a table counts each of its entries): the
 * parser takes one array, so they are copied side by side here.
 */
#define OPTIONS_MAX 64

static struct option_desc descs[OPTIONS_MAX];
static struct option_value values[OPTIONS_MAX];
static size_t option_count;

/* Room for every option with its longest value on one line. */
#define OPTIONS_REPORT_MAX 1024

/* Room for the longest row of the help table (the longest help text). */
#define OPTIONS_HELP_ROW_MAX 2048

/*
 * help: print the table and end. tools/check/options_doc.py boots the kernel
 * with it and copies the table between the two marker lines into
 * docs/options.md, so the page always says what the registry holds.
 */
static const struct option_desc help_desc = {
	.name = "help",
	.type = OPTION_FLAG,
	.help = "print this table of options on the console, then end; "
		"`make options-doc` copies it into docs/options.md"};
static struct option_value help_option;
OPTION(12, help, &help_desc, &help_option, NULL, NULL);

/* Linker symbols: compare them as numbers, not as C objects. */
static size_t entry_count(void)
{
	return ((uintptr_t)option_table_end - (uintptr_t)option_table_start) /
	       sizeof(struct kernel_option);
}

static void report(void *ctx, const char *fmt, ...)
{
	va_list ap;

	(void)ctx;
	kprintf("cmdline: warning: ");
	va_start(ap, fmt);
	kvprintf(fmt, ap);
	va_end(ap);
	kprintf("\n");
}

int options_parse(const char *cmdline)
{
	size_t n = 0;
	int problems;

	for (size_t e = 0; e < entry_count(); e++) {
		const struct kernel_option *o = &option_table_start[e];

		/* The linker sorted the entries by order: equal ones meet. */
		KASSERT(e == 0 || o[-1].order < o->order,
			"options %s and %s share the order %u (lib/option.h)",
			o[-1].desc[0].name, o->desc[0].name, o->order);
		if (o->prepare)
			o->prepare();
		KASSERT(n + o->count <= OPTIONS_MAX,
			"more than %d command-line options (at %s)",
			OPTIONS_MAX, o->desc[0].name);
		for (size_t i = 0; i < o->count; i++)
			descs[n++] = o->desc[i];
	}
	option_count = n;
	problems = cmdline_parse(cmdline, descs, n, values, report, NULL);
	n = 0;
	for (size_t e = 0; e < entry_count(); e++) {
		const struct kernel_option *o = &option_table_start[e];

		for (size_t i = 0; i < o->count; i++)
			o->value[i] = values[n++];
	}
	for (size_t e = 0; e < entry_count(); e++) {
		const struct kernel_option *o = &option_table_start[e];

		if (o->set)
			o->set(o->value);
	}
	return problems;
}

void options_report(void)
{
	char line[OPTIONS_REPORT_MAX];
	size_t used = 0;

	line[0] = '\0';
	/* The values as the owners hold them now, in registry order. */
	for (size_t e = 0, n = 0; e < entry_count(); e++) {
		const struct kernel_option *o = &option_table_start[e];

		for (size_t i = 0; i < o->count && n < option_count; i++, n++) {
			char value[96];

			cmdline_format_value(&o->desc[i], &o->value[i], value,
					     sizeof(value));
			used += (size_t)ksnprintf(
				line + MIN(used, sizeof(line)),
				sizeof(line) - MIN(used, sizeof(line)),
				" %s=%s", o->desc[i].name, value);
		}
	}
	kprintf("options:%s\n", line);
}

bool options_help_requested(void)
{
	return help_option.flag;
}

void options_print_help(void)
{
	static char row[OPTIONS_HELP_ROW_MAX];

	kprintf("help: begin\n");
	kprintf("| option | values (default first) | meaning "
		"| declared in |\n");
	kprintf("| --- | --- | --- | --- |\n");
	for (size_t e = 0; e < entry_count(); e++) {
		const struct kernel_option *o = &option_table_start[e];

		for (size_t i = 0; i < o->count; i++) {
			size_t len = cmdline_format_help(&o->desc[i], row,
							 sizeof(row));

			KASSERT(len < sizeof(row),
				"option %s's help row is %zu bytes, more than "
				"%d",
				o->desc[i].name, len, OPTIONS_HELP_ROW_MAX - 1);
			kprintf("%s `%s` |\n", row, o->file);
		}
	}
	kprintf("help: end\n");
}
