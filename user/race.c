// SPDX-License-Identifier: MIT
/*
 * A fuzzer that races (started by tests/kernel/test_race.c). Where fuzz.c
 * makes one call at a time from one thread, this one has several tasks,
 * each with several threads on every CPU, make system calls drawn at
 * random on resources they track (handles, endpoints, mappings, shared
 * objects, threads, children), while other threads close the handles,
 * revoke the objects, unmap the pages and end the tasks those calls use.
 * The kernel must answer every call with a result or one of its errors,
 * never hand out memory that is not the fuzzer's (a page that reads as
 * anything but what the fuzzer wrote, or zero, is a stale mapping or a
 * frame reused too early), keep every IPC message whole, and neither
 * crash nor hang.
 *
 * arg bits 0-3, the role:
 *   0  the conductor (started by the kernel test): one thread per CPU
 *      spawns a worker task, waits for it and spawns the next, for bits
 *      12-27 milliseconds in all; then it prints a summary and exits 0,
 *      or 1 if any task found the kernel wrong.
 *   1  a worker: a server thread per CPU answers IPC on the endpoint the
 *      conductor shares with every worker, two fuzzing threads per CPU
 *      draw calls (fuzz_op), and the main thread, for a lifetime of bits
 *      12-27 milliseconds, closes, revokes and unmaps under them, then
 *      ends the task: mostly by exit, now and then by a fault of its own.
 *   2  a child a worker spawned: maps, writes and reads a few pages, the
 *      shared object it was given too, and exits (or faults).
 * Bits 4-11: the number of CPUs; bits 32-62: the seed.
 *
 * A worker ends with 0 (its main thread's exit), STATUS_EXITED (a fuzzing
 * thread's exit), SYS_STATUS_FAULT (killed for a bad access of its own:
 * touching a page another thread unmapped or revoked is one) or
 * STATUS_WRONG, after printing what the kernel got wrong. Only the last is
 * a failure. The counts go to a page every task of the run maps (struct
 * race_stats), which the conductor prints.
 */
#include "user/lib/ulib.h"

#define ROLE_CONDUCTOR 0
#define ROLE_WORKER    1
#define ROLE_CHILD     2

#define STATUS_EXITED 3
#define STATUS_WRONG  99

#define PAGE	     4096UL
#define MAX_CPUS     16
#define STACK_SIZE   8192
#define STACKS	     32 /* per task; each used by one thread, once */
#define SLOTS	     16 /* mapping slots of the window */
#define SLOT_PAGES   4
#define WINDOW_AT    0x600000000000UL
#define STATS_AT     0x700000000000UL
#define SHM_PAGES    SLOT_PAGES
#define WORKER_SLOTS 8
#define CHILD_OPS    24

/* Spawned handles of a worker: what the conductor passes. */
#define SPAWNED_STATS	 0
#define SPAWNED_ENDPOINT 1
#define SPAWNED_SHM	 2

/*
 * What the fuzzer writes: the signature in the high half, anything in the
 * low one. A page reads as words of that form or zero, or it is not ours.
 */
#define SIGNATURE	   0x5eedf022UL
#define SIGNED(x)	   (SIGNATURE << 32 | ((x)&0xffffffffUL))
#define HEAP_POISON_WORD   0x6b6b6b6b6b6b6b6bUL /* mm/heap.h's, eight times */
#define MESSAGE_KEY	   0x9e3779b97f4a7c15UL
#define LABEL_CALL	   1 /* a call: the server replies */
#define LABEL_GRANT_RIGHTS 0x7fUL

enum counter {
	C_CALLS,
	C_ERRORS,
	C_IPC_ROUND_TRIPS,
	C_IPC_RECEIVED,
	C_HANDLES_RECEIVED,
	C_MAPS,
	C_UNMAPS,
	C_REVOKES,
	C_CLOSES,
	C_PAGES_CHECKED,
	C_THREADS,
	C_CHILDREN,
	C_WORKERS,
	C_WORKERS_FAULTED,
	C_WORKERS_EXITED,
	C_WRONG,
	COUNTERS
};

