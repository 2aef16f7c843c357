/* SPDX-License-Identifier: MIT */
/*
 * The option registry's boot-time half: every option registered with
 * OPTION() (lib/option.h) is parsed and reported from here.
 */
#ifndef BOOT_OPTIONS_H
#define BOOT_OPTIONS_H

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

#endif
