// SPDX-License-Identifier: MIT
/*
 * IPC ping-pong: a client sends numbered messages with SYS_IPC_CALL, a
 * server answers each with SYS_IPC_REPLY_RECV, and both check every word
 * of what they receive, so a lost, repeated or mixed-up message shows.
 *
 * arg: bits 0-3 the role, bits 4-27 the number of round trips (0: 1000),
 * bits 28-31 a CPU to run on plus one (0: anywhere), bit 32 set when an
 * endpoint handle was given at spawn (slot 0: the client's; a server given
 * one uses it instead of creating its own).
 *   role 0  both in this task: the server runs in a second thread, in the
 *           same address space; both threads on CPU 0 (the IPC fast path:
 *           a direct switch each way)
 *   role 3  the same with the server on CPU 1 (cross-CPU wake-ups)
 *   role 4  role 0, with handles passed both ways now and then: every
 *           fourth call carries one (and so goes the general way, to a
 *           server waiting on the fast one), and the reply to the call
 *           after it carries one (to a client waiting on the fast path);
 *           each side checks what it got and closes it
 *   role 1  server: creates an endpoint (or uses the one given) and
 *           answers until a client says stop
 *   role 2  client of the server at the endpoint given
 *
 * The client prints "pingpong: N round trips ok" (with the mean time of a
 * round trip) or the first mismatch; the exit status is 0 or 1.
 */
#include "user/lib/ulib.h"

#define ROLE_BOTH	0
#define ROLE_SERVER	1
#define ROLE_CLIENT	2
#define ROLE_BOTH_SPLIT 3
#define ROLE_BOTH_MIXED 4
#define DEFAULT_ROUNDS	1000
#define ARG_GIVEN_SHIFT 32 /* an endpoint handle in spawn slot 0 */

#define LABEL_PING 1
#define LABEL_PONG 2
#define LABEL_STOP 3 /* sent, not called: the server ends without replying */
#define LABEL_BAD  4 /* the server's answer to a message it did not expect */

#define MIX	  0x9e3779b97f4a7c15UL /* spreads seq over all 64 bits */
#define PING_MARK 0x50494e47UL	       /* "PING" */
#define PONG_MARK 0x504f4e47UL	       /* "PONG" */

#define SERVER_WAIT_NS 5000000000L

/* Role 4: which rounds pass a handle, and the rights it is passed with. */
#define GRANT_EVERY	  4
#define CALL_GRANT_ROUND  2 /* seq % GRANT_EVERY: the call carries one */
#define REPLY_GRANT_ROUND 3 /* seq % GRANT_EVERY: the reply carries one */
#define CALL_RIGHTS	  SYS_RIGHT_SEND
#define REPLY_RIGHTS	  SYS_RIGHT_RECEIVE

static bool mixed;     /* role 4 */
static long shared_ep; /* role 4: the endpoint whose handles are passed */

static bool call_grants(unsigned long seq)
{
	return mixed && seq % GRANT_EVERY == CALL_GRANT_ROUND;
}

static bool reply_grants(unsigned long seq)
{
	return mixed && seq % GRANT_EVERY == REPLY_GRANT_ROUND;
}

/* Makes m carry a handle to shared_ep with rights (words 0 and 1). */
static void grant(struct ipc_message *m, uint64_t rights)
{
	m->label |= SYS_IPC_LABEL_HANDLE;
	m->words[0] = (uint64_t)shared_ep;
	m->words[1] = rights;
}

/*
 * A message that carried a handle: it must name an endpoint with exactly
 * the rights sent; then it is closed. Returns whether all held.
 */
