// SPDX-License-Identifier: MIT
#include "kernel/options.h"
#include "bench/bench.h"
#include "kernel/bootinfo.h"
#include "kernel/cmdline.h"
#include "kernel/format.h"
#include "kernel/kprintf.h"
#include "mm/tlb.h"
#include "sched/sched.h"
#include "tests/ktest.h"

struct kernel_options options;

static const char *const console_choices[] = {"both", "serial", "fb", NULL};
static const char *const done_choices[] = {"exit", "halt", NULL};
static const char *const on_off[] = {"on", "off", NULL};
static const char *const flush_info_choices[] = {"percpu", "stack", NULL};
static const char *const kernel_mm_mask_choices[] = {"skip", "touch", NULL};
static const char *const lazy_mm_choices[] = {"shootdown", "refcount", NULL};
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
	OPT_PCID,
	OPT_INVPCID,
	OPT_ASID_SLOTS,
	OPT_LAZY,
	OPT_LAZY_BACKOFF,
	OPT_FLUSH_CEILING,
	OPT_FLUSH_INFO,
	OPT_FLUSH_CONCURRENT,
	OPT_KERNEL_MM_MASK,
	OPT_LAZY_MM,
	OPT_TLB_BUG,
	OPT_TLB_STATS,
	OPT_TLB_TRACE,
	OPT_BENCH,	 /* bench= */
	OPT_BENCH_SCALE, /* bench_scale= */
	OPT_ICOUNT,	 /* icount */
	OPTION_COUNT
};

static const struct option_desc descs[OPTION_COUNT] = {
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
	[OPT_PCID] = {"pcid", OPTION_CHOICE, on_off, 0, 0, 0,
		      "use PCID when the CPU has it"},
	[OPT_INVPCID] = {"invpcid", OPTION_CHOICE, on_off, 0, 0, 0,
			 "use INVPCID when the CPU has it"},
	[OPT_ASID_SLOTS] = {"asid_slots", OPTION_UINT, NULL, 1,
			    TLB_ASID_SLOTS_MAX, TLB_ASID_SLOTS_DEFAULT,
			    "dynamic ASID slots per CPU (with PCID)"},
	[OPT_LAZY] = {"lazy", OPTION_CHOICE, tlb_lazy_names, 0, 0, 0,
		      "what idle and kernel threads do with the user mm"},
	[OPT_LAZY_BACKOFF] = {"lazy_backoff", OPTION_UINT, NULL, 0,
			      TLB_LAZY_BACKOFF_MAX, TLB_LAZY_BACKOFF_DEFAULT,
			      "lazy=dynamic: switches to stay non-lazy"},
	[OPT_FLUSH_CEILING] = {"flush_ceiling", OPTION_UINT, NULL, 0,
			       TLB_FLUSH_CEILING_MAX, TLB_FLUSH_CEILING_DEFAULT,
			       "largest page count flushed page by page"},
	[OPT_FLUSH_INFO] = {"flush_info", OPTION_CHOICE, flush_info_choices, 0,
			    0, 0, "where a flush request lives"},
	[OPT_FLUSH_CONCURRENT] = {"flush_concurrent", OPTION_CHOICE, on_off, 0,
				  0, 0,
				  "flush locally while remote CPUs flush"},
	[OPT_KERNEL_MM_MASK] = {"kernel_mm_mask", OPTION_CHOICE,
				kernel_mm_mask_choices, 0, 0, 0,
				"cpumask atomics on kernel-mm switches"},
	[OPT_LAZY_MM] = {"lazy_mm", OPTION_CHOICE, lazy_mm_choices, 0, 0, 0,
			 "how a lazily loaded mm is kept alive"},
	[OPT_TLB_BUG] = {"tlb_bug", OPTION_CHOICE, tlb_bug_names, 0, 0, 0,
			 "inject a TLB protocol bug (tests, labs)"},
	[OPT_TLB_STATS] = {"tlb_stats", OPTION_FLAG, NULL, 0, 0, 0,
			   "print the TLB counters when the job ends"},
	[OPT_TLB_TRACE] = {"tlb_trace", OPTION_FLAG, NULL, 0, 0, 0,
			   "print every TLB flush event"},
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
	tlb_policy.pcid = values[OPT_PCID].choice == 0;
	tlb_policy.invpcid = values[OPT_INVPCID].choice == 0;
	tlb_policy.asid_slots = (unsigned)values[OPT_ASID_SLOTS].number;
	tlb_policy.lazy = (enum tlb_lazy_policy)values[OPT_LAZY].choice;
	tlb_policy.lazy_backoff = (unsigned)values[OPT_LAZY_BACKOFF].number;
	tlb_policy.flush_ceiling = (unsigned)values[OPT_FLUSH_CEILING].number;
	tlb_policy.flush_info_on_stack = values[OPT_FLUSH_INFO].choice == 1;
	tlb_policy.flush_concurrent = values[OPT_FLUSH_CONCURRENT].choice == 0;
	tlb_policy.kernel_mm_mask_touch =
		values[OPT_KERNEL_MM_MASK].choice == 1;
	tlb_policy.lazy_mm = (enum tlb_lazy_mm)values[OPT_LAZY_MM].choice;
	tlb_policy.bug = (enum tlb_bug)values[OPT_TLB_BUG].choice;
	tlb_policy.trace = values[OPT_TLB_TRACE].flag;
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
