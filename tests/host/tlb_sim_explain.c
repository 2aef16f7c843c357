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
 *   requests  after mm/tlb.c's own line for a request sent ("request ...
 *             to 1"), one line that says, for each CPU, whether it was
 *             sent the request or skipped, and the value read that
 *             decided, with a store to it still in a buffer then:
 *               request: cpu_mask {0,1} as read; cpu0 this CPU,
 *               flushes here; cpu1 skipped: loaded_mm SWITCHING as read
 *               (cpu1's store buffer still held mm1)
 *             "Sent" is the flusher's own choice (the targets it traced);
 *             the values are those its loads returned during its flush
 *             call, kept as they happened (Requests, below).
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

/* --- Names -------------------------------------------------------------------- */

/* The protocol's shared variables that have names. */
enum var_kind {
	VAR_NONE,
	VAR_LOADED_MM,
	VAR_IS_LAZY,
	VAR_ON_GLOBAL_ASID,
	VAR_TLB_GEN,
	VAR_CPU_MASK,
	VAR_GLOBAL_PCID,
	VAR_KINDS
};

/*
 * Each one's field name, whether a CPU or an address space owns it, and
 * whether -v prints its loads. The others are kept for the request lines
 * only, which show their values where they decided.
 */
static const struct {
	const char *field;
	bool per_cpu;
	bool printed;
} vars[VAR_KINDS] = {
	[VAR_LOADED_MM] = {"loaded_mm", true, true},
	[VAR_IS_LAZY] = {"is_lazy", true, true},
	[VAR_ON_GLOBAL_ASID] = {"on_global_asid", true, false},
	[VAR_TLB_GEN] = {"tlb_gen", false, true},
	[VAR_CPU_MASK] = {"cpu_mask", false, true},
	[VAR_GLOBAL_PCID] = {"global_pcid", false, false},
};

struct shared_var {
	enum var_kind kind;
	unsigned owner; /* the CPU, or the address space's index (mm1: 0) */
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

/* Whether [a, a+size) is exactly variable p (a SHARED(T) pointer). */
#define IS_VAR(a, size, p) \
	((a) == (uintptr_t)SHARED_RAW(p) && (size) == sizeof(*SHARED_RAW(p)))

/* Which named variable [a, a+size) is, if any. */
static struct shared_var var_at(uintptr_t a, size_t size)
{
	for (unsigned c = 0; c < SIM_CPUS_MAX; c++) {
		const struct tlb_cpu *t = &tlb_cpus[c];

		if (IS_VAR(a, size, &t->loaded_mm))
			return (struct shared_var){VAR_LOADED_MM, c};
		if (IS_VAR(a, size, &t->is_lazy))
			return (struct shared_var){VAR_IS_LAZY, c};
		if (IS_VAR(a, size, &t->on_global_asid))
			return (struct shared_var){VAR_ON_GLOBAL_ASID, c};
	}
	for (unsigned i = 0; kern_mm(i); i++) {
		const struct mm *mm = kern_mm(i);

		if (IS_VAR(a, size, &mm->tlb_gen))
			return (struct shared_var){VAR_TLB_GEN, i};
		/* Word 0 holds every simulated CPU (SIM_CPUS_MAX <= 64). */
		if (IS_VAR(a, size, &mm->cpu_mask.bits[0]))
			return (struct shared_var){VAR_CPU_MASK, i};
		if (IS_VAR(a, size, &mm->global_pcid))
			return (struct shared_var){VAR_GLOBAL_PCID, i};
	}
	return (struct shared_var){VAR_NONE, 0};
}

/* "cpu1.loaded_mm", "mm2.tlb_gen". */
static const char *var_name(struct shared_var var, char *buf, size_t size)
{
	snprintf(buf, size, "%s%u.%s", vars[var.kind].per_cpu ? "cpu" : "mm",
		 vars[var.kind].per_cpu ? var.owner : var.owner + 1,
		 vars[var.kind].field);
	return buf;
}

/* "SWITCHING", "true", "3", "{0,2}": value v of a variable of kind. */
static const char *value_name(enum var_kind kind, uint64_t v, char *buf,
			      size_t size)
{
	size_t used = 0;

	switch (kind) {
	case VAR_LOADED_MM:
		return mm_name((const struct mm *)(uintptr_t)v, buf, size);
	case VAR_IS_LAZY:
	case VAR_ON_GLOBAL_ASID:
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

/* --- Loads -------------------------------------------------------------------- */

/*
 * One load of a named variable: its value, and the newest store to it
 * still in another CPU's buffer at that moment (the first such CPU).
 */
struct value_read {
	bool read;
	uint64_t value;
	bool hidden;
	unsigned hidden_cpu;
	uint64_t hidden_value;
};

static void record_load(unsigned cpu, struct shared_var var,
			const struct value_read *r);

void sim_explain_load(unsigned cpu, const void *p, size_t size, uint64_t v)
{
	char line[200], name[32], value[48];
	struct shared_var var = var_at((uintptr_t)p, size);
	struct value_read r = {.read = true, .value = v};
	size_t used;

	if (var.kind == VAR_NONE)
		return;
	used = (size_t)snprintf(line, sizeof(line), "read %s = %s (%s)",
				var_name(var, name, sizeof(name)),
				value_name(var.kind, v, value, sizeof(value)),
				sim_memory_forwards(cpu, p, size)
					? "its own store buffer"
					: "memory");
	for (unsigned c = 0; c < SIM_CPUS_MAX && used < sizeof(line); c++) {
		uint64_t pending;

		if (c == cpu || !sim_memory_pending(c, p, size, &pending))
			continue;
		if (!r.hidden) {
			r.hidden = true;
			r.hidden_cpu = c;
			r.hidden_value = pending;
		}
		used += (size_t)snprintf(
			line + used, sizeof(line) - used,
			"; cpu%u's store buffer holds %s, not yet visible", c,
			value_name(var.kind, pending, value, sizeof(value)));
	}
	record_load(cpu, var, &r);
	if (vars[var.kind].printed)
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

/* --- Requests -------------------------------------------------------------------- */

/*
 * What a flusher read of one address space and of each CPU while it chose
 * the targets of that space's request (mm/tlb.c, choose_targets): its
 * first read of the space's cpu_mask, then of each CPU in it, until it
 * reads another mask. A later read of the same mask is the transition's
 * check (transition_goes_on), whose loads say nothing of the targets.
 * global_pcid: whether the space was flushed by broadcast.
 */
struct space_reads {
	const struct mm *mm;
	bool freed_tables;
	struct value_read mask, global_pcid;
	struct value_read loaded_mm[SIM_CPUS_MAX];
	struct value_read on_global_asid[SIM_CPUS_MAX];
	struct value_read is_lazy[SIM_CPUS_MAX];
};

/*
 * Each CPU's reads during its flush call (flush_tlb_mm_range, or a batch:
 * flush_tlb_mms), from the call to its return. Loads in an interrupt
 * handler on the flusher's CPU are the handler's, not the flusher's. The
 * flusher reads its own loaded_mm after choosing the targets, to decide
 * whether it flushes here, and a request line shows the latest such read.
 * The transition's check may read it again; a handler in between can only
 * have sent the CPU from a LAZY mm to kernel_mm, neither of them the
 * flushed one, so the line's verdict is the same.
 */
static struct flusher {
	bool active;
	bool batch;
	unsigned count;
	struct space_reads spaces[TLB_MULTI_MMS_MAX];
	struct space_reads *choosing;	 /* whose targets the loads choose */
	struct value_read own_loaded_mm; /* its latest */
} flushers[SIM_CPUS_MAX];

static struct space_reads *space_of(struct flusher *f, const struct mm *mm)
{
	for (unsigned i = 0; i < f->count; i++) {
		if (f->spaces[i].mm == mm)
			return &f->spaces[i];
	}
	return NULL;
}

static void record_load(unsigned cpu, struct shared_var var,
			const struct value_read *r)
{
	struct flusher *f = &flushers[cpu];
	struct space_reads *s;

	if (!f->active || sim_in_interrupt())
		return;
	if (vars[var.kind].per_cpu) {
		s = f->choosing;
		if (var.kind == VAR_LOADED_MM && var.owner == cpu)
			f->own_loaded_mm = *r;
		else if (s && var.kind == VAR_LOADED_MM)
			s->loaded_mm[var.owner] = *r;
		else if (s && var.kind == VAR_ON_GLOBAL_ASID)
			s->on_global_asid[var.owner] = *r;
		else if (s && var.kind == VAR_IS_LAZY)
			s->is_lazy[var.owner] = *r;
		return;
	}
	s = space_of(f, kern_mm(var.owner));
	if (!s)
		return;
	if (var.kind == VAR_CPU_MASK) {
		f->choosing = s->mask.read ? NULL : s;
		if (!s->mask.read)
			s->mask = *r;
	} else if (var.kind == VAR_GLOBAL_PCID) {
		s->global_pcid = *r;
	}
}

/* A flush call on this CPU begins: its reads are kept from now on. */
static struct flusher *begin_flush(bool batch)
{
	struct flusher *f = &flushers[sim_cpu()];

	memset(f, 0, sizeof(*f));
	f->active = true;
	f->batch = batch;
	return f;
}

static void add_space(struct flusher *f, const struct mm *mm,
		      enum tlb_freed_tables freed)
{
	f->spaces[f->count++] = (struct space_reads){
		.mm = mm,
		.freed_tables = freed == TLB_TABLES_FREED,
	};
}

/* "SWITCHING as read (cpu1's store buffer still held mm1)". */
static const char *as_read(enum var_kind kind, const struct value_read *r,
			   char *buf, size_t size)
{
	char value[48], hidden[48];
	int used = snprintf(buf, size, "%s as read",
			    value_name(kind, r->value, value, sizeof(value)));

	if (r->hidden && used >= 0 && (size_t)used < size)
		snprintf(buf + used, size - (size_t)used,
			 " (cpu%u's store buffer still held %s)", r->hidden_cpu,
			 value_name(kind, r->hidden_value, hidden,
				    sizeof(hidden)));
	return buf;
}

/*
 * Whether the values the flusher read of cpu make it a target of s's
 * request by mm/tlb.c's rules, asked in its order (choose_targets,
 * cpu_needs_flush); why holds the value that decides.
 */
static bool chosen_as_read(const struct space_reads *s, unsigned cpu, char *why,
			   size_t size)
{
	const struct value_read *loaded = &s->loaded_mm[cpu];
	const struct value_read *lazy = &s->is_lazy[cpu];
	char value[96];

	if (!s->mask.read) {
		snprintf(why, size, "cpu_mask not read");
		return false;
	}
	if (!(s->mask.value & (1ULL << cpu))) {
		snprintf(why, size, "not in cpu_mask");
		return false;
	}
	if (!loaded->read) {
		snprintf(why, size, "in cpu_mask, loaded_mm not read");
		return false;
	}
	as_read(VAR_LOADED_MM, loaded, value, sizeof(value));
	if (loaded->value != (uintptr_t)s->mm) {
		snprintf(why, size, "loaded_mm %s", value);
		return loaded->value == (uintptr_t)TLB_MM_SWITCHING;
	}
	if (s->on_global_asid[cpu].read && s->on_global_asid[cpu].value) {
		snprintf(why, size,
			 "on_global_asid %s: the broadcast reaches it",
			 as_read(VAR_ON_GLOBAL_ASID, &s->on_global_asid[cpu],
				 value, sizeof(value)));
		return false;
	}
	if (lazy->read && lazy->value) {
		snprintf(why, size, "is_lazy %s, lazy=%s, %s",
			 as_read(VAR_IS_LAZY, lazy, value, sizeof(value)),
			 tlb_lazy_names[tlb_policy.lazy],
			 s->freed_tables ? "tables freed" : "no tables freed");
		return false;
	}
	if (lazy->read)
		snprintf(why, size, "loaded_mm %s, is_lazy false", value);
	else if (s->freed_tables)
		snprintf(why, size,
			 "loaded_mm %s, is_lazy not read (lazy=%s, tables "
			 "freed)",
			 value, tlb_lazy_names[tlb_policy.lazy]);
	else
		snprintf(why, size, "loaded_mm %s", value);
	return true;
}

/*
 * cpu's part of the line: sent or skipped (the targets the flusher chose),
 * and the value that decided. Two steps after choose_targets change the
 * outcome: a batch sends each target every space's request, and a
 * broadcast whose transition is over sends no request at all.
 */
static void target_part(const struct flusher *f, const struct space_reads *s,
			unsigned cpu, bool sent, char *buf, size_t size)
{
	char why[200];
	bool chosen = chosen_as_read(s, cpu, why, sizeof(why));

	if (sent && !chosen && f->batch)
		snprintf(buf, size,
			 "sent for another space of the batch, not for this "
			 "one: %s",
			 why);
	else if (!sent && chosen && s->global_pcid.read && s->global_pcid.value)
		snprintf(buf, size,
			 "skipped: %s, but the broadcast to global PCID %llu "
			 "covers it, the ASID transition being over",
			 why, (unsigned long long)s->global_pcid.value);
	else
		snprintf(buf, size, "%s: %s", sent ? "sent" : "skipped", why);
}

/* The flusher's own part: whether it flushes here (mm/tlb.c, "here"). */
static void own_part(const struct flusher *f, const struct space_reads *s,
		     uint16_t asid, char *buf, size_t size)
{
	const struct value_read *own = &f->own_loaded_mm;
	bool loaded =
		own->read && (const struct mm *)(uintptr_t)own->value == s->mm;
	/* Only this CPU writes it, and nothing ran here since the batch's
	 * test of it, just before the request line. */
	bool global = tlb_cpus[sim_cpu()].loaded_asid == TLB_ASID_GLOBAL;
	char value[96], mm[24];

	/* A single request names the ASID it flushes here; a batch none. */
	if (f->batch ? loaded && !global : asid != TLB_ASID_KERNEL)
		snprintf(buf, size, "this CPU, flushes here");
	else if (loaded)
		snprintf(buf, size,
			 "this CPU, on %s's global ASID: the broadcast "
			 "reaches it",
			 mm_name(s->mm, mm, sizeof(mm)));
	else if (own->read)
		snprintf(buf, size, "this CPU, loaded_mm %s: nothing here",
			 as_read(VAR_LOADED_MM, own, value, sizeof(value)));
	else
		snprintf(buf, size, "this CPU, loaded_mm not read");
}

/* After mm/tlb.c's request line: each CPU, sent or skipped, and why. */
static void explain_request(const struct mm *mm, uint16_t asid,
			    const struct cpumask *targets)
{
	unsigned self = sim_cpu(), cpu;
	const struct flusher *f = &flushers[self];
	const struct space_reads *s = space_of(&flushers[self], mm);
	/* Room for the trace's step and CPU in front. */
	char line[SIM_TRACE_WIDTH - 32], part[320], value[96];
	size_t used;

	if (!f->active || !s)
		return;
	if (s->mask.read)
		used = (size_t)snprintf(
			line, sizeof(line), "cpu_mask %s",
			as_read(VAR_CPU_MASK, &s->mask, value, sizeof(value)));
	else
		used = (size_t)snprintf(line, sizeof(line),
					"cpu_mask not read");
	for_each_cpu (cpu, tlb_hw_online()) {
		if (cpu == self)
			own_part(f, s, asid, part, sizeof(part));
		else
			target_part(f, s, cpu, cpumask_test(targets, cpu), part,
				    sizeof(part));
		if (used < sizeof(line))
			used += (size_t)snprintf(line + used,
						 sizeof(line) - used,
						 "; cpu%u %s", cpu, part);
	}
	if (used >= sizeof(line))
		memcpy(line + sizeof(line) - sizeof("..."), "...",
		       sizeof("..."));
	sim_trace("  request: %s", line);
}

/* mm/tlb.c's flush entry points and request line, behind --wrap. */
void __real_flush_tlb_mm_range(struct mm *mm, uint64_t start, uint64_t end,
			       unsigned stride_shift,
			       enum tlb_freed_tables freed);
void __wrap_flush_tlb_mm_range(struct mm *mm, uint64_t start, uint64_t end,
			       unsigned stride_shift,
			       enum tlb_freed_tables freed);
void __real_flush_tlb_mms(const struct tlb_mm_range *ranges, unsigned count);
void __wrap_flush_tlb_mms(const struct tlb_mm_range *ranges, unsigned count);
void __real_tlb_trace_request(const struct mm *mm, uint16_t asid,
			      uint64_t new_gen, const struct cpumask *targets);
void __wrap_tlb_trace_request(const struct mm *mm, uint16_t asid,
			      uint64_t new_gen, const struct cpumask *targets);

void __wrap_flush_tlb_mm_range(struct mm *mm, uint64_t start, uint64_t end,
			       unsigned stride_shift,
			       enum tlb_freed_tables freed)
{
	struct flusher *f;

	if (!sim_explain || sim_current() < 0) {
		__real_flush_tlb_mm_range(mm, start, end, stride_shift, freed);
		return;
	}
	f = begin_flush(false);
	add_space(f, mm, freed);
	__real_flush_tlb_mm_range(mm, start, end, stride_shift, freed);
	f->active = false;
}

/* Under unmap_batch=per_mm, flush_tlb_mms calls flush_tlb_mm_range
 * inside mm/tlb.c, which --wrap does not reach: these spaces serve. */
void __wrap_flush_tlb_mms(const struct tlb_mm_range *ranges, unsigned count)
{
	struct flusher *f;

	if (!sim_explain || sim_current() < 0 || count > TLB_MULTI_MMS_MAX) {
		__real_flush_tlb_mms(ranges, count);
		return;
	}
	f = begin_flush(true);
	for (unsigned i = 0; i < count; i++) {
		if (ranges[i].start < ranges[i].end)
			add_space(f, ranges[i].mm, ranges[i].freed);
	}
	__real_flush_tlb_mms(ranges, count);
	f->active = false;
}

void __wrap_tlb_trace_request(const struct mm *mm, uint16_t asid,
			      uint64_t new_gen, const struct cpumask *targets)
{
	__real_tlb_trace_request(mm, asid, new_gen, targets);
	if (sim_explain && sim_current() >= 0)
		explain_request(mm, asid, targets);
}
