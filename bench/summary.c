// SPDX-License-Identifier: MIT
/*
 * The summary: what a student wants to know first, from rows the suite
 * measured (bench/results.h). Each headline compares two rows of one run,
 * never a run with a constant, so that it means the same under TCG, KVM
 * and on a real PC; on an emulator the summary says the costs are the
 * emulator's. A row that is missing (bench= left it out) or could not be
 * measured (n/a) turns its headline into a sentence saying so, with the
 * reason.
 */
#include "bench/summary.h"
#include "bench/cpus.h"
#include "bench/results.h"
#include "console/console.h"
#include "cpu/cpu.h"
#include "console/kprintf.h"
#include "cpu/platform.h"
#include "lib/format.h"
#include "lib/string.h"
#include "mm/tlb.h"
#include "cpu/percpu.h"

/* The screen's width for prose, whatever the screen: an 80x25 text mode. */
#define SUMMARY_COLUMNS 80
#define HEADLINE_MAX	256
#define FIGURE_MAX	64 /* one figure of a headline: "saves 1.2 us" */
#define HEADLINES_MAX	12

struct headline {
	const char *key; /* the word after `bench: summary` */
	char text[HEADLINE_MAX];
};

static struct headline headlines[HEADLINES_MAX];
static size_t headline_count;

static void __printf(2, 3) add(const char *key, const char *fmt, ...)
{
	struct headline *h;
	va_list ap;

	if (headline_count == HEADLINES_MAX)
		return;
	h = &headlines[headline_count++];
	h->key = key;
	va_start(ap, fmt);
	kvsnprintf(h->text, sizeof(h->text), fmt, ap);
	va_end(ap);
}

/* A row's median as a duration, with its instructions under icount. */
static const char *cost(char *buf, const struct bench_result *r)
{
	char d[BENCH_DURATION_MAX];

	bench_format_duration(d, r->median_ns_tenths);
	if (r->insns)
		ksnprintf(buf, FIGURE_MAX, "%s (%llu insns)", d,
			  (unsigned long long)r->insns);
	else
		strlcpy(buf, d, FIGURE_MAX);
	return buf;
}

/*
 * The row to quote, or why there is none: `missing` when bench= left the
 * benchmark out, the n/a reason when it could not be measured here.
 */
static const struct bench_result *usable(const char *bench, const char *params,
					 const char **why)
{
	const struct bench_result *r = bench_results_find(bench, params);

	if (!r) {
		*why = "not measured in this run (bench= left it out)";
		return NULL;
	}
	if (!r->measured || !r->timed) {
		*why = r->measured ? "not a timed row" : r->why;
		return NULL;
	}
	return r;
}

/* "saves X" or, when the supposedly cheaper row was dearer, "costs X more". */
static const char *difference(char *buf, const struct bench_result *cheap,
			      const struct bench_result *dear)
{
	char d[BENCH_DURATION_MAX];

	if (dear->median_ns_tenths >= cheap->median_ns_tenths)
		ksnprintf(buf, FIGURE_MAX, "saves %s",
			  bench_format_duration(
				  d, dear->median_ns_tenths -
					     cheap->median_ns_tenths));
	else
		ksnprintf(buf, FIGURE_MAX, "costs %s more",
			  bench_format_duration(
				  d, cheap->median_ns_tenths -
					     dear->median_ns_tenths));
	return buf;
}

/* --- The headlines ------------------------------------------------------------ */

static void headline_pcid(void)
{
	char a[FIGURE_MAX], b[FIGURE_MAX], c[FIGURE_MAX];
	char d[FIGURE_MAX];
	const char *why;
	const struct bench_result *on =
		usable("mm_switch", "pcid=on,pages=0", &why);
	const struct bench_result *off, *on512, *off512;

	if (!on && !bench_results_find("mm_switch", "pcid=on,pages=0")) {
		add("pcid", "PCID: %s.", why);
		return;
	}
	if (!on) {
		add("pcid",
		    "PCID: what a PCID hit saves per switch cannot be "
		    "measured here: %s.",
		    why);
		return;
	}
	off = usable("mm_switch", "pcid=off,pages=0", &why);
	if (!off) {
		add("pcid", "PCID: no switch without PCID to compare with: %s.",
		    why);
		return;
	}
	on512 = usable("mm_switch", "pcid=on,pages=512", &why);
	off512 = usable("mm_switch", "pcid=off,pages=512", &why);
	if (on512 && off512)
		add("pcid",
		    "PCID: a hit %s per address-space switch (%s "
		    "with PCID, %s without); touching 512 pages "
		    "after each, it %s.",
		    difference(a, on, off), cost(b, on), cost(c, off),
		    difference(d, on512, off512));
	else
		add("pcid",
		    "PCID: a hit %s per address-space switch (%s "
		    "with PCID, %s without).",
		    difference(a, on, off), cost(b, on), cost(c, off));
}

