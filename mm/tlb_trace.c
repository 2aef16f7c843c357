// SPDX-License-Identifier: MIT
/*
 * tlb_trace: one line per event of the TLB protocol (docs/tlb.md, "Watching
 * it"; tools/run/timeline.py draws them).
 *
 * A line holds the time (tlb_hw_clock), the CPU, the event, the mm and its
 * ASID here, and two generations: this CPU's slot (what its TLB is current
 * to) against the mm's. It ends with what ties the event to others: a
 * request's targets, a handler's sender, a switch's CR3 load.
 *
 * Each value is one the event has at hand. Tracing reads no shared
 * variable of its own, so the simulator's replays with tlb_trace on take
 * the steps of the runs they repeat.
 */
#include "mm/tlb_trace.h"
#include "console/kprintf.h"
#include "lib/format.h"
#include "mm/mm.h"
#include "mm/tlb.h"
#include "mm/tlb_hw.h"
#include "sync/cpumask.h"

static void trace_gen(char *buf, size_t size, uint64_t gen)
{
	if (gen == TRACE_GEN_UNREAD)
		ksnprintf(buf, size, "-");
	else
		ksnprintf(buf, size, "%llu", (unsigned long long)gen);
}

static void trace_line(const char *event, const struct mm *mm, uint16_t asid,
		       uint64_t local_gen, uint64_t mm_gen, const char *link)
{
	char local[24], current[24];

	trace_gen(local, sizeof(local), local_gen);
	trace_gen(current, sizeof(current), mm_gen);
	kprintf("tlb: t=%llu cpu%u %-13s mm%llu asid%d gen %s/%s%s%s\n",
		(unsigned long long)tlb_hw_clock(), tlb_hw_cpu(), event,
		(unsigned long long)mm->context_id,
		asid == TLB_ASID_KERNEL ? -1 : (int)asid, local, current,
		*link ? " " : "", link);
}

void tlb_trace_event(const char *event, const struct mm *mm, uint16_t asid,
		     uint64_t local_gen, uint64_t mm_gen)
{
	trace_line(event, mm, asid, local_gen, mm_gen, "");
}

void tlb_trace_handling(const char *event, const struct tlb_flush_request *r,
			uint16_t asid, uint64_t local_gen, uint64_t mm_gen)
{
	char from[16];

	ksnprintf(from, sizeof(from), "from cpu%u", r->sender);
	trace_line(event, r->mm, asid, local_gen, mm_gen, from);
}

/*
 * The targets print as runs of CPUs ("to 1-3,6"), or "to none". A list
 * too long for the line ends in "...".
 */
void tlb_trace_request(const struct mm *mm, uint16_t asid, uint64_t new_gen,
		       const struct cpumask *targets)
{
	char to[128] = "to none", cpu_text[16];
	size_t used = 0;
	unsigned cpu;

	for_each_cpu (cpu, targets) {
		bool follows = cpu > 0 && cpumask_test(targets, cpu - 1);
		bool followed =
			cpu + 1 < MAX_CPUS && cpumask_test(targets, cpu + 1);
		const char *separator;
		size_t n;

		if (follows && followed)
			continue; /* inside a run: only its ends are printed */
		separator = follows ? "-" : used ? "," : "to ";
		n = (size_t)ksnprintf(cpu_text, sizeof(cpu_text), "%s%u",
				      separator, cpu);
		if (used + n > sizeof(to) - sizeof("...")) {
			ksnprintf(to + used, sizeof(to) - used, "...");
			break;
		}
		used += (size_t)ksnprintf(to + used, sizeof(to) - used, "%s",
					  cpu_text);
	}
	trace_line("request", mm, asid, new_gen - 1, new_gen, to);
}

/*
 * next may be kernel_mm too, or run under its global ASID: no slot, no
 * generations. The line says
 * whether the CR3 load drops the PCID's entries (no no-flush bit: always
 * so without PCID).
 */
void tlb_trace_switch(const struct tlb_cpu *c, const struct mm *next,
		      uint16_t asid, uint64_t cr3)
{
	uint64_t gen = asid >= TLB_ASID_SLOTS_MAX ? TRACE_GEN_UNREAD
						  : c->slots[asid].tlb_gen;

	trace_line("switch", next, asid, gen, gen,
		   cr3 & CR3_NOFLUSH ? "cr3 keep" : "cr3 flush");
}

void tlb_trace_spurious(const struct mm *mm, uint16_t asid, uint64_t local_gen,
			uint64_t va)
{
	char link[32];

	ksnprintf(link, sizeof(link), "va %#llx", (unsigned long long)va);
	trace_line("spurious", mm, asid, local_gen, TRACE_GEN_UNREAD, link);
}