static bool granted(const char *who, unsigned long seq,
		    const struct ipc_message *m, uint64_t rights)
{
	long h = (long)m->words[0];
	long info = sys_handle_info(h);
	long want = (long)SYS_HANDLE_TYPE_ENDPOINT
			    << SYS_HANDLE_INFO_TYPE_SHIFT |
		    (long)rights;

	if (info != want || m->words[1] != rights || sys_handle_close(h)) {
		printf("pingpong: %s: round %lu: the handle passed (%ld) has "
		       "info %#lx and rights word %#lx, expected %#lx\n",
		       who, seq, h, info, m->words[1], want);
		return false;
	}
	return true;
}

/* What the client sends in round seq (from 1). */
static void ping(struct ipc_message *m, unsigned long seq)
{
	m->label = LABEL_PING;
	m->words[0] = seq;
	m->words[1] = ~seq;
	m->words[2] = seq * MIX;
	m->words[3] = PING_MARK;
	if (call_grants(seq))
		grant(m, CALL_RIGHTS);
}

/* What the server answers to it. */
static void pong(struct ipc_message *m, unsigned long seq)
{
	m->label = LABEL_PONG;
	m->words[0] = seq;
	m->words[1] = seq + 1;
	m->words[2] = ~(seq * MIX);
	m->words[3] = PONG_MARK;
	if (reply_grants(seq))
		grant(m, REPLY_RIGHTS);
}

static bool same(const struct ipc_message *a, const struct ipc_message *b)
{
	if (a->label != b->label)
		return false;
	for (int i = 0; i < SYS_IPC_WORDS; i++) {
		if (a->words[i] != b->words[i])
			return false;
	}
	return true;
}

/*
 * in is what round seq should have brought (want). A passed handle is
 * checked and closed, and its words then compared as sent.
 */
static bool arrived(const char *who, unsigned long seq, struct ipc_message *in,
		    struct ipc_message *want, uint64_t rights)
{
	if ((in->label & SYS_IPC_LABEL_HANDLE) &&
	    (want->label & SYS_IPC_LABEL_HANDLE)) {
		if (!granted(who, seq, in, rights))
			return false;
		in->words[0] = want->words[0];
		in->words[1] = want->words[1];
	}
	return same(in, want);
}

static void mismatch(const char *who, unsigned long seq,
		     const struct ipc_message *got,
		     const struct ipc_message *want)
{
	printf("pingpong: %s: round %lu: got label %lu words %#lx %#lx %#lx "
	       "%#lx, expected label %lu words %#lx %#lx %#lx %#lx\n",
	       who, seq, got->label, got->words[0], got->words[1],
	       got->words[2], got->words[3], want->label, want->words[0],
	       want->words[1], want->words[2], want->words[3]);
}

/*
 * Answers pings on ep until a stop message. Returns the number of pings
 * answered, or -1 after an error or an unexpected message.
 */
static long serve(long ep)
{
	struct ipc_message in, out, want;
	unsigned long seq = 1;
	bool bad = false;
	long r = sys_ipc_recv(ep, &in);

	for (;;) {
		if (r < 0) {
			printf("pingpong: server: receive on endpoint %ld "
			       "failed (error %ld)\n",
			       ep, -r);
			return -1;
		}
		if (in.label == LABEL_STOP)
			break;
		ping(&want, seq);
		if (arrived("server", seq, &in, &want, CALL_RIGHTS)) {
			pong(&out, seq++);
		} else {
			/* Answer anyway: the caller waits for a reply. */
			if (!bad)
				mismatch("server", seq, &in, &want);
			bad = true;
			out = (struct ipc_message){.label = LABEL_BAD};
		}
		r = sys_ipc_reply_recv(ep, &out, &in);
	}
	return bad ? -1 : (long)(seq - 1);
}

static void send_stop(long ep)
{
	struct ipc_message stop = {.label = LABEL_STOP};

	sys_ipc_send(ep, &stop);
}