static void headline_ipc(void)
{
	char a[FIGURE_MAX], b[FIGURE_MAX], c[FIGURE_MAX];
	const char *why;
	const struct bench_result *two = usable("ipc", "spaces=2,cpus=1", &why);
	const struct bench_result *one, *cross;

	if (!two) {
		add("ipc", "IPC: the round trip between address spaces: %s.",
		    why);
		return;
	}
	one = usable("ipc", "spaces=1,cpus=1", &why);
	cross = usable("ipc", "spaces=2,cpus=2", &why);
	if (one && cross)
		add("ipc",
		    "IPC: a round trip between two address spaces "
		    "costs %s on one CPU (%s within one space, %s "
		    "across two CPUs).",
		    cost(a, two), cost(b, one), cost(c, cross));
	else if (one)
		add("ipc",
		    "IPC: a round trip between two address spaces "
		    "costs %s on one CPU (%s within one space).",
		    cost(a, two), cost(b, one));
	else
		add("ipc",
		    "IPC: a round trip between two address spaces "
		    "costs %s on one CPU.",
		    cost(a, two));
}

static void headline_flush(void)
{
	char a[FIGURE_MAX], b[FIGURE_MAX], c[FIGURE_MAX];
	const char *why;
	const struct bench_result *invlpg =
		usable("invlpg", "entry=present", &why);
	const struct bench_result *full, *all;

	if (!invlpg) {
		add("flush", "Flushes: INVLPG: %s.", why);
		return;
	}
	full = usable("flush_full", "what=nonglobal,how=cr3", &why);
	if (!full) {
		add("flush",
		    "Flushes: INVLPG of one page costs %s; the full "
		    "flush: %s.",
		    cost(a, invlpg), why);
		return;
	}
	all = usable("flush_full", "what=all,how=cr4_pge", &why);
	if (all)
		add("flush",
		    "Flushes: INVLPG of one page costs %s; a full "
		    "flush %s by CR3 reload, %s with the global "
		    "entries (CR4.PGE).",
		    cost(a, invlpg), cost(b, full), cost(c, all));
	else
		add("flush",
		    "Flushes: INVLPG of one page costs %s; a full "
		    "flush %s by CR3 reload.",
		    cost(a, invlpg), cost(b, full));
}

static void headline_ceiling(void)
{
	const struct bench_crossover *c = bench_results_crossover();

	if (!c->reported)
		add("ceiling", "Ceiling: the crossover was not measured in "
			       "this run (bench= left out flush_local).");
	else if (!c->measured)
		add("ceiling",
		    "Ceiling: the crossover could not be measured "
		    "(a flush_local row has no median); "
		    "flush_ceiling is %u.",
		    c->ceiling);
	else if (!c->found)
		add("ceiling",
		    "Ceiling: flushing page by page stayed cheaper "
		    "than a full flush up to 512 pages, the most "
		    "measured; flush_ceiling is %u.",
		    c->ceiling);
	else
		add("ceiling",
		    "Ceiling: flushing page by page stops paying "
		    "off at %u pages here, where a full flush "
		    "becomes cheaper; flush_ceiling is %u.",
		    c->pages, c->ceiling);
}

static void headline_shootdown(void)
{
	char a[FIGURE_MAX], b[FIGURE_MAX], target[BENCH_OTHER_TEXT_MAX];
	char params[BENCH_PARAMS_MAX];
	const char *why;
	const struct bench_result *one, *all;

	if (cpu_count < 2) {
		add("shootdown", "Shootdown: cannot be measured with one CPU.");
		return;
	}
	one = usable("shootdown", "targets=1,state=active", &why);
	if (!one) {
		add("shootdown", "Shootdown: %s.", why);
		return;
	}
	/* Which CPU the one target was: a sibling shares the TLB. */
	bench_other_describe(target);
	if (cpu_count == 2) {
		add("shootdown",
		    "Shootdown: one page to the other CPU, target %s, takes "
		    "%s (with 2 CPUs that is all of them; more "
		    "CPUs give the curve).",
		    target, cost(a, one));
		return;
	}
	ksnprintf(params, sizeof(params), "targets=%u,state=active",
		  cpu_count - 1);
	all = usable("shootdown", params, &why);
	if (all)
		add("shootdown",
		    "Shootdown: one page to 1 other CPU, target %s, takes "
		    "%s; to all %u others %s.",
		    target, cost(a, one), cpu_count - 1, cost(b, all));
	else
		add("shootdown",
		    "Shootdown: one page to 1 other CPU, target %s, takes "
		    "%s; to all %u others: %s.",
		    target, cost(a, one), cpu_count - 1, why);
}

static void headline_lazy(void)
{
	char a[FIGURE_MAX], b[FIGURE_MAX], c[FIGURE_MAX];
	const char *why;
	const struct bench_result *lazy =
		usable("idle_lazy", "lazy=skip", &why);
	const struct bench_result *eager;

	if (!lazy) {
		add("lazy", "Lazy TLB: %s.", why);
		return;
	}
	eager = usable("idle_lazy", "lazy=off", &why);
	if (!eager) {
		add("lazy",
		    "Lazy TLB: no switch with lazy=off to compare "
		    "with: %s.",
		    why);
		return;
	}
	add("lazy",
	    "Lazy TLB %s per switch to an idle thread and back "
	    "(lazy=skip %s, lazy=off %s).",
	    difference(a, lazy, eager), cost(b, lazy), cost(c, eager));
}

