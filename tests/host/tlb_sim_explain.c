// SPDX-License-Identifier: MIT
/*
 * What -v adds to the trace (docs/tlb-simulator.md, "Reproducing a
 * failure"): the values behind each of the protocol's decisions.
 *
 *   loads     each load of a CPU's loaded_mm or is_lazy, or of an address
 *             space's tlb_gen or cpu_mask, by name, with the value it
 *             returned and where that came from (memory, or the CPU's own
 *             store buffer), and every store to the same variable still in
 *             another CPU's buffer:
 *               read cpu1.loaded_mm = mm2 (memory); cpu1's store buffer
 *               holds SWITCHING, not yet visible
 *             A flusher that skips a CPU on a value that is already
 *             stale shows it here.
 *   handlers  after mm/tlb.c's own line for a request handled
 *             (not-loaded, leave-lazy, up-to-date, flush-pages, flush-all),
 *             one line with the values that chose it.
 *
 * Nothing here is an access: the buffers are read directly and the state
 * through SIM_PEEK, so a run takes the same steps with -v as without.
 */
#include "tests/host/tlb_sim.h"
#include "mm/tlb_cpu.h"
#include "mm/tlb_trace.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

bool sim_explain;

/* The protocol's shared variables that have names. */
enum shared_var {
	VAR_NONE,
	VAR_LOADED_MM,
	VAR_IS_LAZY,
	VAR_TLB_GEN,
	VAR_CPU_MASK,
};

static const char *mm_name(const struct mm *mm, char *buf, size_t size)
{
	int index = kern_mm_index(mm);

	if (mm == TLB_MM_SWITCHING)
		snprintf(buf, size, "SWITCHING");
	else if (mm == &kernel_mm)
		snprintf(buf, size, "kernel_mm");
	else if (index >= 0)
		snprintf(buf, size, "mm%d", index + 1);
	else
		snprintf(buf, size, "%p", (const void *)mm);
	return buf;
}

/* "cpu1.loaded_mm", "mm2.tlb_gen": what a is (exactly, size bytes). */
static enum shared_var var_at(uintptr_t a, size_t size, char *buf,
			      size_t bufsize)
{
	for (unsigned c = 0; c < SIM_CPUS_MAX; c++) {
		const struct tlb_cpu *t = &tlb_cpus[c];

		if (a == (uintptr_t)SHARED_RAW(&t->loaded_mm) &&
		    size == sizeof(struct mm *)) {
			snprintf(buf, bufsize, "cpu%u.loaded_mm", c);
			return VAR_LOADED_MM;
		}
		if (a == (uintptr_t)SHARED_RAW(&t->is_lazy) &&
		    size == sizeof(bool)) {
			snprintf(buf, bufsize, "cpu%u.is_lazy", c);
			return VAR_IS_LAZY;
		}
	}
	for (unsigned i = 0; kern_mm(i); i++) {
		const struct mm *mm = kern_mm(i);

		if (a == (uintptr_t)SHARED_RAW(&mm->tlb_gen) &&
		    size == sizeof(uint64_t)) {
			snprintf(buf, bufsize, "mm%u.tlb_gen", i + 1);
			return VAR_TLB_GEN;
		}
		/* Word 0 holds every simulated CPU (SIM_CPUS_MAX <= 64). */
		if (a == (uintptr_t)SHARED_RAW(&mm->cpu_mask.bits[0]) &&
		    size == sizeof(uint64_t)) {
			snprintf(buf, bufsize, "mm%u.cpu_mask", i + 1);
			return VAR_CPU_MASK;
		}
	}
	return VAR_NONE;
}

/* "SWITCHING", "true", "3", "{0,2}": value v of a variable of kind var. */
static const char *value_name(enum shared_var var, uint64_t v, char *buf,
			      size_t size)
{
	size_t used = 0;

	switch (var) {
	case VAR_LOADED_MM:
		return mm_name((const struct mm *)(uintptr_t)v, buf, size);
	case VAR_IS_LAZY:
		snprintf(buf, size, "%s", v ? "true" : "false");
		return buf;
	case VAR_CPU_MASK:
		used = (size_t)snprintf(buf, size, "{");
		for (unsigned c = 0; c < SIM_CPUS_MAX; c++) {
			if (v & (1ULL << c))
				used += (size_t)snprintf(
					buf + used, size - used, "%s%u",
					used > 1 ? "," : "", c);
		}
		snprintf(buf + used, size - used, "}");
		return buf;
	default:
		snprintf(buf, size, "%llu", (unsigned long long)v);
		return buf;
	}
}

