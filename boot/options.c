// SPDX-License-Identifier: MIT
/*
 * The command-line collector: it owns no option. Every subsystem declares
 * its own in the registry (boot/options.h); this file walks the
 * registry, parses the command line against all of them at once with
 * lib/cmdline.c, hands each value to its owner, and prints the report.
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
