// SPDX-License-Identifier: MIT
/*
 * A system-call fuzzer: random call numbers, including ones outside the
 * table, with arguments drawn mostly from a pool of values on the edges of
 * the kernel's checks (zero, small numbers, huge ones, -1, kernel and
 * non-canonical addresses, user addresses at both ends, unaligned ones).
 * The kernel must answer every call with a result or an error, and neither
 * crash nor hang; this program counts the answers.
 *
 * arg: bits 0-31 the number of calls (0: 10000), bits 32-62 the seed of
 * the pseudo-random numbers (0: 1), so that a run can be repeated.
 *
 * It exits 1 when an answer is known to be wrong: a number outside the
 * table must give -SYS_ENOSYS, and every error must be one of
 * uapi/syscall.h.
 *
 * Before the random calls, handles get aimed attacks (check_handles), each
 * of which must meet its one right error: random values, closed handles,
 * handles of the wrong type, the numbering of another task's table (the
 * slots a child of a spawn would find filled), and rights raised by
 * SYS_HANDLE_DUP or by an IPC grant.
 *
 * The fuzzer must not end or block itself, and some calls would do that
 * when the kernel does its job (see tame()):
 * - SYS_EXIT and SYS_THREAD_EXIT are never made;
 * - SYS_THREAD_CREATE always gets a real function and stack, because a
 *   thread started at a bad address would fault and take the task down;
 * - SYS_WAIT and the IPC calls are skipped when their first argument is a
 *   small number, which could name a live task or a real endpoint: waiting
 *   for it, or receiving on it, could block forever;
 * - SYS_SLEEP_NS always asks for 0 ns (a sleep lasts at least a scheduler
 *   tick, and 100000 calls must finish in a test run);
 * - memory calls (map, unmap, protect, shared-memory map) are skipped when
 *   they would apply to the fuzzer's own program or stack;
 * - SYS_WRITE of a buffer inside user space gets length 0 (the pointer
 *   checks still run), so that memory the fuzzer happened to map does not
 *   flood the console; buffers outside user space keep their length.
 */
#include "user/lib/ulib.h"

#define DEFAULT_CALLS  10000
#define PAGE	       4096UL
#define USER_TOP       0x0000800000000000UL
#define SMALL_ID_LIMIT 0x10000UL
#define STACK_WINDOW   (256 * 1024UL)
#define SHM_GUESS      (64UL << 20) /* length of a shared object not ours */
#define THREAD_STACKS  8
#define WRONG_SHOWN    8
#define FORGED_TRIES   2000
#define SHM_AT	       0x500000000000UL /* where check_handles maps */

extern char __user_image_start[], __user_image_end[]; /* user/linker.ld */

/* Arguments: mostly these, sometimes any 64-bit value. */
static const uint64_t pool[] = {
	/* zero, small numbers, sizes */
	0,
	1,
	2,
	3,
	7,
	8,
	16,
	64,
	255,
	4095,
	4096,
	4097,
	0x10000,
	0x200000,
	/* the edges of int, unsigned int and long */
	0x7fffffff,
	0x80000000,
	0xffffffff,
	0x100000000,
	0x7fffffffffffffff,
	0xffffffffffffffff, /* -1 */
	0xfffffffffffff000, /* -4096 */
	/* kernel addresses: the direct map and the kernel image */
	0xffff800000000000,
	0xffffffff80000000,
	0xffffffff80100000,
	/* the first non-canonical address; the first non-user one */
	0x8000000000000000,
	0x0000800000000000,
	/* user addresses near 0 and near the top of user space */
	0xfff,
	0x1000,
	0x1001,
	0x00007ffffffff000,
	0x00007ffffffffff8,
	0x00007fffffffffff,
	/* unaligned */
	0x1003,
	0x00007fffffffe001,
	0xffff800000000001,
};

/*
 * Call numbers outside the table. A kernel that compares only the low 32
 * bits, or compares signed, would take some of them for real calls: those
 * are SYS_CPU_ID and SYS_YIELD in disguise, so such a bug shows up as a
 * wrong answer and not as the fuzzer ending itself.
 */
static const uint64_t bad_numbers[] = {
	SYS_COUNT,
	SYS_COUNT + 1,
	64,
	255,
	256,
	0x7fffffff,
	0x80000000,
	0xffffffff,
	0x100000000 | SYS_CPU_ID,
	0x8000000000000000 | SYS_YIELD,
	0xffffffffffffffff,
	0xfffffffffffffffe,
	0x8000000000000000,
};

