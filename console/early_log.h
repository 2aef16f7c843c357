/* SPDX-License-Identifier: MIT */
/*
 * The early log: what was meant for the screen while it was not drawing,
 * kept to be drawn when it does (console/console.c). A ring: past
 * EARLY_LOG_BYTES the oldest bytes go, and the drain says how many. A
 * normal boot's lines up to the memory map take some 4 KiB. Pure logic,
 * tested on the host (tests/host/test_early_log.c); the caller serialises.
 */
#ifndef CONSOLE_EARLY_LOG_H
#define CONSOLE_EARLY_LOG_H

#include "lib/types.h"

#define EARLY_LOG_BYTES 16384

struct early_log {
	char bytes[EARLY_LOG_BYTES];
	uint64_t written; /* bytes kept since the last drain */
};

void early_log_keep(struct early_log *log, const char *s, size_t n);

/* Empties the log without reading it. */
void early_log_clear(struct early_log *log);

/*
 * Hands the kept text, oldest first, to out (in one or more pieces), then
 * empties the log. When bytes were lost, out first gets a line
 * "... N bytes lost", and the text resumes at the first whole line kept
 * (N counts the partial line too).
 */
void early_log_drain(struct early_log *log,
		     void (*out)(const char *s, size_t n));

#endif
