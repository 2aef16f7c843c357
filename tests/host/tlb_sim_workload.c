// SPDX-License-Identifier: MIT
/*
 * Workloads: what each simulated CPU does, written as text so scenarios
 * read like the trace and a lab can type its own on the command line
 * (tlb_sim -W). One CPU's workload is a list of operations separated by
 * commas; address spaces count from 1 (mm1, as the trace names them),
 * pages from 0: pages 0-3 are region 0 (page table 0, at 0x400000),
 * pages 4-7 region 1 (page table 1, alone in PML4 slot 1: freeing it
 * frees its page directory and PDPT too), pages 8-9 the shared-memory
 * object every address space maps (unmapping them frees no frame):
 *
 *	run M          run a thread of mm M (its task must not have exited)
 *	kthread        run a kernel thread (lazily on the last mm, or not)
 *	read P         read page P of the running thread's mm (a kernel
 *	write P        thread reads kernel page P mod 2 instead)
 *	kread K        read kernel page K
 *	remap M P      unmap page P of mm M (freeing an anonymous frame),
 *	               then map a new frame there (mm_unmap, mm_map_anon)
 *	unmap M P N    unmap N pages of mm M from page P (one mm_unmap per
 *	               region)
 *	map M P N      map N new frames from page P of mm M, if unmapped
 *	               (one mm_map_anon per region)
 *	protect M P    write-protect page P of mm M (or make it writable)
 *	free-table M T unmap every page of table T of mm M, free the table
 *	kremap K       map kernel page K to a new frame, free the old one
 *	exit M         mm M's task exits (drops its reference)
 *	kstack-alloc S allocate kernel stack S (0-2; stack 0 exists at the
 *	               start), unless it is allocated
 *	kstack-free S  free kernel stack S (kstack_free: unmap, flush, free)
 *	kstack-touch S write to the top page of kernel stack S (a kernel
 *	               access: a thread running on it), if it is allocated
 *	revoke         revoke the shared object (shm_revoke: pages 8-9 leave
 *	               every address space in one flush round, then their
 *	               frames are freed), unless it is gone already; then
 *	               create it again and map it at pages 8-9 of every
 *	               address space whose task runs
 *	mapshm M       map the shared object in mm M once more, across two
 *	               page tables (mm_map_shared at SIM_SHM_ALT_BASE)
 *
 * For example "run 1, read 0, kthread, run 1, read 0".
 */
#include "tests/host/tlb_sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What each operation's numbers are, in order. */
enum arg {
	ARG_MM,
	ARG_PAGE,
	ARG_KPAGE,
	ARG_TABLE,
	ARG_COUNT,
	ARG_KSTACK,
	ARG_NONE
};

#define ARGS_MAX 3 /* unmap M P N */

static const struct {
	const char *name;
	enum arg args[ARGS_MAX];
	/* How often random workloads draw it: accesses most, switches
	 * next, table changes rarer, exits rarest (an exited mm takes no
	 * more work). */
	unsigned weight;
} ops[] = {
	[OP_RUN] = {"run", {ARG_MM, ARG_NONE, ARG_NONE}, 18},
	[OP_KTHREAD] = {"kthread", {ARG_NONE, ARG_NONE, ARG_NONE}, 8},
	[OP_READ] = {"read", {ARG_PAGE, ARG_NONE, ARG_NONE}, 20},
	[OP_WRITE] = {"write", {ARG_PAGE, ARG_NONE, ARG_NONE}, 14},
	[OP_KREAD] = {"kread", {ARG_KPAGE, ARG_NONE, ARG_NONE}, 4},
	[OP_REMAP] = {"remap", {ARG_MM, ARG_PAGE, ARG_NONE}, 10},
	[OP_UNMAP] = {"unmap", {ARG_MM, ARG_PAGE, ARG_COUNT}, 6},
	[OP_PROTECT] = {"protect", {ARG_MM, ARG_PAGE, ARG_NONE}, 8},
	[OP_FREE_TABLE] = {"free-table", {ARG_MM, ARG_TABLE, ARG_NONE}, 4},
	[OP_KREMAP] = {"kremap", {ARG_KPAGE, ARG_NONE, ARG_NONE}, 3},
	[OP_EXIT] = {"exit", {ARG_MM, ARG_NONE, ARG_NONE}, 2},
	[OP_KSTACK_ALLOC] = {"kstack-alloc",
			     {ARG_KSTACK, ARG_NONE, ARG_NONE},
			     3},
	[OP_KSTACK_FREE] = {"kstack-free", {ARG_KSTACK, ARG_NONE, ARG_NONE}, 3},
	[OP_KSTACK_TOUCH] = {"kstack-touch",
			     {ARG_KSTACK, ARG_NONE, ARG_NONE},
			     4},
	/* A revoke re-creates the object (tlb_sim_kernel.c): there is
	 * always one to map and revoke again. */
	[OP_REVOKE] = {"revoke", {ARG_NONE, ARG_NONE, ARG_NONE}, 2},
	[OP_MAP] = {"map", {ARG_MM, ARG_PAGE, ARG_COUNT}, 6},
	[OP_MAPSHM] = {"mapshm", {ARG_MM, ARG_NONE, ARG_NONE}, 2},
};

/* The largest value of each kind of argument, plus one. */
static unsigned arg_limit(enum arg a, unsigned mms)
{
	switch (a) {
	case ARG_MM:
		return mms + 1;
	case ARG_PAGE:
		return SIM_ALL_PAGES;
	case ARG_KPAGE:
		return SIM_KPAGES;
	case ARG_TABLE:
		return SIM_TABLES;
	case ARG_COUNT:
		return SIM_ALL_PAGES + 1;
	case ARG_KSTACK:
		return SIM_KSTACKS;
	case ARG_NONE:
		break;
	}
	return 0;
}

