// SPDX-License-Identifier: MIT
/*
 * An NMI that lands while its CPU holds the console lock: the handler's
 * message (trap/trap.c) goes through the console's emergency path, which
 * must not wait for the lock forever (console/console.h). If it did, the
 * NMI would never return and the run would hang here.
 */
#include "tests/ktest.h"
#include "apic/lapic.h"
#include "console/console.h"
#include "trap/trap.h"
#include "arch/x86.h"

/* Far longer than a self-NMI takes to arrive, on any machine. */
#define NMI_WAIT_SPINS 100000000L

struct nmi_wait {
	uint64_t before; /* trap_nmi_count before the NMI */
	bool returned;
};

/* Runs with the console lock held and interrupts off (console_hold). */
static void nmi_self_while_held(void *ctx)
{
	struct nmi_wait *w = ctx;

	lapic_send_ipi(lapic_id(), ICR_NMI);
	for (long spins = 0; spins < NMI_WAIT_SPINS; spins++) {
		/* Counted by the handler after its message: seeing it here,
		 * in the code the NMI interrupted, means it returned. */
		if (trap_nmi_count() != w->before) {
			w->returned = true;
			return;
		}
		cpu_relax();
	}
}

KTEST(TRAP0005, trap, "an NMI while this CPU holds the console lock returns")
{
	struct nmi_wait w = {.before = trap_nmi_count()};

	console_hold(nmi_self_while_held, &w);
	KEXPECT(w.returned, "no NMI came back within %ld spins",
		NMI_WAIT_SPINS);
}