static uint64_t rng;			/* xorshift64 state, never 0 */
static uintptr_t stack_low, stack_high; /* around our own stack */
static uint64_t shm_len;		/* largest object we created */
static unsigned long ok, errors[SYS_ERROR_LIMIT], skipped, wrong;
static char stacks[THREAD_STACKS][4096] __aligned(16);

/* Marsaglia's xorshift64: small and good enough to pick test values. */
static uint64_t random64(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t random_below(uint64_t n)
{
	return random64() % n;
}

static uint64_t random_arg(void)
{
	if (random_below(8) == 0)
		return random64();
	return pool[random_below(ARRAY_SIZE(pool))];
}

static bool overlaps(uint64_t start, uint64_t end, uint64_t lo, uint64_t hi)
{
	return start < hi && lo < end;
}

/*
 * Whether a memory call on [addr, addr + len) could, done right, change
 * the fuzzer's own program or stack. A range that wraps around or leaves
 * user space must be refused by the kernel, so it is safe to try.
 */
static bool hits_self(uint64_t addr, uint64_t len)
{
	uint64_t end = addr + (len ? len : 1);

	if (end < addr || end > USER_TOP)
		return false;
	addr = ALIGN_DOWN(addr, PAGE);
	end = ALIGN_UP(end, PAGE);
	return overlaps(addr, end, (uintptr_t)__user_image_start,
			(uintptr_t)__user_image_end) ||
	       overlaps(addr, end, stack_low, stack_high);
}

/* Adjusts the arguments of call nr; false: do not make it at all. */
static bool tame(uint64_t nr, uint64_t *a)
{
	switch (nr) {
	case SYS_EXIT:
	case SYS_THREAD_EXIT:
		return false;
	case SYS_WAIT:
	case SYS_IPC_SEND:
	case SYS_IPC_RECV:
	case SYS_IPC_CALL:
	case SYS_IPC_REPLY_RECV:
		return a[0] >= SMALL_ID_LIMIT;
	case SYS_SLEEP_NS:
		a[0] = 0;
		return true;
	case SYS_WRITE:
		if (a[0] < USER_TOP && a[1] <= USER_TOP - a[0])
			a[1] = 0;
		return !hits_self(a[0], a[1]);
	case SYS_SPAWN: /* reading ourselves is harmless, but could name us */
	case SYS_MAP:
	case SYS_UNMAP:
	case SYS_PROTECT:
		return !hits_self(a[0], a[1]);
	case SYS_SHM_MAP:
		return !hits_self(a[1], MAX(shm_len, SHM_GUESS));
	default:
		return true;
	}
}

static void thread_body(long arg)
{
	(void)arg; /* returning ends the thread */
}

/* One aimed attack's answer: it must be exactly `want`. */
static void expect(const char *what, long got, long want)
{
	if (got == want)
		return;
	if (++wrong <= WRONG_SHOWN)
		printf("fuzz: wrong answer: %s returned %ld, not %ld\n", what,
		       got, want);
}

/* h is no handle of ours: every call that takes one must say so. */
static void expect_bad(long h)
{
	struct ipc_message m = {.label = 1};
	long list[1] = {h};

	expect("SYS_HANDLE_INFO(forged)", sys_handle_info(h), -SYS_EBADF);
	expect("SYS_HANDLE_DUP(forged)", sys_handle_dup(h, 0), -SYS_EBADF);
	expect("SYS_HANDLE_CLOSE(forged)", sys_handle_close(h), -SYS_EBADF);
	expect("SYS_SHM_MAP(forged)",
	       sys_shm_map(h, (void *)SHM_AT, SYS_PROT_READ), -SYS_EBADF);
	expect("SYS_SHM_REVOKE(forged)", sys_shm_revoke(h), -SYS_EBADF);
	expect("SYS_IPC_SEND(forged)", sys_ipc_send(h, &m), -SYS_EBADF);
	expect("SYS_IPC_RECV(forged)", sys_ipc_recv(h, &m), -SYS_EBADF);
	expect("SYS_SPAWN(forged handle)", sys_spawn("hello", 5, 0, list, 1),
	       -SYS_EBADF);
}

static struct ipc_message granted;
static int granted_done;
static char grant_stack[4096] __aligned(16);

static void grant_receiver(long ep)
{
	sys_ipc_recv(ep, &granted);
	/* Release: the message is complete before the flag. */
	__atomic_store_n(&granted_done, 1, __ATOMIC_RELEASE);
}

static void check_grant(long shm, long ep)
{
	long read_only = sys_handle_dup(shm, SYS_RIGHT_MAP_READ);
	struct ipc_message m = {.label = SYS_IPC_LABEL_HANDLE | 7,
				.words = {(uint64_t)read_only, ~0UL}};

	/* No SYS_RIGHT_GRANT: refused before anything is sent. */
	expect("grant without SYS_RIGHT_GRANT", sys_ipc_send(ep, &m),
	       -SYS_EPERM);
	m.words[0] = (uint64_t)sys_handle_dup(shm, SYS_RIGHT_MAP_READ |
							   SYS_RIGHT_GRANT);
	if (thread_start(grant_receiver, grant_stack, sizeof(grant_stack), ep) <
	    0) {
		expect("thread for the grant", -1, 0);
		return;
	}
	/* A mask of all ones: the receiver still gets no more rights. */
	expect("SYS_IPC_SEND(grant)", sys_ipc_send(ep, &m), 0);
	while (!__atomic_load_n(&granted_done, __ATOMIC_ACQUIRE))
		sys_yield();
	expect("granted rights", (long)granted.words[1],
	       SYS_RIGHT_MAP_READ | SYS_RIGHT_GRANT);
	expect("SYS_HANDLE_INFO(granted)",
	       sys_handle_info((long)granted.words[0]),
	       SYS_HANDLE_TYPE_SHM << SYS_HANDLE_INFO_TYPE_SHIFT |
		       SYS_RIGHT_MAP_READ | SYS_RIGHT_GRANT);
	expect("SYS_SHM_MAP(granted, write)",
	       sys_shm_map((long)granted.words[0], (void *)SHM_AT,
			   SYS_PROT_READ | SYS_PROT_WRITE),
	       -SYS_EPERM);
	sys_handle_close((long)granted.words[0]);
	sys_handle_close((long)m.words[0]);
	sys_handle_close(read_only);
}

static void check_handles(void)
{
	long shm, ep, ro, stale;

	/* Nothing yet: a spawned child's slots, and any value, are empty. */
	for (unsigned i = 0; i < SYS_HANDLE_SLOTS; i++)
		expect_bad(spawned_handle(i));
	for (unsigned i = 0; i < FORGED_TRIES; i++)
		expect_bad(
			(long)(i % 2 ? random64() : random_below(1UL << 20)));

	/* Closed, and stale once the slot is reused. */
	stale = sys_shm_create(PAGE);
	expect("SYS_HANDLE_CLOSE", sys_handle_close(stale), 0);
	expect_bad(stale);
	shm = sys_shm_create(PAGE);
	expect("a reused slot",
	       shm != stale && (shm & (SYS_HANDLE_SLOTS - 1)) ==
				       (stale & (SYS_HANDLE_SLOTS - 1)),
	       1);
	expect_bad(stale);
	ep = sys_endpoint_create();

	/* The wrong type. */
	expect("SYS_SHM_MAP(endpoint)",
	       sys_shm_map(ep, (void *)SHM_AT, SYS_PROT_READ), -SYS_EBADF);
	{
		struct ipc_message m = {.label = 1};

		expect("SYS_IPC_SEND(shm)", sys_ipc_send(shm, &m), -SYS_EBADF);
	}

	/* Rights only shrink. */
	ro = sys_handle_dup(shm, SYS_RIGHT_MAP_READ);
	expect("SYS_HANDLE_INFO(dup)", sys_handle_info(ro),
	       SYS_HANDLE_TYPE_SHM << SYS_HANDLE_INFO_TYPE_SHIFT |
		       SYS_RIGHT_MAP_READ);
	expect("SYS_HANDLE_DUP(raise)",
	       sys_handle_dup(ro, SYS_RIGHT_MAP_READ | SYS_RIGHT_MAP_WRITE),
	       -SYS_EPERM);
	expect("SYS_HANDLE_DUP(raise, high bits)",
	       syscall6(SYS_HANDLE_DUP, ro, (long)(1UL << 32 | 1), 0, 0, 0, 0),
	       -SYS_EPERM);
	expect("SYS_SHM_MAP(read-only, write)",
	       sys_shm_map(ro, (void *)SHM_AT, SYS_PROT_WRITE), -SYS_EPERM);
	expect("SYS_SHM_REVOKE(read-only)", sys_shm_revoke(ro), -SYS_EPERM);
	{
		long send_only = sys_handle_dup(ep, SYS_RIGHT_SEND);
		struct ipc_message m;

		expect("SYS_IPC_RECV(send only)", sys_ipc_recv(send_only, &m),
		       -SYS_EPERM);
		sys_handle_close(send_only);
	}
	check_grant(shm, ep);
	sys_handle_close(ro);
	sys_handle_close(shm);
	sys_handle_close(ep);
}

static void count(uint64_t nr, const uint64_t *a, long r, unsigned long call)
{
	/* The error number; unsigned, since -r overflows for LONG_MIN. */
	unsigned long e = r < 0 ? -(unsigned long)r : 0;
	bool known = sys_error_name(e) != NULL;
	bool bad;

	if (r >= 0)
		ok++;
	else if (known)
		errors[e]++;
	bad = (nr >= SYS_COUNT && r != -SYS_ENOSYS) || (r < 0 && !known);
	if (bad && ++wrong <= WRONG_SHOWN)
		printf("fuzz: wrong answer: call %lu, number %#lx (%#lx, %#lx, "
		       "%#lx, ...) returned %ld%s\n",
		       call, (unsigned long)nr, (unsigned long)a[0],
		       (unsigned long)a[1], (unsigned long)a[2], r,
		       nr >= SYS_COUNT ? ", not -ENOSYS" : "");
}

int main(long arg)
{
	unsigned long calls = (unsigned long)arg & 0xffffffff;
	uint64_t seed = ((uint64_t)arg >> 32) & 0x7fffffff;
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	unsigned next_stack = 0;
	char line[200];
	int used;

	calls = calls ? calls : DEFAULT_CALLS;
	rng = seed ? seed : 1;
	stack_low = ALIGN_DOWN(sp, PAGE) - STACK_WINDOW;
	stack_high = ALIGN_UP(sp, PAGE) + STACK_WINDOW;
	printf("fuzz: %lu calls, seed %lu\n", calls, (unsigned long)rng);
	check_handles();
	if (wrong)
		printf("fuzz: %lu wrong answers to handle attacks\n", wrong);

	for (unsigned long i = 0; i < calls; i++) {
		uint64_t nr, a[6];
		long r;

		if (random_below(5) == 0)
			nr = bad_numbers[random_below(ARRAY_SIZE(bad_numbers))];
		else
			nr = random_below(SYS_COUNT);
		for (int k = 0; k < 6; k++)
			a[k] = random_arg();
		if (nr < SYS_COUNT && !tame(nr, a)) {
			skipped++;
			continue;
		}
		if (nr == SYS_THREAD_CREATE) {
			/* Threads share 8 stacks in turn; each ends at
			 * once and touches only the top of its stack. */
			r = thread_start(thread_body, stacks[next_stack],
					 sizeof(stacks[0]), (long)a[2]);
			next_stack = (next_stack + 1) % THREAD_STACKS;
		} else {
			r = syscall6((long)nr, (long)a[0], (long)a[1],
				     (long)a[2], (long)a[3], (long)a[4],
				     (long)a[5]);
		}
		if (nr == SYS_SHM_CREATE && r >= 0)
			shm_len = MAX(shm_len, ALIGN_UP(a[0], PAGE));
		count(nr, a, r, i);
	}
	sys_set_affinity(0); /* undo whatever mask the fuzzing left */

	/* One line, one write: no other output lands in the middle. */
	used = snprintf(line, sizeof(line),
			"fuzz: %lu made, %lu skipped; ok %lu", calls - skipped,
			skipped, ok);
	for (unsigned long e = 0; e < SYS_ERROR_LIMIT; e++) {
		if (errors[e] && used < (int)sizeof(line))
			used += snprintf(line + used, sizeof(line) - used,
					 ", %s %lu", sys_error_name(e),
					 errors[e]);
	}
	printf("%s\nfuzz: %lu wrong answers\n", line, wrong);
	return wrong ? 1 : 0;
}