static const char *const counter_names[COUNTERS] = {
	[C_CALLS] = "calls",
	[C_ERRORS] = "errors",
	[C_IPC_ROUND_TRIPS] = "ipc-round-trips",
	[C_IPC_RECEIVED] = "ipc-received",
	[C_HANDLES_RECEIVED] = "handles-received",
	[C_MAPS] = "maps",
	[C_UNMAPS] = "unmaps",
	[C_REVOKES] = "revokes",
	[C_CLOSES] = "closes",
	[C_PAGES_CHECKED] = "pages-checked",
	[C_THREADS] = "threads",
	[C_CHILDREN] = "children",
	[C_WORKERS] = "workers",
	[C_WORKERS_FAULTED] = "faulted",
	[C_WORKERS_EXITED] = "exited-by-a-thread",
	[C_WRONG] = "wrong",
};

struct race_stats {
	uint64_t count[COUNTERS];
};

/* The task's state, shared by its threads. */
static struct race_stats *stats;
static unsigned cpus;
static uint64_t seed, deadline_ns, tag;
static long handles[SYS_HANDLE_SLOTS]; /* by slot; 0: none known */
static long children[8];	       /* ids to wait for; 0: none */
static char stacks[STACKS][STACK_SIZE] __aligned(16);
static unsigned stacks_used;

/* Marsaglia's xorshift64, one state per thread. */
static uint64_t random64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t below(uint64_t *s, uint64_t n)
{
	return random64(s) % n;
}

static void count(enum counter c, uint64_t n)
{
	if (stats)
		__atomic_fetch_add(&stats->count[c], n, __ATOMIC_RELAXED);
}

/* The kernel got something wrong: say what, and end the task with it. */
static __noreturn void wrong(const char *what, long a, long b)
{
	count(C_WRONG, 1);
	printf("race: wrong: %s (%#lx, %#lx)\n", what, (unsigned long)a,
	       (unsigned long)b);
	sys_exit(STATUS_WRONG);
}

/* Every answer is a result or one of the errors of uapi/syscall.h. */
static long check(long r, const char *call)
{
	unsigned long e = r < 0 ? -(unsigned long)r : 0;

	count(C_CALLS, 1);
	if (r >= 0)
		return r;
	if (!sys_error_name(e))
		wrong(call, r, 0);
	count(C_ERRORS, 1);
	return r;
}

static bool past_deadline(void)
{
	return (uint64_t)sys_time_ns() >= deadline_ns;
}

/* A new thread on a stack of its own, or a negative error. */
static long start(void (*fn)(long), long arg)
{
	unsigned i = __atomic_fetch_add(&stacks_used, 1, __ATOMIC_RELAXED);

	if (i >= STACKS)
		return -SYS_ENOMEM;
	count(C_THREADS, 1);
	return thread_start(fn, stacks[i], STACK_SIZE, arg);
}

/* --- Handles ------------------------------------------------------------- */

static void remember(long h)
{
	if (h > 0)
		__atomic_store_n(&handles[h & (SYS_HANDLE_SLOTS - 1)], h,
				 __ATOMIC_RELAXED);
}

/* A handle we hold, or once held, or a forged one now and then. */
static long any_handle(uint64_t *s)
{
	long h = __atomic_load_n(&handles[below(s, SYS_HANDLE_SLOTS)],
				 __ATOMIC_RELAXED);

	if (h)
		return h;
	/* Forged: a value, or a slot a spawn fills (the worker's first,
	 * the counters', is closed by then). */
	return below(s, 8) ? (long)below(s, 1UL << 20)
			   : SYS_HANDLE_SPAWNED((long)below(s, 4));
}

