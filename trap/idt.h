/* SPDX-License-Identifier: MIT */
/* The interrupt descriptor table, shared by all CPUs. */
#ifndef TRAP_IDT_H
#define TRAP_IDT_H

/* Fills the IDT (once) and loads it on this CPU. */
void idt_load(void);

#endif
