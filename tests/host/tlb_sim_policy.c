// SPDX-License-Identifier: MIT
/*
 * Policies as the kernel command line spells them ("pcid=off lazy=ipi"),
 * so a policy set reads like a boot line and a lab can try any mix with
 * tlb_sim -p. Words not given keep the kernel's defaults, with PCID and
 * INVPCID present (the simulated CPU has both); INVPCID is used only with
 * PCID, as at boot (mm/tlb_hw.c).
 */
#include "tests/host/tlb_sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum option {
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
	OPT_COUNT
};

static const char *const on_off[] = {"off", "on", NULL};
static const char *const flush_info_words[] = {"percpu", "stack", NULL};
static const char *const mask_words[] = {"skip", "touch", NULL};
static const char *const lazy_mm_words[] = {"shootdown", "refcount", NULL};

static const struct {
	const char *name;
	const char *const *words; /* NULL: a number from min to max */
	unsigned min, max;
} options[OPT_COUNT] = {
	[OPT_PCID] = {"pcid", on_off, 0, 0},
	[OPT_INVPCID] = {"invpcid", on_off, 0, 0},
	[OPT_ASID_SLOTS] = {"asid_slots", NULL, 1, TLB_ASID_SLOTS_MAX},
	[OPT_LAZY] = {"lazy", tlb_lazy_names, 0, 0},
	[OPT_LAZY_BACKOFF] = {"lazy_backoff", NULL, 0, TLB_LAZY_BACKOFF_MAX},
	[OPT_FLUSH_CEILING] = {"flush_ceiling", NULL, 0, TLB_FLUSH_CEILING_MAX},
	[OPT_FLUSH_INFO] = {"flush_info", flush_info_words, 0, 0},
	[OPT_FLUSH_CONCURRENT] = {"flush_concurrent", on_off, 0, 0},
	[OPT_KERNEL_MM_MASK] = {"kernel_mm_mask", mask_words, 0, 0},
	[OPT_LAZY_MM] = {"lazy_mm", lazy_mm_words, 0, 0},
};

static void set(struct tlb_policy *p, enum option o, unsigned v)
{
	switch (o) {
	case OPT_PCID:
		p->pcid = v;
		break;
	case OPT_INVPCID:
		p->invpcid = v;
		break;
	case OPT_ASID_SLOTS:
		p->asid_slots = v;
		break;
	case OPT_LAZY:
		p->lazy = (enum tlb_lazy_policy)v;
		break;
	case OPT_LAZY_BACKOFF:
		p->lazy_backoff = v;
		break;
	case OPT_FLUSH_CEILING:
		p->flush_ceiling = v;
		break;
	case OPT_FLUSH_INFO:
		p->flush_info_on_stack = v;
		break;
	case OPT_FLUSH_CONCURRENT:
		p->flush_concurrent = v;
		break;
	case OPT_KERNEL_MM_MASK:
		p->kernel_mm_mask_touch = v;
		break;
	case OPT_LAZY_MM:
		p->lazy_mm = (enum tlb_lazy_mm)v;
		break;
	case OPT_COUNT:
		break;
	}
}

static unsigned get(const struct tlb_policy *p, enum option o)
{
	const unsigned values[OPT_COUNT] = {
		[OPT_PCID] = p->pcid,
		[OPT_INVPCID] = p->invpcid,
		[OPT_ASID_SLOTS] = p->asid_slots,
		[OPT_LAZY] = p->lazy,
		[OPT_LAZY_BACKOFF] = p->lazy_backoff,
		[OPT_FLUSH_CEILING] = p->flush_ceiling,
		[OPT_FLUSH_INFO] = p->flush_info_on_stack,
		[OPT_FLUSH_CONCURRENT] = p->flush_concurrent,
		[OPT_KERNEL_MM_MASK] = p->kernel_mm_mask_touch,
		[OPT_LAZY_MM] = p->lazy_mm,
	};

	return values[o];
}

/* The value of one option word, or false. */
static bool parse_value(enum option o, const char *s, size_t len, unsigned *v)
{
	char *end;
	unsigned long n;

	if (options[o].words) {
		for (unsigned i = 0; options[o].words[i]; i++) {
			if (strlen(options[o].words[i]) == len &&
			    !strncmp(options[o].words[i], s, len)) {
				*v = i;
				return true;
			}
		}
		return false;
	}
	n = strtoul(s, &end, 10);
	*v = (unsigned)n;
	return end == s + len && len && n >= options[o].min &&
	       n <= options[o].max;
}

bool policy_parse(const char *text, struct tlb_policy *p, char *err,
		  size_t size)
{
	*p = (struct tlb_policy){
		.pcid = true,
		.invpcid = true,
		.asid_slots = TLB_ASID_SLOTS_DEFAULT,
		.lazy = TLB_LAZY_SKIP,
		.lazy_backoff = TLB_LAZY_BACKOFF_DEFAULT,
		.flush_ceiling = TLB_FLUSH_CEILING_DEFAULT,
		.flush_concurrent = true,
	};
	for (text += strspn(text, " "); *text; text += strspn(text, " ")) {
		size_t len = strcspn(text, " ");
		const char *eq = memchr(text, '=', len);
		unsigned o, v;

		for (o = 0; eq && o < OPT_COUNT; o++) {
			if (strlen(options[o].name) == (size_t)(eq - text) &&
			    !strncmp(options[o].name, text,
				     (size_t)(eq - text)))
				break;
		}
		if (!eq || o == OPT_COUNT ||
		    !parse_value((enum option)o, eq + 1,
				 len - (size_t)(eq - text) - 1, &v)) {
			snprintf(err, size, "bad option '%.*s'", (int)len,
				 text);
			return false;
		}
		set(p, (enum option)o, v);
		text += len;
	}
	p->invpcid = p->invpcid && p->pcid;
	return true;
}

const char *policy_print(const struct tlb_policy *p, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned o = 0; o < OPT_COUNT && used < size; o++) {
		unsigned v = get(p, (enum option)o);

		if (options[o].words)
			used += (size_t)snprintf(buf + used, size - used,
						 "%s%s=%s", o ? " " : "",
						 options[o].name,
						 options[o].words[v]);
		else
			used += (size_t)snprintf(buf + used, size - used,
						 "%s%s=%u", o ? " " : "",
						 options[o].name, v);
	}
	return buf;
}