/* --- Where it ran ---------------------------------------------------------- */

static const char *platform_description(void)
{
	switch (platform_get()) {
	case PLATFORM_QEMU_TCG:
		return "QEMU with TCG (software emulation)";
	case PLATFORM_QEMU_KVM:
		return "QEMU with KVM (a virtual machine)";
	case PLATFORM_BOCHS:
		return "Bochs (an emulator)";
	case PLATFORM_OTHER_HYPERVISOR:
		return "a hypervisor (a virtual machine)";
	default:
		return "a real machine";
	}
}

static const char *costs_note(void)
{
	switch (platform_get()) {
	case PLATFORM_QEMU_TCG:
	case PLATFORM_BOCHS:
		return "These are emulator costs, not a real CPU's: the "
		       "emulator runs every instruction in software. Compare "
		       "ratios within one run, not times with hardware.";
	case PLATFORM_QEMU_KVM:
	case PLATFORM_OTHER_HYPERVISOR:
		return "These are a virtual machine's costs: TLB misses walk "
		       "two levels of page tables and IPIs leave the guest.";
	default:
		return "These are this machine's costs, medians of many "
		       "samples; the pages after this show every row.";
	}
}

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

static void where_it_ran(void)
{
	const struct cpu_features *f = &boot_cpu;

	add("platform", "Platform: %s, %u CPU%s, TSC %llu MHz.",
	    platform_description(), cpu_count, cpu_count == 1 ? "" : "s",
	    (unsigned long long)(tsc_hz() / 1000000));
	add("cpu", "CPU: %s family %u model %u stepping %u, \"%s\".", f->vendor,
	    f->family, f->model, f->stepping, f->brand);
	add("features",
	    "TLB: PCID %s, INVPCID %s, x2APIC %s; pcid=%s lazy=%s "
	    "flush_ceiling=%u.",
	    yes_no(f->pcid), yes_no(f->invpcid), yes_no(f->x2apic),
	    tlb_policy.pcid ? "on" : "off", tlb_lazy_names[tlb_policy.lazy],
	    tlb_policy.flush_ceiling);
}

/* --- Output -------------------------------------------------------------------- */

/*
 * A sentence on the screen, wrapped at spaces to SUMMARY_COLUMNS, its
 * continuation lines indented under its first word; returns the lines it
 * takes, and draws them only when asked (the layout counts first).
 */
static unsigned show_wrapped(const char *prefix, const char *text, bool draw)
{
	size_t indent = strlen(prefix), width = SUMMARY_COLUMNS - 1 - indent;
	const char *lead = prefix;
	unsigned lines = 0;

	while (*text) {
		size_t n = strlen(text);

		if (n > width) {
			n = width;
			while (n > 0 && text[n] != ' ')
				n--;
			if (n == 0)
				n = width;
		}
		if (draw)
			kprintf_screen("%s%.*s\n", lead, (int)n, text);
		lines++;
		text += n;
		while (*text == ' ')
			text++;
		lead = indent > 2 ? "    " : "  ";
	}
	return lines;
}

static unsigned blank_line(bool draw)
{
	if (draw)
		kprintf_screen("\n");
	return 1;
}

/*
 * The page: the title, the platform lines, the headlines, the note, the
 * footer; with blank lines between the parts when `spaced`. Returns the
 * lines it takes.
 */
static unsigned layout(bool draw, bool spaced, const char *footer)
{
	unsigned lines = 1;

	if (draw)
		kprintf_screen(
			"shootdown: what the benchmarks found (%zu rows)\n",
			bench_results_count());
	if (spaced)
		lines += blank_line(draw);
	for (size_t i = 0; i < headline_count; i++) {
		const struct headline *h = &headlines[i];
		bool note = !strcmp(h->key, "note");
		bool platform = !strcmp(h->key, "platform") ||
				!strcmp(h->key, "cpu") ||
				!strcmp(h->key, "features");

		if (spaced && (note || !strcmp(h->key, "pcid")))
			lines += blank_line(draw);
		lines += show_wrapped(platform || note ? "" : "* ", h->text,
				      draw);
	}
	if (footer) {
		if (spaced)
			lines += blank_line(draw);
		lines += show_wrapped("", footer, draw);
	}
	return lines;
}

void bench_summary_show(const char *footer)
{
	unsigned columns, rows;
	bool spaced;

	console_screen_size(&columns, &rows);
	/* Without the blank lines rather than scroll the title away (80x25
	 * text with long sentences, icount's instruction counts). */
	spaced = layout(false, true, footer) < rows;
	console_screen_clear();
	layout(true, spaced, footer);
}

void bench_summary_print(void)
{
	headline_count = 0;
	where_it_ran();
	headline_pcid();
	headline_ipc();
	headline_flush();
	headline_ceiling();
	headline_shootdown();
	headline_lazy();
	add("note", "%s", costs_note());
	for (size_t i = 0; i < headline_count; i++)
		kprintf_serial("bench: summary %s %s\n", headlines[i].key,
			       headlines[i].text);
	bench_summary_show(NULL);
}
