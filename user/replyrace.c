// SPDX-License-Identifier: MIT
/*
 * A caller killed while a server holds its call, and the server's reply
 * after that (started by tests/kernel/test_user.c). Both pin themselves
 * to CPU 0, so that the call can go the fast way when the fast path is on.
 *
 * arg, the mode:
 *   0  the caller: calls the endpoint in handle slot 0 and is killed in
 *      there, when its second thread, receiving on slot 1, gets the
 *      test's word and exits the task (status REPLYRACE_KILLED).
 *   1  the server: receives the call on slot 0, tells the test (a call
 *      on slot 1), and once answered replies to its caller, then sends
 *      the test what its reply-and-receive returned (label
 *      REPLYRACE_RESULT, words[0]) and exits. A watchdog thread sends
 *      REPLYRACE_HUNG instead if that reply-and-receive is still waiting
 *      after two seconds (the reply went somewhere, and the server went
 *      on to wait for a message).
 * The labels are the test's too (tests/kernel/test_user.c).
 */
#include "user/lib/ulib.h"

#define REPLYRACE_CALL	   1
#define REPLYRACE_TAKEN	   2
#define REPLYRACE_REPLY	   3
#define REPLYRACE_RESULT   4
#define REPLYRACE_HUNG	   5
#define REPLYRACE_KILLED   9
#define REPLYRACE_WATCH_NS 2000000000ULL
#define REPLYRACE_NAP_NS   1000000ULL
#define STACK_SIZE	   4096

static char stack[STACK_SIZE] __aligned(16);

/* Ends the task when the test says so. */
static void killer(long ep)
{
	struct ipc_message in;

	sys_ipc_recv(ep, &in);
	sys_exit(REPLYRACE_KILLED);
}

static void watchdog(long note)
{
	struct ipc_message hung = {.label = REPLYRACE_HUNG};

	/* In short naps: a kill ends the task's threads only as they
	 * return to user mode. */
	for (uint64_t slept = 0; slept < REPLYRACE_WATCH_NS;
	     slept += REPLYRACE_NAP_NS)
		sys_sleep_ns(REPLYRACE_NAP_NS);
	sys_ipc_send(note, &hung);
	sys_exit(1);
}

static int caller(void)
{
	struct ipc_message call = {.label = REPLYRACE_CALL}, in;

	if (thread_start(killer, stack, STACK_SIZE, spawned_handle(1)) < 0)
		return 2;
	sys_ipc_call(spawned_handle(0), &call, &in); /* killed in here */
	return 3;
}

static int server(void)
{
	long ep = spawned_handle(0), note = spawned_handle(1);
	struct ipc_message taken = {.label = REPLYRACE_TAKEN};
	struct ipc_message reply = {.label = REPLYRACE_REPLY, .words = {1, 2}};
	struct ipc_message result = {.label = REPLYRACE_RESULT}, in;

	if (sys_ipc_recv(ep, &in) != REPLYRACE_CALL)
		return 2;
	/* A call of our own leaves the reply we owe where it is. */
	sys_ipc_call(note, &taken, &in);
	if (thread_start(watchdog, stack, STACK_SIZE, note) < 0)
		return 3;
	result.words[0] = (uint64_t)sys_ipc_reply_recv(ep, &reply, &in);
	sys_ipc_send(note, &result);
	return 0;
}

int main(long arg)
{
	sys_set_affinity(1UL << 0);
	return arg == 0 ? caller() : server();
}
