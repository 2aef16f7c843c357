// SPDX-License-Identifier: MIT
/*
 * The search over schedules. A run is fixed by the scheduler's choices
 * (tlb_sim_sched.c), so runs are replayed from the start:
 *
 *   searched scenarios  depth-first over the choices: run with a prefix
 *                       of choices (then move 0, "go on", wherever the
 *                       running CPU can), then change the deepest choice
 *                       that still has an untried move, keep the ones
 *                       before it, and run again. A move other than "go
 *                       on" where the running CPU could go on preempts
 *                       it; schedules with more preemptions than the
 *                       scenario's bound are skipped. Within the bound the
 *                       search is exhaustive: every schedule, once.
 *   random scenarios    each seed gives a machine, a workload and random
 *                       choices, with hardware drops and fills.
 *
 * A failing run is described by its non-default choices ("17:1,23:2") or
 * its seed, which replay it exactly.
 */
#include "tests/host/tlb_sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sim_workload sim_workload;
struct sim_run sim_last;

static void body(unsigned cpu)
{
	tlb_init_cpu(kern_kernel_root());
	sim_barrier();
	for (unsigned i = 0; i < sim_workload.nops[cpu]; i++)
		kern_op(&sim_workload.ops[cpu][i]);
	sim_barrier();
	kern_sweep(cpu == sim_workload.cpus - 1);
	sim_barrier();
	if (cpu == 0)
		kern_final_check();
	sim_barrier();
}

static void load_workload(const struct sim_scenario *sc, uint64_t seed)
{
	struct sim_workload *w = &sim_workload;
	char err[128];

	if (sc->random) {
		workload_generate(w, seed);
		return;
	}
	memset(w, 0, sizeof(*w));
	/* mms 0: as many as the operations name. */
	w->mms = sc->mms ? sc->mms : SIM_MMS_MAX;
	for (; w->cpus < SIM_CPUS_MAX && sc->cpu[w->cpus]; w->cpus++) {
		if (!workload_parse(w, w->cpus, sc->cpu[w->cpus], err,
				    sizeof(err))) {
			fprintf(stderr, "tlb_sim: %s cpu%u: %s\n", sc->name,
				w->cpus, err);
			exit(2);
		}
	}
	if (!sc->mms)
		w->mms = workload_mms(w);
}

void search_run(const struct sim_scenario *sc, const char *policy,
		enum tlb_bug bug, const uint8_t *prefix, size_t len,
		const uint64_t *seed, bool trace)
{
	struct sim_run *run = &sim_last;
	char err[128];

	load_workload(sc, seed ? *seed : 0);
	if (!policy_parse(policy, &tlb_policy, err, sizeof(err))) {
		fprintf(stderr, "tlb_sim: policy '%s': %s\n", policy, err);
		exit(2);
	}
	tlb_bug_choice = bug;
	tlb_policy.trace = trace;
	run->cpus = sim_workload.cpus;
	run->mode = seed ? SIM_RANDOM : SIM_DFS;
	run->prefix = prefix;
	run->prefix_len = len;
	run->seed = seed ? *seed : 0;
	kern_reset(sim_workload.cpus, sim_workload.mms);
	mmu_set_refill(sc->refill);
	sim_run(run, body);
	sim_counts.executions++;
}

/* Room for one more "index:pick," of format_choices. */
#define CHOICE_TEXT_MAX 16

/* The non-default picks of the last run: "index:pick,...". */
static void format_choices(char *buf, size_t size)
{
	const struct sim_run *run = &sim_last;
	size_t used = 0, n = MIN(run->nchoices, (size_t)SIM_CHOICES_MAX);

	buf[0] = '\0';
	for (size_t i = 0; i < n && used + CHOICE_TEXT_MAX < size; i++) {
		if (run->choices[i].pick)
			used += (size_t)snprintf(buf + used, size - used,
						 "%s%zu:%u", used ? "," : "", i,
						 run->choices[i].pick);
	}
}

size_t search_parse_choices(const char *text, uint8_t *prefix)
{
	size_t len = 0;

	memset(prefix, 0, SIM_CHOICES_MAX);
	while (text && *text) {
		char *end;
		unsigned long at = strtoul(text, &end, 10);

		if (*end != ':' || at >= SIM_CHOICES_MAX) {
			fprintf(stderr, "tlb_sim: bad choices at '%s'\n", text);
			exit(2);
		}
		prefix[at] = (uint8_t)strtoul(end + 1, &end, 10);
		len = MAX(len, at + 1);
		text = *end == ',' ? end + 1 : end;
	}
	return len;
}