/* A handle of type `type` if one comes up in a few tries, else any. */
static long handle_of(uint64_t *s, long type)
{
	long h = 0;

	for (int tries = 0; tries < 8; tries++) {
		h = any_handle(s);
		if (sys_handle_info(h) >> SYS_HANDLE_INFO_TYPE_SHIFT == type)
			return h;
	}
	return h;
}

/* SYS_HANDLE_INFO's answer must describe a real type and its rights. */
static void check_info(long h)
{
	long info = check(sys_handle_info(h), "SYS_HANDLE_INFO");
	long type = info >> SYS_HANDLE_INFO_TYPE_SHIFT;
	long rights = info & ((1L << SYS_HANDLE_INFO_TYPE_SHIFT) - 1);

	if (info < 0)
		return;
	if (!(type == SYS_HANDLE_TYPE_SHM && !(rights & ~SYS_RIGHT_SHM_ALL)) &&
	    !(type == SYS_HANDLE_TYPE_ENDPOINT &&
	      !(rights & ~SYS_RIGHT_ENDPOINT_ALL)))
		wrong("SYS_HANDLE_INFO: no such type and rights", h, info);
}

/* --- Memory -------------------------------------------------------------- */

static uint64_t *slot_at(unsigned slot)
{
	return (uint64_t *)(WINDOW_AT + slot * SLOT_PAGES * PAGE);
}

/*
 * Reads a page of the window, and writes it if asked: what it reads must
 * be ours. A fault here (the page unmapped or revoked meanwhile) ends the
 * task, as it should.
 */
static void touch(volatile uint64_t *page, bool write, uint64_t value)
{
	for (unsigned i = 0; i < PAGE / 8; i++) {
		uint64_t w = page[i];

		if (w == HEAP_POISON_WORD)
			wrong("a user page holds the heap's poison",
			      (long)(uintptr_t)&page[i], (long)w);
		if (w && w >> 32 != SIGNATURE)
			wrong("a user page holds what the fuzzer never wrote",
			      (long)(uintptr_t)&page[i], (long)w);
		if (write)
			page[i] = value;
	}
	count(C_PAGES_CHECKED, 1);
}

static void memory_op(uint64_t *s)
{
	unsigned slot = (unsigned)below(s, SLOTS);
	uint64_t *at = slot_at(slot);
	size_t len = (1 + below(s, SLOT_PAGES)) * PAGE;
	long r;

	switch (below(s, 6)) {
	case 0:
		r = check(sys_map(at, len, SYS_PROT_READ | SYS_PROT_WRITE),
			  "SYS_MAP");
		if (r == 0)
			count(C_MAPS, 1);
		break;
	case 1:
		r = check(sys_shm_map(handle_of(s, SYS_HANDLE_TYPE_SHM), at,
				      below(s, 4)
					      ? SYS_PROT_READ | SYS_PROT_WRITE
					      : SYS_PROT_READ),
			  "SYS_SHM_MAP");
		if (r == 0)
			count(C_MAPS, 1);
		break;
	case 2:
		if (check(sys_unmap(at, SLOT_PAGES * PAGE), "SYS_UNMAP") == 0)
			count(C_UNMAPS, 1);
		break;
	case 3:
		check(sys_protect(at, len,
				  below(s, 2) ? SYS_PROT_READ
					      : SYS_PROT_READ | SYS_PROT_WRITE),
		      "SYS_PROTECT");
		break;
	default:
		/*
		 * Touch only what this thread saw mapped a moment ago: a
		 * fault is then a race with another thread's unmap, protect
		 * or revoke, not a miss of our own.
		 */
		if (check(sys_protect(at, PAGE, SYS_PROT_READ | SYS_PROT_WRITE),
			  "SYS_PROTECT") == 0)
			touch(at, true, SIGNED(tag ^ random64(s)));
		break;
	}
}

/* --- IPC ------------------------------------------------------------------ */

