/* SPDX-License-Identifier: MIT */
/*
 * Deliberate bugs, for the tests and labs that must catch them.
 *
 * A subsystem whose protocol the tests break on purpose has one option,
 * `<subsystem>_bug=` (tlb_bug=, ipc_bug=, call_bug=), whose first word is
 * `none`, and a variable `<subsystem>_bug_choice` holding the word's index.
 * Every place that breaks the protocol asks INJECTED(subsystem, BUG), so
 * `grep -rn INJECTED` finds them all.
 *
 * The checks exist only in the injection kernel (make inject, built with
 * INJECT_BUILT=1 in build/inject/). In the default kernel INJECTED() is a
 * constant false: the compiler still reads the check, then drops it, so no
 * switch, timer tick, cross-CPU call or IPC pays for a bug it cannot have.
 * There the bug options accept only `none`: the command-line parser knows
 * them by their name and refuses the rest with a message that names `make
 * inject`.
 *
 * The injection kernel also keeps the grade's records of what each
 * benchmark sample did (bench/probe.h) and of how each AP was started
 * (apic/startup_probe.h), behind `if (INJECT_BUILT)`: the default kernel
 * measures and starts its CPUs without them.
 */
#ifndef LIB_INJECT_H
#define LIB_INJECT_H

#ifndef INJECT_BUILT
#define INJECT_BUILT 0
#endif

#define INJECTED(subsystem, bug) \
	(INJECT_BUILT && __builtin_expect((subsystem##_bug_choice) == (bug), 0))

#endif
