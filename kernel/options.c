// SPDX-License-Identifier: MIT
#include "kernel/options.h"
#include "bench/bench.h"
#include "kernel/boot_modules.h"
#include "lib/cmdline.h"
#include "lib/format.h"
#include "kernel/kprintf.h"
#include "mm/tlb_options.h"
#include "sched/sched.h"
#include "tests/ktest.h"

struct kernel_options options;

static const char *const console_choices[] = {"both", "serial", "fb", NULL};
static const char *const done_choices[] = {"exit", "halt", NULL};
static const char *const on_off[] = {"on", "off", NULL};
static const char *const call_bug_choices[] = {"none", "drop", "no-ipi", NULL};
static const char *const crash_choices[] = {"none", "panic", "pagefault",
					    "stack", NULL};
/* Filled from the test registry: one word per suite. */
static const char *test_choices[KTEST_MAX_SUITES + 1];
/* Filled from the benchmark registry: groups, then benchmarks. */
static const char *bench_choices[BENCH_MAX_CHOICES + 1];
/* Filled from the boot modules: one word per user program. */
static const char *init_choices[OPTION_LIST_MAX + 1];

/* Index of each option in descs and values. */
enum option_index {
	OPT_CONSOLE,   /* console= */
	OPT_DONE,      /* done= */
	OPT_TEST,      /* test= */
	OPT_CRASH,     /* crash= */
	OPT_X2APIC,    /* x2apic= */
	OPT_CALL_BUG,  /* call_bug= */
	OPT_TIMESLICE, /* timeslice_us= */
	OPT_INIT,      /* init= */
	OPT_TLB_STATS, /* tlb_stats */
	OPT_TLB_FIRST, /* the TLB policies: mm/tlb_options.h */
	OPT_TLB_LAST = OPT_TLB_FIRST + TLB_OPTION_COUNT - 1,
	OPT_BENCH,	 /* bench= */
	OPT_BENCH_SCALE, /* bench_scale= */
	OPT_ICOUNT,	 /* icount */
	OPTION_COUNT
};

/* The TLB policies' entries are copied in from mm/tlb_options.c. */
static struct option_desc descs[OPTION_COUNT] = {
	[OPT_CONSOLE] = {"console", OPTION_CHOICE, console_choices, 0, 0, 0,
			 "where output goes"},
	[OPT_DONE] = {"done", OPTION_CHOICE, done_choices, 0, 0, 0,
		      "when the job ends: exit the emulator or halt"},
	[OPT_TEST] = {"test", OPTION_LIST, test_choices, 0, 0, 0,
		      "run in-kernel test suites (all or a list)"},
	[OPT_CRASH] = {"crash", OPTION_CHOICE, crash_choices, 0, 0, 0,
		       "crash on purpose after boot, to see the report"},
	[OPT_X2APIC] = {"x2apic", OPTION_CHOICE, on_off, 0, 0, 0,
			"use x2APIC when the CPU has it"},
	[OPT_CALL_BUG] = {"call_bug", OPTION_CHOICE, call_bug_choices, 0, 0, 0,
			  "inject a bug into cross-CPU calls (tests)"},
	[OPT_TIMESLICE] = {"timeslice_us", OPTION_UINT, NULL, TIMESLICE_US_MIN,
			   TIMESLICE_US_MAX, TIMESLICE_US_DEFAULT,
			   "scheduler time slice in microseconds"},
	[OPT_INIT] = {"init", OPTION_LIST, init_choices, 0, 0, 0,
		      "user programs to run at boot (boot modules)"},
	[OPT_TLB_STATS] = {"tlb_stats", OPTION_FLAG, NULL, 0, 0, 0,
			   "print the TLB counters when the job ends"},
	[OPT_BENCH] = {"bench", OPTION_LIST, bench_choices, 0, 0, 0,
		       "run benchmarks (all, groups or names)"},
	[OPT_BENCH_SCALE] = {"bench_scale", OPTION_UINT, NULL, BENCH_SCALE_MIN,
			     BENCH_SCALE_MAX, BENCH_SCALE_DEFAULT,
			     "percent of each benchmark's samples and time"},
	[OPT_ICOUNT] = {"icount", OPTION_FLAG, NULL, 0, 0, 0,
			"QEMU counts instructions (-icount shift=1)"},
};

static struct option_value values[OPTION_COUNT];

/* Room for every option with its longest value on one line. */
#define OPTIONS_REPORT_MAX 1024

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
	int problems;
	size_t suites = ktest_suite_count();

	for (size_t i = 0; i < suites; i++)
		test_choices[i] = ktest_suite_name(i);
	test_choices[suites] = NULL;

	for (size_t i = 0; i < bench_choice_count(); i++)
		bench_choices[i] = bench_choice_name(i);
	bench_choices[bench_choice_count()] = NULL;

	for (size_t i = 0; i < boot_module_count() && i < OPTION_LIST_MAX; i++)
		init_choices[i] = boot_module_name(i);
	init_choices[MIN(boot_module_count(), OPTION_LIST_MAX)] = NULL;

	for (size_t i = 0; i < TLB_OPTION_COUNT; i++)
		descs[OPT_TLB_FIRST + i] = tlb_option_descs[i];
	problems = cmdline_parse(cmdline, descs, OPTION_COUNT, values, report,
				 NULL);
	options.console = (enum console_targets)values[OPT_CONSOLE].choice;
	options.done = (enum done_action)values[OPT_DONE].choice;
	options.run_tests = values[OPT_TEST].given;
	options.test_suites = values[OPT_TEST].words;
	options.crash = (enum crash_kind)values[OPT_CRASH].choice;
	options.x2apic = values[OPT_X2APIC].choice == 0;
	options.call_bug = (enum call_bug)values[OPT_CALL_BUG].choice;
	options.timeslice_us = values[OPT_TIMESLICE].number;
	options.init_programs = values[OPT_INIT].words;
	options.tlb_stats = values[OPT_TLB_STATS].flag;
	options.run_bench = values[OPT_BENCH].given;
	options.bench_choices = values[OPT_BENCH].words;
	options.bench_scale = (unsigned)values[OPT_BENCH_SCALE].number;
	options.icount = values[OPT_ICOUNT].flag;
	/* What the command line asks for; tlb_boot_init checks CPUID. */
	tlb_policy_from_values(&tlb_policy, &values[OPT_TLB_FIRST]);
	return problems;
}

void options_report(void)
{
	char line[OPTIONS_REPORT_MAX];
	size_t used = 0;

	/* One line, every option with the value in force: benchmarks and
	 * test logs carry it so a result says which policies produced it. */
	for (int i = 0; i < OPTION_COUNT; i++) {
		char value[96];

		cmdline_format_value(&descs[i], &values[i], value,
				     sizeof(value));
		used += (size_t)ksnprintf(line + MIN(used, sizeof(line)),
					  sizeof(line) -
						  MIN(used, sizeof(line)),
					  " %s=%s", descs[i].name, value);
	}
	kprintf("options:%s\n", line);
}
