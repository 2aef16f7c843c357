// SPDX-License-Identifier: MIT
/*
 * tlb_bug=ack_before_flush: every target acknowledges the request and only
 * then flushes. The flusher goes on, and frees pages, while targets may
 * still use the old translations. Only the injection kernel (make inject)
 * and the simulator build this file: the default kernel's switch and timer
 * tick reach none of it (mm/tlb.h).
 *
 * It is built from the generic calls alone (smp/call.h has no such mode).
 * The flusher makes a waited call of ack_here. Each target copies the
 * request and returns, which is its acknowledgement. So the flusher does
 * wait, as the correct protocol does, but for "read", not for "done": the
 * mistake the name says. It is not no_wait, where the flusher waits for
 * nothing and its next request overwrites one still unread.
 *
 * The copy is the target's own (tlb_cpu.acked). So the request, per CPU or
 * on the flusher's stack, is read only while the flusher waits, as without
 * the bug. The flusher's own CPU is no target: it flushes at once.
 *
 * When a target flushes what it acknowledged:
 *   - a user-range request (flush_tlb_mm_range): at its next TLB event,
 *     whichever comes first. That is the next request it acknowledges, its
 *     next switch_mm_irqs_off (any thread switch), its next timer tick
 *     (tlb_timer_tick), or a teardown's shootdown. So the old translation
 *     stays usable for up to a time slice after the flusher returned and
 *     freed the page. That is long enough for a reader on the target to
 *     use it on any emulator. A flush only one call IPI later (a second,
 *     unwaited call) left a window that TCG seldom ran a reader in
 *     (docs/tlb-bugs.md).
 *     The bound keeps it a flush done late, never one lost. A CPU is stale
 *     for one tick at most, and never across a change of address space
 *     (switch_mm_irqs_off flushes first). So the mm a held request names is
 *     still loaded, or not loaded here at all, when it runs.
 *   - a kernel-range request (flush_tlb_kernel_range): by a second call,
 *     unwaited, right after the acknowledgements (or earlier, at one of
 *     the events above). That is "later", but only a call IPI later.
 *     Kernel stacks are freed through this path. A CPU that kept a freed
 *     stack's translation for a tick would write a new thread's first
 *     frame (thread_create, on the creating CPU, through the reused stack
 *     address) into the old stack's freed frame. Kernel memory would be
 *     corrupted at random, a hang more likely than a verdict.
 *
 * It holds single requests only: flush_tlb_mms goes space by space under
 * it.
 */
#include "mm/tlb_bug.h"
#include "mm/tlb.h"
#include "mm/tlb_hw.h"
#include "sync/shared.h"

/* What ack_here is given. */
struct tlb_ack_call {
	void (*handler)(void *arg);
	const tlb_flush_request_placed *request;
};

static void flush_acked_here(void *arg)
{
	struct tlb_cpu *c = tlb_hw_cpu_state();

	(void)arg;
	if (!c->acked_held) /* flushed already, at an earlier event */
		return;
	c->acked_held = false;
	c->acked_handler(&c->acked);
}

static void ack_here(void *arg)
{
	const struct tlb_ack_call *call = arg;
	struct tlb_cpu *c = tlb_hw_cpu_state();

	/* One held at a time: an older one is flushed now (its next TLB
	 * event), early but never wrongly. */
	flush_acked_here(NULL);
	shared_read(&c->acked, call->request, sizeof(c->acked));
	if (c->acked.sender == tlb_hw_cpu()) { /* the flusher: not held */
		call->handler(&c->acked);
		return;
	}
	c->acked_handler = call->handler;
	c->acked_held = true;
}

void tlb_ack_flush_held(void)
{
	flush_acked_here(NULL);
}

void tlb_ack_call(const struct cpumask *targets, void (*handler)(void *),
		  void *arg)
{
	const tlb_flush_request_placed *placed = arg;
	struct tlb_flush_request r;

	/* Our own request, read as the targets read it. */
	shared_read(&r, placed, sizeof(r));
	tlb_hw_call(targets, ack_here, &(struct tlb_ack_call){handler, placed},
		    TLB_HW_WAIT);
	if (!r.mm) /* a kernel range (above): flushed a call later */
		tlb_hw_call(targets, flush_acked_here, NULL, TLB_HW_NO_WAIT);
}
