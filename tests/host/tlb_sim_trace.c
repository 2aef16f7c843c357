// SPDX-License-Identifier: MIT
/*
 * The trace: a ring of the last SIM_TRACE_LINES events of a run, each
 * with the scheduling step and the CPU, printed after a failure (and as
 * they happen with sim_verbose). The events come from the simulator (CR3
 * loads, invalidations, IPIs, switches, changes, accesses, frees),
 * with tlb_trace on from mm/tlb.c's own kprintf lines (generations), and
 * with -v from tlb_sim_explain.c (the values behind each decision).
 */
#include "tests/host/tlb_sim.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static char trace_ring[SIM_TRACE_LINES][SIM_TRACE_WIDTH];
static unsigned trace_next, trace_count;

bool sim_verbose;

void sim_trace_reset(void)
{
	trace_next = trace_count = 0;
}

void sim_trace(const char *fmt, ...)
{
	char *line = trace_ring[trace_next];
	int cpu = sim_current();
	int used;
	va_list ap;

	if (cpu >= 0)
		used = snprintf(line, SIM_TRACE_WIDTH, "%6llu cpu%d  ",
				(unsigned long long)sim_steps(), cpu);
	else
		used = snprintf(line, SIM_TRACE_WIDTH, "%6s main  ", "");
	va_start(ap, fmt);
	vsnprintf(line + used, SIM_TRACE_WIDTH - (size_t)used, fmt, ap);
	va_end(ap);
	line[strcspn(line, "\n")] = '\0';
	trace_next = (trace_next + 1) % SIM_TRACE_LINES;
	trace_count += trace_count < SIM_TRACE_LINES;
	if (sim_verbose)
		printf("# %s\n", line);
}

void sim_trace_print(const char *prefix, unsigned last)
{
	unsigned n = MIN(last, trace_count);

	for (unsigned i = 0; i < n; i++) {
		unsigned at = (trace_next + SIM_TRACE_LINES - n + i) %
			      SIM_TRACE_LINES;

		printf("%s%s\n", prefix, trace_ring[at]);
	}
}

bool sim_trace_contains(const char *text)
{
	for (unsigned i = 0; i < trace_count; i++) {
		if (strstr(trace_ring[i], text))
			return true;
	}
	return false;
}
