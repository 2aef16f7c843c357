/* SPDX-License-Identifier: MIT */
/*
 * Command-line options, declared by the subsystem whose behaviour each one
 * changes (docs/options.md; README.md lists them for users). An option is
 * its lib/cmdline.h description and the subsystem's own variable that
 * receives the parsed value; it lives in a linker section, like the tests
 * (tests/ktest.h) and the benchmarks (bench/bench.h), so no central table
 * has to list it:
 *
 *	static const char *const x2apic_words[] = {"on", "off", NULL};
 *	static const struct option_desc x2apic_desc = {
 *		.name = "x2apic", .type = OPTION_CHOICE,
 *		.choices = x2apic_words,
 *		.help = "use x2APIC when the CPU has it"};
 *	static struct option_value x2apic_option;
 *	OPTION(40, x2apic, &x2apic_desc, &x2apic_option, NULL, NULL);
 *
 * The subsystem then reads x2apic_option.choice (defaults are in place
 * before kmain parses anything: the zero value, or desc.def for numbers,
 * which the subsystem may repeat in its initializer). At boot kmain calls
 * options_parse (boot/options.h) once; it walks the registry, runs every `prepare` hook
 * (which fills a choice list from another registry: test suites, benchmark
 * names, boot modules), parses the whole command line against every
 * option at once (unknown names and bad values are printed as `cmdline:
 * warning: ...` and the default kept), stores each value, then calls each
 * `set` hook (for a subsystem that keeps the value in its own form).
 *
 * `order` (two digits) sorts the registry and so the `options:` report:
 *	10-19 consoles and the end of the job   50-59 cross-CPU calls
 *	20-29 tests                             60-69 the scheduler
 *	30-39 deliberate crashes                70-79 user programs (init=, IPC)
 *	40-49 the local APIC                    80-89 memory: the TLB (and
 *	                                              the CPU quirks that steer
 *	                                              it), the heap
 *	90-99 benchmarks
 */
#ifndef LIB_OPTION_H
#define LIB_OPTION_H

#include "lib/cmdline.h"
#include "lib/types.h"

struct kernel_option {
	const struct option_desc *desc; /* count descriptions */
	struct option_value *value;	/* count values: the owner's */
	size_t count;			/* 1, or a table's length */
	/* Before parsing, or NULL: fills choice lists filled at boot. */
	void (*prepare)(void);
	/* After every value is stored, or NULL: value[0..count). */
	void (*set)(const struct option_value *value);
};

/*
 * Registers count options described by desc[0..count), their values going
 * to value[0..count); ident names the entry (unique in the kernel).
 */
#define OPTION_TABLE(order, ident, desc_table, value_table, n, prepare_fn, \
		     set_fn)                                               \
	static const struct kernel_option kernel_option_##ident __used     \
		__section(".option." #order "." #ident)                    \
			__aligned(8) = {(desc_table), (value_table), (n),  \
					(prepare_fn), (set_fn)}

/* One option: its description and the variable its value goes to. */
#define OPTION(order, ident, desc_ptr, value_ptr, prepare_fn, set_fn) \
	OPTION_TABLE(order, ident, desc_ptr, value_ptr, 1, prepare_fn, set_fn)

#endif