static int client(long ep, unsigned long rounds)
{
	struct ipc_message out, in, want;
	long start = sys_time_ns(), r;

	for (unsigned long seq = 1; seq <= rounds; seq++) {
		ping(&out, seq);
		r = sys_ipc_call(ep, &out, &in);
		if (r < 0) {
			printf("pingpong: client: call %lu on endpoint %ld "
			       "failed (error %ld)\n",
			       seq, ep, -r);
			send_stop(ep);
			return 1;
		}
		pong(&want, seq);
		if (!arrived("client", seq, &in, &want, REPLY_RIGHTS)) {
			mismatch("client", seq, &in, &want);
			send_stop(ep);
			return 1;
		}
	}
	r = sys_time_ns() - start;
	send_stop(ep);
	printf("pingpong: %lu round trips ok (%ld ns each)\n", rounds,
	       r / (long)rounds);
	return 0;
}

/* --- Role 0: client and server threads in one task --------------------- */

static char server_stack[16384] __aligned(16);
static long server_result;
static bool server_done;
static unsigned long server_cpu_mask;

static void server_thread(long ep)
{
	sys_set_affinity(server_cpu_mask);
	server_result = serve(ep);
	/* Release: the result is visible before the flag. */
	__atomic_store_n(&server_done, true, __ATOMIC_RELEASE);
}

static int both(unsigned long rounds, unsigned server_cpu)
{
	long ep = sys_endpoint_create(), t, start;
	int status;

	shared_ep = ep;

	/* Pin both threads: the client here, the server on server_cpu. */
	sys_set_affinity(1UL << 0);
	server_cpu_mask = 1UL << server_cpu;

	if (ep < 0) {
		printf("pingpong: SYS_ENDPOINT_CREATE failed (error %ld)\n",
		       -ep);
		return 1;
	}
	t = thread_start(server_thread, server_stack, sizeof(server_stack), ep);
	if (t < 0) {
		printf("pingpong: SYS_THREAD_CREATE failed (error %ld)\n", -t);
		return 1;
	}
	status = client(ep, rounds);
	/* Ending the task would end the server thread: let it finish. */
	start = sys_time_ns();
	while (!__atomic_load_n(&server_done, __ATOMIC_ACQUIRE)) {
		if (sys_time_ns() - start > SERVER_WAIT_NS) {
			printf("pingpong: the server thread did not end\n");
			return 1;
		}
		sys_yield();
	}
	if (server_result < 0)
		return 1;
	return status;
}

int main(long arg)
{
	unsigned role = (unsigned)(arg & 0xf);
	unsigned long rounds = ((unsigned long)arg >> 4) & 0xffffff;
	unsigned cpu = (unsigned)(((unsigned long)arg >> 28) & 0xf);
	long ep = ((unsigned long)arg >> ARG_GIVEN_SHIFT & 1)
			  ? spawned_handle(0)
			  : 0,
	     served;

	rounds = rounds ? rounds : DEFAULT_ROUNDS;
	if (cpu)
		sys_set_affinity(1UL << (cpu - 1));
	switch (role) {
	case ROLE_BOTH:
		return both(rounds, 0);
	case ROLE_BOTH_SPLIT:
		return both(rounds, 1);
	case ROLE_BOTH_MIXED:
		mixed = true;
		return both(rounds, 0);
	case ROLE_SERVER:
		if (ep)
			return serve(ep) < 0; /* an endpoint it was given */
		ep = sys_endpoint_create();
		if (ep < 0) {
			printf("pingpong: SYS_ENDPOINT_CREATE failed (error "
			       "%ld)\n",
			       -ep);
			return 1;
		}
		printf("pingpong: server on endpoint handle %ld\n", ep);
		served = serve(ep);
		if (served >= 0)
			printf("pingpong: server answered %ld pings\n", served);
		return served < 0;
	case ROLE_CLIENT:
		return client(ep, rounds);
	default:
		printf("pingpong: unknown role %u (0 both, 1 server, 2 "
		       "client, 3 both on two CPUs, 4 both passing "
		       "handles)\n",
		       role);
		return 2;
	}
}
