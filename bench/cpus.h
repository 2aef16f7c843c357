/* SPDX-License-Identifier: MIT */
/*
 * Which CPUs the benchmarks use, and what each of them is. A CPU index says
 * nothing about the core behind it: on an SMT machine CPU 1 may be CPU 0's
 * sibling, sharing its TLB, and on a hybrid one a P-core or an E-core. So
 * the remote CPUs of a measurement are chosen on other cores first, and
 * every row names the CPUs it used with their APIC IDs, core types and
 * shared cores (docs/bench.md, "Which CPUs a row used").
 */
#ifndef BENCH_CPUS_H
#define BENCH_CPUS_H

#include "lib/types.h"
#include "sync/cpumask.h"

/* How the one remote CPU of a measurement relates to the measuring one. */
enum bench_other_kind {
	BENCH_OTHER_CORE,    /* on another core: the usual case */
	BENCH_OTHER_SIBLING, /* its SMT sibling: no other core is online */
	BENCH_OTHER_NONE,    /* one CPU: there is no remote CPU */
};

/*
 * Orders the CPUs for the run: the measuring CPU's non-siblings first, by
 * index, then its siblings. On the boot CPU, at the start of a run.
 */
void bench_cpus_choose(void);

/*
 * The remote CPU of a measurement with one: the first CPU on another core
 * than the measuring one, or its sibling when no other core exists.
 */
unsigned bench_other_cpu(void);
enum bench_other_kind bench_other_kind(void);

/* Target i (0 .. cpu_count - 2) of a measurement with several. */
unsigned bench_target_cpu(unsigned i);

/* Room for bench_other_describe's text. */
#define BENCH_OTHER_TEXT_MAX 64

/* "CPU 2 (APIC 4, other core)", "... SMT sibling, no other core)". */
const char *bench_other_describe(char *buf);

/* Room for bench_cpus_env's fields. */
#define BENCH_CPUS_ENV_MAX 128

/*
 * The `bench: env` fields that sum the CPUs up: `smt=on hybrid=off
 * target_cpu=2 target_apic=4 target_core=other`.
 */
void bench_cpus_env(char *buf, size_t size);

/*
 * One `bench: cpu N ...` line per CPU: its APIC ID, package, core, thread,
 * core type, SMT siblings and where CPUID told them.
 */
void bench_cpus_report(void);

/* Room for a row's CPU fields with every CPU used. */
#define BENCH_CPU_FIELDS_MAX 2560

/*
 * A row's CPU fields, `cpus=0,2 apic=0,4 types=- smt=none`: the CPUs it
 * used, first the measuring one, then the others in `others` by index.
 */
void bench_cpus_format(unsigned first, const struct cpumask *others, char *buf,
		       size_t size);

#endif