/* A message whose words check each other: a lost or moved word shows. */
static void make_message(struct ipc_message *m, uint64_t label, uint64_t w0)
{
	m->label = label;
	m->words[0] = w0;
	m->words[1] = w0 ^ MESSAGE_KEY;
	m->words[2] = w0 * MESSAGE_KEY;
	m->words[3] = ~m->words[2];
}

/* With a handle in word 0, the kernel rewrites words 0 and 1. */
static void check_message(const struct ipc_message *m, const char *what)
{
	if (m->words[3] != ~m->words[2])
		wrong(what, (long)m->words[2], (long)m->words[3]);
	if (m->label & SYS_IPC_LABEL_HANDLE) {
		if ((long)m->words[0] > 0) {
			count(C_HANDLES_RECEIVED, 1);
			remember((long)m->words[0]);
		} else if ((long)m->words[0] != -SYS_EMFILE) {
			wrong("a handle received is neither one nor EMFILE",
			      (long)m->words[0], (long)m->label);
		}
	} else if (m->words[1] != (m->words[0] ^ MESSAGE_KEY) ||
		   m->words[2] != m->words[0] * MESSAGE_KEY) {
		wrong(what, (long)m->words[0], (long)m->words[1]);
	}
}

/* A handle of ours in the message, granted with every right it has. */
static void add_handle(struct ipc_message *m, uint64_t *s)
{
	m->label |= SYS_IPC_LABEL_HANDLE;
	m->words[0] = (uint64_t)any_handle(s);
	m->words[1] = LABEL_GRANT_RIGHTS;
	m->words[2] = random64(s);
	m->words[3] = ~m->words[2];
}

static long the_endpoint(uint64_t *s)
{
	return below(s, 4) ? SYS_HANDLE_SPAWNED(SPAWNED_ENDPOINT)
			   : handle_of(s, SYS_HANDLE_TYPE_ENDPOINT);
}

static void ipc_op(uint64_t *s)
{
	struct ipc_message out, in;
	uint64_t w0 = random64(s) >> 4;
	long ep = the_endpoint(s), r;

	make_message(&out, LABEL_CALL, w0);
	if (!below(s, 6))
		add_handle(&out, s);
	if (below(s, 4)) {
		r = check(sys_ipc_call(ep, &out, &in), "SYS_IPC_CALL");
		if (r < 0)
			return;
		check_message(&in, "the reply's words");
		/* The server answers w0 + 1 unless it passes a handle. */
		if (!(out.label & SYS_IPC_LABEL_HANDLE) &&
		    !(in.label & SYS_IPC_LABEL_HANDLE) && in.words[0] != w0 + 1)
			wrong("a reply to another call", (long)w0,
			      (long)in.words[0]);
		count(C_IPC_ROUND_TRIPS, 1);
	} else {
		out.label &= ~(uint64_t)LABEL_CALL;
		check(sys_ipc_send(ep, &out), "SYS_IPC_SEND");
	}
}

/*
 * A server: answers calls on the shared endpoint (or now and then on
 * another it holds) until its task ends, checking every message.
 */
static void server(long cpu)
{
	uint64_t s = seed ^ (uint64_t)(cpu + 1) * MESSAGE_KEY;
	struct ipc_message in, out;
	long ep = SYS_HANDLE_SPAWNED(SPAWNED_ENDPOINT), r;

	sys_set_affinity(1UL << cpu);
	r = check(sys_ipc_recv(ep, &in), "SYS_IPC_RECV");
	for (;;) {
		if (r < 0) {
			/* Gone, closed or never one: another, soon. */
			sys_sleep_ns(100000);
			ep = below(&s, 2)
				     ? SYS_HANDLE_SPAWNED(SPAWNED_ENDPOINT)
				     : handle_of(&s, SYS_HANDLE_TYPE_ENDPOINT);
			r = check(sys_ipc_recv(ep, &in), "SYS_IPC_RECV");
			continue;
		}
		count(C_IPC_RECEIVED, 1);
		check_message(&in, "a message's words");
		make_message(&out, 0, in.words[0] + 1);
		if (!below(&s, 8))
			add_handle(&out, &s);
		r = check(sys_ipc_reply_recv(ep, &out, &in),
			  "SYS_IPC_REPLY_RECV");
	}
}

