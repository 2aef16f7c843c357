/* SPDX-License-Identifier: MIT */
/*
 * The option registry's boot-time half: every option registered with
 * OPTION() (lib/option.h) is parsed and reported from here.
 */
#ifndef BOOT_OPTIONS_H
#define BOOT_OPTIONS_H

#include "lib/types.h"

/*
 * Parses the command line (kmain, once, on the boot CPU); returns the
 * number of problems, each already printed.
 */
int options_parse(const char *cmdline);

/*
 * Prints one line, `options: name=value ...`, every option in registry
 * order with the value in force: test and benchmark logs carry it, so a
 * result says which switches produced it (tools/bench/bench.py reads it).
 */
void options_report(void);

/* help was given: the job is to print the option table. */
bool options_help_requested(void);

/*
 * Prints every registered option as a row of docs/options.md's Markdown
 * table, in registry order, between the lines `help: begin` and
 * `help: end`: its description, then the file that declares it. Values
 * are the defaults, whatever the command line set.
 */
void options_print_help(void);

#endif