void sim_explain_load(unsigned cpu, const void *p, size_t size, uint64_t v)
{
	char line[200], name[32], value[48];
	enum shared_var var = var_at((uintptr_t)p, size, name, sizeof(name));
	size_t used;

	if (var == VAR_NONE)
		return;
	used = (size_t)snprintf(line, sizeof(line), "read %s = %s (%s)", name,
				value_name(var, v, value, sizeof(value)),
				sim_memory_forwards(cpu, p, size)
					? "its own store buffer"
					: "memory");
	for (unsigned c = 0; c < SIM_CPUS_MAX && used < sizeof(line); c++) {
		uint64_t pending;

		if (c == cpu || !sim_memory_pending(c, p, size, &pending))
			continue;
		used += (size_t)snprintf(
			line + used, sizeof(line) - used,
			"; cpu%u's store buffer holds %s, not yet visible", c,
			value_name(var, pending, value, sizeof(value)));
	}
	sim_trace("%s", line);
}

/* --- Handlers -------------------------------------------------------------------- */

/*
 * Why a handler chose a whole-context flush: each condition of
 * flush-pages that failed (mm/tlb.c, flush_tlb_here).
 */
static void full_flush_reasons(const struct tlb_flush_request *r,
			       uint64_t local_gen, uint64_t mm_gen,
			       uint64_t pages, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	if (mm_gen > local_gen + 1)
		used += (size_t)snprintf(
			buf + used, size - used, "; %llu changes behind",
			(unsigned long long)(mm_gen - local_gen));
	if (r->new_gen != mm_gen && used < size)
		used += (size_t)snprintf(buf + used, size - used,
					 "; not the newest request");
	if (pages > tlb_policy.flush_ceiling && used < size)
		snprintf(buf + used, size - used,
			 "; more pages than the ceiling");
}

/* After mm/tlb.c's line for request r: the values that chose event. */
static void explain_handling(const char *event,
			     const struct tlb_flush_request *r,
			     uint64_t local_gen, uint64_t mm_gen)
{
	const struct tlb_cpu *c = &tlb_cpus[sim_cpu()];
	uint64_t pages = (r->end - r->start) >> r->stride_shift;
	char mm[24], loaded[24], reasons[96];

	mm_name(r->mm, mm, sizeof(mm));
	if (!strcmp(event, "not-loaded")) {
		sim_trace("  not-loaded: loaded_mm %s is not the request's "
			  "%s",
			  mm_name(SIM_PEEK(&c->loaded_mm), loaded,
				  sizeof(loaded)),
			  mm);
	} else if (!strcmp(event, "leave-lazy")) {
		sim_trace("  leave-lazy: loaded_mm %s, is_lazy true: "
			  "switches to kernel_mm rather than flush",
			  mm);
	} else if (!strcmp(event, "up-to-date")) {
		sim_trace("  up-to-date: slot gen %llu >= %s.tlb_gen %llu "
			  "(request gen %llu)",
			  (unsigned long long)local_gen, mm,
			  (unsigned long long)mm_gen,
			  (unsigned long long)r->new_gen);
	} else if (!strcmp(event, "flush-pages")) {
		sim_trace("  flush-pages: slot gen %llu + 1 = request gen "
			  "%llu = %s.tlb_gen, %llu page%s <= flush_ceiling "
			  "%u",
			  (unsigned long long)local_gen,
			  (unsigned long long)r->new_gen, mm,
			  (unsigned long long)pages, pages == 1 ? "" : "s",
			  tlb_policy.flush_ceiling);
	} else if (!strcmp(event, "flush-all")) {
		full_flush_reasons(r, local_gen, mm_gen, pages, reasons,
				   sizeof(reasons));
		sim_trace("  flush-all: slot gen %llu, %s.tlb_gen %llu, "
			  "request gen %llu, %llu page%s, flush_ceiling "
			  "%u%s",
			  (unsigned long long)local_gen, mm,
			  (unsigned long long)mm_gen,
			  (unsigned long long)r->new_gen,
			  (unsigned long long)pages, pages == 1 ? "" : "s",
			  tlb_policy.flush_ceiling, reasons);
	}
}

/* mm/tlb_trace.c's tlb_trace_handling, behind the linker's --wrap. */
void __real_tlb_trace_handling(const char *event,
			       const struct tlb_flush_request *r, uint16_t asid,
			       uint64_t local_gen, uint64_t mm_gen);
void __wrap_tlb_trace_handling(const char *event,
			       const struct tlb_flush_request *r, uint16_t asid,
			       uint64_t local_gen, uint64_t mm_gen);

void __wrap_tlb_trace_handling(const char *event,
			       const struct tlb_flush_request *r, uint16_t asid,
			       uint64_t local_gen, uint64_t mm_gen)
{
	__real_tlb_trace_handling(event, r, asid, local_gen, mm_gen);
	if (sim_explain)
		explain_handling(event, r, local_gen, mm_gen);
}