static void set_arg(struct sim_op *op, enum arg a, unsigned value)
{
	if (a == ARG_MM)
		op->mm = (uint8_t)(value - 1);
	else if (a == ARG_COUNT)
		op->count = (uint8_t)value;
	else
		op->page = (uint8_t)value;
}

static unsigned get_arg(const struct sim_op *op, enum arg a)
{
	if (a == ARG_MM)
		return op->mm + 1U;
	return a == ARG_COUNT ? op->count : op->page;
}

/* Parses one operation at *text (up to a comma or the end). */
static bool parse_op(const char **text, unsigned mms, struct sim_op *op,
		     char *err, size_t size)
{
	const char *s = *text + strspn(*text, " ");
	size_t len = strcspn(s, " ,");
	unsigned kind;

	for (kind = 0; kind < ARRAY_SIZE(ops); kind++) {
		if (strlen(ops[kind].name) == len &&
		    !strncmp(s, ops[kind].name, len))
			break;
	}
	if (kind == ARRAY_SIZE(ops)) {
		snprintf(err, size, "unknown operation '%.*s'", (int)len, s);
		return false;
	}
	*op = (struct sim_op){.kind = (uint8_t)kind};
	s += len;
	for (unsigned i = 0; i < ARGS_MAX && ops[kind].args[i] != ARG_NONE;
	     i++) {
		enum arg a = ops[kind].args[i];
		char *end;
		unsigned long value = strtoul(s, &end, 10);

		if (end == s || value >= arg_limit(a, mms) ||
		    (a == ARG_MM && !value) || (a == ARG_COUNT && !value)) {
			snprintf(err, size, "%s: argument %u out of range",
				 ops[kind].name, i + 1);
			return false;
		}
		set_arg(op, a, (unsigned)value);
		s = end;
	}
	s += strspn(s, " ");
	if (*s && *s != ',') {
		snprintf(err, size, "%s: unexpected '%s'", ops[kind].name, s);
		return false;
	}
	*text = *s ? s + 1 : s;
	return true;
}

bool workload_parse(struct sim_workload *w, unsigned cpu, const char *text,
		    char *err, size_t size)
{
	w->nops[cpu] = 0;
	while (*text) {
		if (w->nops[cpu] == SIM_OPS_MAX) {
			snprintf(err, size, "more than %d operations",
				 SIM_OPS_MAX);
			return false;
		}
		if (!parse_op(&text, w->mms, &w->ops[cpu][w->nops[cpu]++], err,
			      size))
			return false;
	}
	return true;
}

unsigned workload_mms(const struct sim_workload *w)
{
	unsigned mms = 1;

	for (unsigned cpu = 0; cpu < w->cpus; cpu++) {
		for (unsigned i = 0; i < w->nops[cpu]; i++) {
			const struct sim_op *op = &w->ops[cpu][i];

			for (unsigned a = 0; a < ARGS_MAX; a++) {
				if (ops[op->kind].args[a] == ARG_MM)
					mms = MAX(mms, op->mm + 1U);
			}
		}
	}
	return mms;
}

const char *workload_op_name(const struct sim_op *op, char *buf, size_t size)
{
	size_t used = (size_t)snprintf(buf, size, "%s", ops[op->kind].name);

	for (unsigned i = 0; i < ARGS_MAX && ops[op->kind].args[i] != ARG_NONE;
	     i++)
		used += (size_t)snprintf(buf + used, size - used, " %u",
					 get_arg(op, ops[op->kind].args[i]));
	return buf;
}

void workload_print(const struct sim_workload *w, const char *prefix)
{
	char name[32];

	for (unsigned cpu = 0; cpu < w->cpus; cpu++) {
		printf("%scpu%u:", prefix, cpu);
		for (unsigned i = 0; i < w->nops[cpu]; i++)
			printf("%s %s", i ? "," : "",
			       workload_op_name(&w->ops[cpu][i], name,
						sizeof(name)));
		printf("\n");
	}
}

void workload_generate(struct sim_workload *w, uint64_t seed)
{
	/* At least four operations each, and room to spare below the cap. */
	const unsigned min_ops = 4, spread = SIM_OPS_MAX / 2;
	unsigned total = 0;
	uint64_t state = seed;

	for (size_t k = 0; k < ARRAY_SIZE(ops); k++)
		total += ops[k].weight;
	memset(w, 0, sizeof(*w));
	w->cpus = 2 + (unsigned)(sim_splitmix(&state) % (SIM_CPUS_MAX - 1));
	w->mms = 2 + (unsigned)(sim_splitmix(&state) % (SIM_MMS_MAX - 1));
	for (unsigned cpu = 0; cpu < w->cpus; cpu++) {
		w->nops[cpu] =
			min_ops + (unsigned)(sim_splitmix(&state) % spread);
		for (unsigned i = 0; i < w->nops[cpu]; i++) {
			struct sim_op *op = &w->ops[cpu][i];
			unsigned r = (unsigned)(sim_splitmix(&state) % total),
				 kind = 0;

			while (r >= ops[kind].weight)
				r -= ops[kind++].weight;
			*op = (struct sim_op){.kind = (uint8_t)kind};
			for (unsigned a = 0; a < ARGS_MAX; a++) {
				enum arg arg = ops[kind].args[a];
				unsigned limit = arg_limit(arg, w->mms);

				if (arg == ARG_NONE)
					break;
				/* mms and counts start at 1 */
				if (arg == ARG_MM || arg == ARG_COUNT)
					set_arg(op, arg,
						1 + (unsigned)(sim_splitmix(
								       &state) %
							       (limit - 1)));
				else
					set_arg(op, arg,
						(unsigned)(sim_splitmix(
								   &state) %
							   limit));
			}
		}
	}
}
