/* SPDX-License-Identifier: MIT */
/* The boot-time measurement of cross-CPU call round trips. */
#ifndef SMP_IPI_LATENCY_H
#define SMP_IPI_LATENCY_H

/* Prints the round trip from this (the boot) CPU to every other CPU. */
void smp_print_ipi_latency(void);

#endif
