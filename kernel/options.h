/* SPDX-License-Identifier: MIT */
/*
 * The kernel's command-line options (README.md lists them for users). Parsed
 * once at boot; problems are printed and the defaults kept.
 */
#ifndef KERNEL_OPTIONS_H
#define KERNEL_OPTIONS_H

#include "lib/types.h"
#include "kernel/console.h"
#include "kernel/crash.h"

/* Deliberate bugs in the cross-CPU call protocol (call_bug=), for tests. */
enum call_bug {
	CALL_BUG_NONE, /* call_bug=none */
	CALL_BUG_DROP, /* call_bug=drop: every 64th request is not run */
	CALL_BUG_NO_IPI, /* call_bug=no-ipi: requests are queued, never signalled */
};

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
	enum call_bug call_bug;
	uint64_t timeslice_us;	/* timeslice_us= */
	uint32_t init_programs; /* init=: bit i = boot module i */
	bool tlb_stats; /* tlb_stats: print the TLB counters at the end */
	/* The TLB options (pcid= ... tlb_trace) go to tlb_policy (mm/tlb.h). */
	/* Benchmarks (bench/bench.h): the default job when nothing else is. */
	bool run_bench;		/* bench= given */
	uint32_t bench_choices; /* bit i: bench_choice_name(i) */
	unsigned bench_scale;	/* bench_scale=: percent of samples */
	bool icount;		/* icount: QEMU runs with -icount shift=1 */
};

extern struct kernel_options options;

/* Parses the command line; returns the number of problems reported. */
int options_parse(const char *cmdline);

/* Prints every option with its value in force. */
void options_report(void);

#endif
