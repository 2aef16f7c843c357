/* SPDX-License-Identifier: MIT */
/*
 * The kernel's command-line options (README.md lists them for users). Parsed
 * once at boot; problems are printed and the defaults kept.
 */
#ifndef KERNEL_OPTIONS_H
#define KERNEL_OPTIONS_H

#include "kernel/types.h"
#include "kernel/console.h"
#include "kernel/crash.h"

enum done_action {
	DONE_EXIT, /* done=exit: end the emulator (halt on hardware) */
	DONE_HALT, /* done=halt: halt, keep the screen (for screendumps) */
};

struct kernel_options {
	enum console_targets console;
	enum done_action done;
	bool run_tests;	      /* test= given */
	uint32_t test_suites; /* bit i: suite i of ktest_suite_name(i) */
	enum crash_kind crash;
	bool x2apic; /* x2apic=on */
};

extern struct kernel_options options;

/* Parses the command line; returns the number of problems reported. */
int options_parse(const char *cmdline);

/* Prints every option with its value in force. */
void options_report(void);

#endif
