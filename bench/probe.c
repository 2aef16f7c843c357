// SPDX-License-Identifier: MIT
/*
 * The grade's record of each sample of a row (bench/probe.h): the
 * injection kernel's alone. Only the boot thread runs benchmarks, so the
 * record needs no lock.
 */
#include "bench/probe.h"
#include "arch/x86.h"
#include "console/kprintf.h"
#include "lib/format.h"
#include "lib/string.h"

/* More events than a sample of any benchmark here records. */
#define PROBE_EVENTS_MAX 8
#define PROBE_SHAPE_MAX	 96
/* An event that is a clock read, not work over some pages. */
#define PROBE_CLOCK UINT32_MAX

struct probe_event {
	uint32_t pages; /* PROBE_CLOCK: a clock read */
	bool irqs_on;
};

struct probe_sample {
	size_t count;
	bool overflow; /* more events than PROBE_EVENTS_MAX */
	struct probe_event events[PROBE_EVENTS_MAX];
};

static struct {
	bool recording; /* inside a sample */
	bool worked;	/* some sample of the row reported work */
	size_t samples;
	size_t unlike;
	struct probe_sample now, first;
} probe;

void bench_probe_row_begin(void)
{
	memset(&probe, 0, sizeof(probe));
}

void bench_probe_sample_begin(void)
{
	probe.recording = true;
	memset(&probe.now, 0, sizeof(probe.now));
}

static void note(uint32_t pages)
{
	struct probe_sample *s = &probe.now;

	if (!probe.recording)
		return;
	if (s->count == PROBE_EVENTS_MAX) {
		s->overflow = true;
		return;
	}
	s->events[s->count].pages = pages;
	s->events[s->count].irqs_on = irqs_enabled();
	s->count++;
}

void bench_probe_clock(void)
{
	note(PROBE_CLOCK);
}

void bench_probe_work(unsigned pages)
{
	note(pages);
	probe.worked = probe.worked || probe.recording;
}

static bool same_sample(const struct probe_sample *a,
			const struct probe_sample *b)
{
	if (a->count != b->count || a->overflow != b->overflow)
		return false;
	for (size_t i = 0; i < a->count; i++)
		if (a->events[i].pages != b->events[i].pages ||
		    a->events[i].irqs_on != b->events[i].irqs_on)
			return false;
	return true;
}

void bench_probe_sample_end(void)
{
	if (!probe.recording)
		return;
	probe.recording = false;
	if (!probe.samples)
		probe.first = probe.now;
	else if (!same_sample(&probe.first, &probe.now))
		probe.unlike++;
	probe.samples++;
}

/* s as bench/probe.h spells a shape: "4[4]". */
static void format_shape(const struct probe_sample *s, char *buf, size_t size)
{
	size_t at = 0;
	unsigned clocks = 0;
	bool after_pass = false;

	buf[0] = '\0';
	for (size_t i = 0; i < s->count && at < size; i++) {
		const struct probe_event *e = &s->events[i];

		if (e->pages == PROBE_CLOCK) {
			at += ksnprintf(buf + at, size - at, "%s",
					clocks++ % 2 ? "]" : "[");
			after_pass = false;
			continue;
		}
		at += ksnprintf(buf + at, size - at, "%s%u%s",
				after_pass ? "," : "", e->pages,
				e->irqs_on ? "i" : "");
		after_pass = true;
	}
	if (s->overflow && at < size)
		ksnprintf(buf + at, size - at, "...");
	if (!buf[0])
		strlcpy(buf, "-", size);
}

void bench_probe_row_end(const char *bench, const char *params, unsigned batch)
{
	char shape[PROBE_SHAPE_MAX];

	probe.recording = false;
	if (!probe.worked)
		return;
	format_shape(&probe.first, shape, sizeof(shape));
	kprintf("bench: probe %s %s batch=%u shape=%s samples=%zu unlike=%zu\n",
		bench, params, batch, shape, probe.samples, probe.unlike);
}