/* --- Tasks and threads ------------------------------------------------------ */

static void spawn_child(uint64_t *s)
{
	long list[2] = {any_handle(s), any_handle(s)};
	long arg = ROLE_CHILD | (long)cpus << 4 |
		   (long)(random64(s) & 0x7fffffff) << 32;
	long id = check(sys_spawn("race", 4, arg, list, below(s, 3)),
			"SYS_SPAWN");

	if (id > 0) {
		count(C_CHILDREN, 1);
		__atomic_store_n(&children[below(s, ARRAY_SIZE(children))], id,
				 __ATOMIC_RELAXED);
	}
}

static void wait_child(uint64_t *s)
{
	long id = __atomic_exchange_n(&children[below(s, ARRAY_SIZE(children))],
				      0, __ATOMIC_RELAXED);
	long status;

	if (!id)
		return;
	status = sys_wait(id);
	/* -ESRCH: another thread of ours took it, or our task is ending. */
	if (status == STATUS_WRONG)
		wrong("a child found the kernel wrong", id, status);
	if (status != 0 && status != SYS_STATUS_FAULT && status != -SYS_ESRCH)
		wrong("a child's status", id, status);
}

static void fuzzer(long arg);

static void fuzz_op(uint64_t *s)
{
	uint64_t pick = below(s, 1000);
	long h;

	if (pick < 400) {
		memory_op(s);
	} else if (pick < 560) {
		ipc_op(s);
	} else if (pick < 600) {
		remember(check(sys_shm_create((1 + below(s, SHM_PAGES)) * PAGE),
			       "SYS_SHM_CREATE"));
	} else if (pick < 620) {
		remember(check(sys_endpoint_create(), "SYS_ENDPOINT_CREATE"));
	} else if (pick < 670) {
		remember(check(sys_handle_dup(any_handle(s),
					      (unsigned)random64(s) & 0x7f),
			       "SYS_HANDLE_DUP"));
	} else if (pick < 710) {
		h = __atomic_exchange_n(&handles[below(s, SYS_HANDLE_SLOTS)], 0,
					__ATOMIC_RELAXED);
		if (h && check(sys_handle_close(h), "SYS_HANDLE_CLOSE") == 0)
			count(C_CLOSES, 1);
	} else if (pick < 760) {
		check_info(any_handle(s));
	} else if (pick < 775) {
		if (check(sys_shm_revoke(handle_of(s, SYS_HANDLE_TYPE_SHM)),
			  "SYS_SHM_REVOKE") == 0)
			count(C_REVOKES, 1);
	} else if (pick < 800) {
		check(start(fuzzer, (long)random64(s) & 0xffff), "thread");
	} else if (pick < 830) {
		spawn_child(s);
	} else if (pick < 860) {
		wait_child(s);
	} else if (pick < 900) {
		check(sys_set_affinity(below(s, 4) ? 1UL << below(s, cpus) : 0),
		      "SYS_SET_AFFINITY");
	} else if (pick < 960) {
		check(sys_yield(), "SYS_YIELD");
	} else if (pick < 999) {
		check(sys_sleep_ns(below(s, 20000)), "SYS_SLEEP_NS");
	} else if (below(s, 20)) {
		sys_thread_exit();
	} else {
		/* The task ends under its other threads. */
		sys_exit(STATUS_EXITED);
	}
}

/*
 * A fuzzing thread: bits 0-15 of arg seed it, bits 16-23 pin it to a CPU
 * (0: any); it draws calls until the task's deadline.
 */
static void fuzzer(long arg)
{
	uint64_t s = seed ^ ((uint64_t)arg + 1) * MESSAGE_KEY;
	long cpu = (arg >> 16) & 0xff;

	if (cpu)
		sys_set_affinity(1UL << (cpu - 1));
	while (!past_deadline())
		fuzz_op(&s);
}