/*
 * The next prefix after the last run, in depth-first order: the deepest
 * choice with an untried move that stays within the preemption bound.
 */
static bool next_prefix(uint8_t *prefix, size_t *len, unsigned bound)
{
	static unsigned before[SIM_CHOICES_MAX]; /* preemptions before i */
	const struct sim_run *run = &sim_last;
	size_t n = MIN(run->nchoices, (size_t)SIM_CHOICES_MAX);
	unsigned used = 0;

	for (size_t i = 0; i < n; i++) {
		before[i] = used;
		used += sim_choice_costs(&run->choices[i],
					 run->choices[i].pick);
	}
	for (size_t i = n; i-- > 0;) {
		const struct sim_choice *c = &run->choices[i];

		if (c->pick + 1 >= c->count)
			continue;
		if (sim_choice_costs(c, c->pick + 1u) && before[i] + 1 > bound)
			continue;
		for (size_t j = 0; j < i; j++)
			prefix[j] = run->choices[j].pick;
		prefix[i] = (uint8_t)(c->pick + 1);
		*len = i + 1;
		return true;
	}
	return false;
}

static bool record(struct sim_outcome *out, uint64_t seed)
{
	out->runs++;
	if (!sim_last.failed)
		return false;
	out->failed = true;
	snprintf(out->failure, sizeof(out->failure), "%s", sim_last.failure);
	out->seed = seed;
	format_choices(out->choices, sizeof(out->choices));
	return true;
}

/*
 * Bound 0, then 1, and so on up to bound: with a scheduling point at every
 * shared access, a run cap usually ends the search before a large bound is
 * done, and the few-preemption schedules (where most bugs show) must all
 * have run by then. Each pass repeats the smaller ones, a small part of the
 * next. run_one replays one schedule from its prefix of choices.
 */
static void search_bounded(unsigned bound, uint64_t max_runs,
			   struct sim_outcome *out,
			   void (*run_one)(const uint8_t *prefix, size_t len,
					   const void *ctx),
			   const void *ctx)
{
	static uint8_t prefix[SIM_CHOICES_MAX];

	for (unsigned b = 0; b <= bound; b++) {
		size_t len = 0;

		for (;;) {
			run_one(prefix, len, ctx);
			if (record(out, 0))
				return;
			if (!next_prefix(prefix, &len, b))
				break;
			if (out->runs >= max_runs)
				return;
		}
		out->bound_done = b;
	}
	out->complete = true;
}

/* What search_bounded replays: a scenario under a policy and a bug. */
struct scenario_run {
	const struct sim_scenario *sc;
	const char *policy;
	enum tlb_bug bug;
};

static void run_scenario(const uint8_t *prefix, size_t len, const void *ctx)
{
	const struct scenario_run *s = ctx;

	search_run(s->sc, s->policy, s->bug, prefix, len, NULL, false);
}

uint64_t sim_random_base_seed(void)
{
	const char *env = getenv("HOST_TEST_SEED");

	return env && *env ? strtoull(env, NULL, 0) : SIM_RANDOM_BASE_SEED;
}

void search(const struct sim_scenario *sc, const char *policy, enum tlb_bug bug,
	    uint64_t max_runs, struct sim_outcome *out)
{
	const struct scenario_run ctx = {sc, policy, bug};

	memset(out, 0, sizeof(*out));
	if (sc->random) {
		for (uint64_t i = 0;
		     i < SIM_RANDOM_SEEDS && out->runs < max_runs; i++) {
			uint64_t seed = sim_random_base_seed() + i;

			search_run(sc, policy, bug, NULL, 0, &seed, false);
			if (record(out, seed))
				return;
		}
		out->complete = true;
		return;
	}
	search_bounded(sc->preemptions, max_runs, out, run_scenario, &ctx);
}

/* What search_bounded replays: a body of its own on some CPUs. */
struct body_run {
	unsigned cpus;
	sim_body body;
};

static void run_body(const uint8_t *prefix, size_t len, const void *ctx)
{
	const struct body_run *b = ctx;
	struct sim_run *run = &sim_last;

	run->cpus = b->cpus;
	run->mode = SIM_DFS;
	run->prefix = prefix;
	run->prefix_len = len;
	run->seed = 0;
	sim_run(run, b->body);
	sim_counts.executions++;
}

void search_body(unsigned cpus, sim_body body, unsigned bound,
		 uint64_t max_runs, struct sim_outcome *out)
{
	const struct body_run ctx = {cpus, body};

	memset(out, 0, sizeof(*out));
	search_bounded(bound, max_runs, out, run_body, &ctx);
}
