// SPDX-License-Identifier: MIT
/*
 * A first measurement, printed at boot: how long a cross-CPU call takes,
 * from the boot CPU to each other CPU and back (send the request and its
 * IPI, the target runs an empty function and clears the request, the boot
 * CPU sees it). This is the floor under every TLB shootdown.
 *
 * Under an emulator these are emulator costs, not hardware costs; compare
 * CPUs of one run with each other, not runs on different hosts.
 */
#include "smp/ipi_latency.h"
#include "apic/tsc.h"
#include "kernel/kprintf.h"
#include "smp/call.h"
#include "smp/percpu.h"

#define WARMUP_CALLS 4
#define SAMPLES	     31 /* odd: the median is one sample */

static void nothing(void *arg)
{
	(void)arg;
}

static void sort(uint64_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint64_t key = v[i];
		size_t j = i;

		for (; j && v[j - 1] > key; j--)
			v[j] = v[j - 1];
		v[j] = key;
	}
}

void smp_print_ipi_latency(void)
{
	uint64_t samples[SAMPLES];

	if (cpu_count < 2)
		return;
	kprintf("ipi: round trip from CPU 0 (cycles; ns), median [min p10 "
		"p90], %d samples\n",
		SAMPLES);
	for (unsigned cpu = 1; cpu < cpu_count; cpu++) {
		for (int i = 0; i < WARMUP_CALLS; i++)
			smp_call_function_single(cpu, nothing, NULL,
						 SMP_CALL_WAIT);
		for (int i = 0; i < SAMPLES; i++) {
			uint64_t start = tsc_read_ordered();

			smp_call_function_single(cpu, nothing, NULL,
						 SMP_CALL_WAIT);
			samples[i] = tsc_read_ordered() - start;
		}
		sort(samples, SAMPLES);
		kprintf("ipi: cpu %u apic %u: %llu cycles %llu ns [%llu %llu "
			"%llu]\n",
			cpu, cpus[cpu]->apic_id,
			(unsigned long long)samples[SAMPLES / 2],
			(unsigned long long)tsc_to_ns(samples[SAMPLES / 2]),
			(unsigned long long)samples[0],
			(unsigned long long)samples[SAMPLES / 10],
			(unsigned long long)
				samples[SAMPLES - 1 - SAMPLES / 10]);
	}
}