/* What the main thread of a worker does to the others meanwhile. */
static void undermine(uint64_t *s)
{
	long h;

	switch (below(s, 4)) {
	case 0:
		if (check(sys_unmap(slot_at((unsigned)below(s, SLOTS)),
				    SLOT_PAGES * PAGE),
			  "SYS_UNMAP") == 0)
			count(C_UNMAPS, 1);
		break;
	case 1:
		h = __atomic_exchange_n(&handles[below(s, SYS_HANDLE_SLOTS)], 0,
					__ATOMIC_RELAXED);
		if (h && check(sys_handle_close(h), "SYS_HANDLE_CLOSE") == 0)
			count(C_CLOSES, 1);
		break;
	case 2:
		if (!below(s, 4) &&
		    check(sys_shm_revoke(handle_of(s, SYS_HANDLE_TYPE_SHM)),
			  "SYS_SHM_REVOKE") == 0)
			count(C_REVOKES, 1);
		break;
	default:
		sys_sleep_ns(below(s, 2000000));
		break;
	}
}

static int worker(void)
{
	uint64_t s = seed;

	tag = seed;
	remember(SYS_HANDLE_SPAWNED(SPAWNED_ENDPOINT));
	remember(SYS_HANDLE_SPAWNED(SPAWNED_SHM));
	for (unsigned cpu = 0; cpu < cpus; cpu++) {
		check(start(server, cpu), "server thread");
		for (unsigned k = 0; k < 2; k++)
			check(start(fuzzer, (long)(cpu + 1) << 16 |
						    (long)(cpu * 2 + k)),
			      "fuzzing thread");
	}
	while (!past_deadline())
		undermine(&s);
	if (!below(&s, 8))
		__builtin_trap(); /* #UD: the kernel ends us for it */
	return 0;
}

static int child(void)
{
	uint64_t s = seed;

	tag = seed;
	for (unsigned i = 0; i < CHILD_OPS; i++) {
		unsigned slot = (unsigned)below(&s, SLOTS);

		switch (below(&s, 4)) {
		case 0:
			check(sys_map(slot_at(slot), PAGE,
				      SYS_PROT_READ | SYS_PROT_WRITE),
			      "SYS_MAP");
			break;
		case 1:
			check(sys_shm_map(SYS_HANDLE_SPAWNED(below(&s, 2)),
					  slot_at(slot),
					  SYS_PROT_READ | SYS_PROT_WRITE),
			      "SYS_SHM_MAP");
			break;
		case 2:
			check(sys_unmap(slot_at(slot), SLOT_PAGES * PAGE),
			      "SYS_UNMAP");
			break;
		default:
			if (check(sys_protect(slot_at(slot), PAGE,
					      SYS_PROT_READ | SYS_PROT_WRITE),
				  "SYS_PROTECT") == 0)
				touch(slot_at(slot), true,
				      SIGNED(tag ^ random64(&s)));
			break;
		}
	}
	if (!below(&s, 8))
		__builtin_trap();
	return 0;
}

/* --- The conductor ------------------------------------------------------- */

static long shared_endpoint, stats_shm;
static uint64_t worker_ms;
static unsigned slots_done;

