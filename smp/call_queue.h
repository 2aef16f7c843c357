/* SPDX-License-Identifier: MIT */
/*
 * The request queues behind smp_call_function_many (smp/call_queue.c): what
 * the kernel glue (smp/call.c) and the TLB simulator see of them.
 */
#ifndef SMP_CALL_QUEUE_H
#define SMP_CALL_QUEUE_H

#include "lib/types.h"
#include "smp/call.h"
#include "sync/shared.h"

/*
 * One request, in the sender's slot for one target. fn, arg and next are
 * written by the sender before the push and read by the target after it
 * takes the list; pending is set by the sender, cleared by the target.
 * Each slot is a cache line of its own.
 */
struct call_request {
	SHARED(smp_call_fn) fn;
	SHARED(void *) arg;
	SHARED(uint32_t) pending; /* set by the sender, cleared by the target */
	SHARED(struct call_request *) next; /* in the target's queue */
} __aligned(64);

/* The call IPI's handler: runs every request queued for this CPU. */
void call_queue_irq(void);
/* Forgets every queued request (the simulator, between runs). */
void call_queue_reset(void);

#endif
