// SPDX-License-Identifier: MIT
#include "console/early_log.h"
#include "lib/format.h"

void early_log_keep(struct early_log *log, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		log->bytes[log->written++ % EARLY_LOG_BYTES] = s[i];
}

void early_log_clear(struct early_log *log)
{
	log->written = 0;
}

void early_log_drain(struct early_log *log,
		     void (*out)(const char *s, size_t n))
{
	uint64_t kept = MIN(log->written, (uint64_t)EARLY_LOG_BYTES);
	uint64_t first = log->written - kept;
	char line[64];
	int len;

	if (first) {
		/* From the first whole line on: the partial one is lost too. */
		while (kept && log->bytes[first % EARLY_LOG_BYTES] != '\n') {
			first++;
			kept--;
		}
		if (kept) {
			first++;
			kept--;
		}
		len = ksnprintf(line, sizeof(line), "... %llu bytes lost\n",
				(unsigned long long)first);
		out(line, (size_t)len);
	}
	while (kept) {
		size_t at = first % EARLY_LOG_BYTES;
		size_t piece = MIN(kept, (uint64_t)(EARLY_LOG_BYTES - at));

		out(log->bytes + at, piece);
		first += piece;
		kept -= piece;
	}
	log->written = 0;
}