/* One worker after another until the deadline, each judged. */
static void conductor_slot(long slot)
{
	uint64_t s = seed ^ (uint64_t)(slot + 1) * MESSAGE_KEY;

	sys_set_affinity(1UL << (slot % cpus));
	while (!past_deadline()) {
		long shm = sys_shm_create(SHM_PAGES * PAGE);
		long list[3] = {
			sys_handle_dup(stats_shm, SYS_RIGHT_MAP_READ |
							  SYS_RIGHT_MAP_WRITE |
							  SYS_RIGHT_GRANT),
			shared_endpoint, shm};
		uint64_t ms = worker_ms / 2 + below(&s, worker_ms);
		long arg = ROLE_WORKER | (long)cpus << 4 | (long)ms << 12 |
			   (long)(random64(&s) & 0x7fffffff) << 32;
		long id = sys_spawn("race", 4, arg, list, 3), status;

		sys_handle_close(list[0]);
		if (id <= 0) {
			sys_handle_close(shm);
			sys_sleep_ns(1000000);
			continue;
		}
		count(C_WORKERS, 1);
		/* The object dies with the last of its holders, or here. */
		sys_sleep_ns(below(&s, ms * 1000000));
		if (below(&s, 2))
			sys_shm_revoke(shm);
		sys_handle_close(shm);
		status = sys_wait(id);
		if (status == SYS_STATUS_FAULT)
			count(C_WORKERS_FAULTED, 1);
		else if (status == STATUS_EXITED)
			count(C_WORKERS_EXITED, 1);
		else if (status != 0) {
			/* Its own wrong() said why; any other is the wait's. */
			if (status != STATUS_WRONG)
				printf("race: wrong: worker %ld ended with "
				       "%ld\n",
				       id, status);
			count(C_WRONG, 1);
		}
	}
	__atomic_fetch_add(&slots_done, 1, __ATOMIC_RELEASE);
}

static int conductor(uint64_t ms)
{
	unsigned slots = MIN(MAX(cpus, 2u), WORKER_SLOTS);
	char line[400];
	int used;

	shared_endpoint = sys_endpoint_create();
	stats_shm = sys_shm_create(PAGE);
	if (shared_endpoint < 0 || stats_shm < 0 ||
	    sys_shm_map(stats_shm, (void *)STATS_AT,
			SYS_PROT_READ | SYS_PROT_WRITE) < 0) {
		printf("race: no endpoint or shared page\n");
		return 1;
	}
	stats = (struct race_stats *)STATS_AT;
	worker_ms = MAX(ms / 8, 20u);
	printf("race: %u CPUs, %llu ms, workers of %llu ms on average, seed "
	       "%llu\n",
	       cpus, (unsigned long long)ms, (unsigned long long)worker_ms,
	       (unsigned long long)seed);
	for (unsigned i = 0; i < slots; i++)
		if (start(conductor_slot, i) < 0)
			__atomic_fetch_add(&slots_done, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&slots_done, __ATOMIC_ACQUIRE) < slots)
		sys_sleep_ns(10000000);

	used = snprintf(line, sizeof(line), "race:");
	for (unsigned c = 0; c < COUNTERS && used < (int)sizeof(line); c++)
		used += snprintf(line + used, sizeof(line) - used, " %s=%llu",
				 counter_names[c],
				 (unsigned long long)stats->count[c]);
	printf("%s\n", line);
	return stats->count[C_WRONG] || !stats->count[C_WORKERS] ? 1 : 0;
}

int main(long arg)
{
	unsigned role = (unsigned)arg & 0xf;
	uint64_t ms = ((uint64_t)arg >> 12) & 0xffff;

	cpus = MIN(MAX(((unsigned)arg >> 4) & 0xff, 1u), MAX_CPUS);
	seed = ((uint64_t)arg >> 32) & 0x7fffffff;
	seed = seed ? seed : 1;
	deadline_ns = (uint64_t)sys_time_ns() + ms * 1000000;
	if (role == ROLE_CONDUCTOR)
		return conductor(ms);
	if (role == ROLE_CHILD)
		return child();
	/*
	 * The counters stay mapped, with no handle left to them: nothing the
	 * fuzzing draws can map them elsewhere, revoke or unmap them.
	 */
	if (sys_shm_map(SYS_HANDLE_SPAWNED(SPAWNED_STATS), (void *)STATS_AT,
			SYS_PROT_READ | SYS_PROT_WRITE) == 0)
		stats = (struct race_stats *)STATS_AT;
	sys_handle_close(SYS_HANDLE_SPAWNED(SPAWNED_STATS));
	return worker();
}
