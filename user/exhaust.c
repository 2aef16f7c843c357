// SPDX-License-Identifier: MIT
/*
 * A hostile task that uses up every limit it meets (started by
 * tests/kernel/test_user.c; docs/security.md, "Limits").
 *
 * arg, the mode:
 *   0  limits: creates endpoints, shared objects, mappings of one object,
 *      threads and children until the kernel refuses, and grants handles
 *      to a mode-2 receiver until the receiver's table refuses them. Each
 *      refusal must come at the documented count with the documented
 *      error; what was refused must work again once given back.
 *   1  a child of mode 0: exits at once, status 0.
 *   2  the receiver: takes granted handles from the endpoint in its spawn
 *      slot 0 until one arrives as -SYS_EMFILE, then checks it can still
 *      make an object of its own. Its status is the number of handles
 *      received, or STATUS_WRONG.
 *   3  memory, the first task: maps until refused, which must be its
 *      share (-SYS_EBUSY: one task may not take all memory), then makes
 *      16 MiB shared objects until refused, again by its share (which
 *      counts objects apart from its mappings). Then goes on as mode 5.
 *   4  afterwards: makes a thread and maps a page, as any task must be
 *      able to once the hostile one has ended.
 *   5  memory, the tasks after it: each maps until refused. Refused by
 *      its share, it spawns another in mode 5 and returns that one's
 *      status; refused because no user memory is left (-SYS_ENOMEM), it
 *      checks that a new shared object is refused too, and that the
 *      kernel still makes a thread and an endpoint (its reserve). Each
 *      exits with its memory still mapped: the kernel takes it back.
 * The exit status is 0 when every answer was the right one.
 *
 * The limits are the kernel's (proc/task.h, proc/handle.h, mm/mm.h),
 * copied here: user programs see only the ABI.
 */
#include "user/lib/ulib.h"

#define MODE_LIMITS	 0
#define MODE_CHILD	 1
#define MODE_RECEIVER	 2
#define MODE_MEMORY	 3
#define MODE_AFTER	 4
#define MODE_MEMORY_MORE 5

#define TASK_THREADS_MAX    128 /* proc/task.h */
#define TASK_CHILDREN_MAX   32
#define TASK_ENDPOINTS_MAX  16
#define TASK_SHM_MAX	    16
#define HANDLE_RECEIVE_KEEP 8 /* proc/handle.h */
#define SHM_MAPPINGS_PER_MM 4 /* mm/mm.h */

#define PAGE		  4096UL
#define STACK_SIZE	  2048
#define STATUS_WRONG	  99
#define SHM_AT		  0x500000000000UL
#define MEMORY_AT	  0x100000000000UL
#define MEMORY_CHUNK	  (1UL << 20)
#define BIG_OBJECT	  (16UL << 20) /* the largest shared object */
#define BIG_OBJECTS_MAX	  16 /* TASK_SHM_MAX: the share must come first */
#define GRANTS		  SYS_HANDLE_SLOTS /* more than the receiver's room */
#define LABEL_GRANT	  (SYS_IPC_LABEL_HANDLE | 1)
#define LABEL_DONE	  2
#define SLEEP_NS	  1000000
#define TRIES_PAST_MAX	  8 /* calls past a limit, so a late refusal shows */
#define MEMORY_FULL_TRIES 8 /* frees elsewhere taken by maps, at most */

static char stacks[TASK_THREADS_MAX + TRIES_PAST_MAX][STACK_SIZE] __aligned(16);
static int release;	 /* the threads may end */
static unsigned running; /* threads started and not yet ended */
static int wrong;	 /* answers that were not the documented ones */

static void say_wrong(const char *what, long got, long want)
{
	printf("exhaust: %s: got %ld, want %ld\n", what, got, want);
	wrong++;
}

/*
 * Calls make() until it fails, at most max + TRIES_PAST_MAX times; the
 * results go to out. The refusal must come after exactly max successes,
 * with error err. Returns the number of successes.
 */
static unsigned until_refused(const char *what, long (*make)(unsigned),
			      long *out, unsigned max, long err)
{
	unsigned n = 0;
	long r = 0;

	while (n < max + TRIES_PAST_MAX) {
		r = make(n);
		if (r < 0)
			break;
		out[n++] = r;
	}
	if (n != max)
		say_wrong(what, n, max);
	if (r != err)
		say_wrong(what, r, err);
	return n;
}

static long make_endpoint(unsigned i)
{
	(void)i;
	return sys_endpoint_create();
}

static long make_shm(unsigned i)
{
	(void)i;
	return sys_shm_create(PAGE);
}

static long shm_to_map; /* make_mapping's object */

static long make_mapping(unsigned i)
{
	long r = sys_shm_map(shm_to_map, (void *)(SHM_AT + i * 2 * PAGE),
			     SYS_PROT_READ);

	return r < 0 ? r : 1;
}

static void sleeper(long arg)
{
	(void)arg;
	while (!__atomic_load_n(&release, __ATOMIC_ACQUIRE))
		sys_sleep_ns(SLEEP_NS);
	__atomic_sub_fetch(&running, 1, __ATOMIC_RELEASE);
}

static long make_thread(unsigned i)
{
	long r;

	__atomic_add_fetch(&running, 1, __ATOMIC_RELAXED);
	r = thread_start(sleeper, stacks[i], STACK_SIZE, 0);
	if (r < 0)
		__atomic_sub_fetch(&running, 1, __ATOMIC_RELAXED);
	return r;
}

static long make_child(unsigned i)
{
	(void)i;
	return sys_spawn("exhaust", 7, MODE_CHILD, NULL, 0);
}

static void close_all(const long *h, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		sys_handle_close(h[i]);
}

static void objects(void)
{
	long h[TASK_ENDPOINTS_MAX + TASK_SHM_MAX + TRIES_PAST_MAX];
	long ok[SHM_MAPPINGS_PER_MM + TRIES_PAST_MAX];
	unsigned n;

	n = until_refused("endpoints", make_endpoint, h, TASK_ENDPOINTS_MAX,
			  -SYS_EBUSY);
	close_all(h, n);
	/* Closed, they count no more. */
	n = until_refused("endpoints again", make_endpoint, h,
			  TASK_ENDPOINTS_MAX, -SYS_EBUSY);
	close_all(h, n);

	n = until_refused("shared objects", make_shm, h, TASK_SHM_MAX,
			  -SYS_EBUSY);
	if (n) {
		shm_to_map = h[0];
		until_refused("mappings of one object", make_mapping, ok,
			      SHM_MAPPINGS_PER_MM, -SYS_EBUSY);
	}
	close_all(h, n);
}

static void threads(void)
{
	long ids[TASK_THREADS_MAX + TRIES_PAST_MAX];

	/* This thread is one of the task's. */
	until_refused("threads", make_thread, ids, TASK_THREADS_MAX - 1,
		      -SYS_EBUSY);
	__atomic_store_n(&release, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&running, __ATOMIC_ACQUIRE))
		sys_sleep_ns(SLEEP_NS);
}

static void children(void)
{
	long ids[TASK_CHILDREN_MAX + TRIES_PAST_MAX];
	unsigned n = until_refused("children", make_child, ids,
				   TASK_CHILDREN_MAX, -SYS_EBUSY);
	long status;

	for (unsigned i = 0; i < n; i++) {
		status = sys_wait(ids[i]);
		if (status != 0)
			say_wrong("a child's status", status, 0);
	}
	/* Waited for, they count no more. */
	ids[0] = make_child(0);
	if (ids[0] < 0)
		say_wrong("a child after the others were waited for", ids[0],
			  1);
	else if ((status = sys_wait(ids[0])) != 0)
		say_wrong("its status", status, 0);
}

/* Grants GRANTS handles to a receiver, which keeps room of its own. */
static void grants(void)
{
	struct ipc_message m = {.label = LABEL_GRANT};
	long ep = sys_endpoint_create(), id, status;
	long want = SYS_HANDLE_SLOTS - 1 - HANDLE_RECEIVE_KEEP;

	if (ep < 0) {
		say_wrong("an endpoint for the grants", ep, 1);
		return;
	}
	id = sys_spawn("exhaust", 7, MODE_RECEIVER, &ep, 1);
	if (id < 0) {
		say_wrong("the receiver", id, 1);
		sys_handle_close(ep);
		return;
	}
	m.words[0] = (uint64_t)ep;
	m.words[1] = SYS_RIGHT_SEND;
	for (unsigned i = 0; i < GRANTS; i++) {
		long r = sys_ipc_send(ep, &m);

		if (r != 0)
			say_wrong("a send with a grant", r, 0);
	}
	m = (struct ipc_message){.label = LABEL_DONE};
	sys_ipc_send(ep, &m);
	status = sys_wait(id);
	if (status != want)
		say_wrong("handles the receiver got", status, want);
	sys_handle_close(ep);
}

static long receiver(void)
{
	long ep = spawned_handle(0), got = 0, mine;
	bool refused = false;
	struct ipc_message in;

	for (;;) {
		long label = sys_ipc_recv(ep, &in);

		if (label == LABEL_DONE)
			break;
		if (label != (long)LABEL_GRANT) {
			printf("exhaust: receiver: label %ld\n", label);
			return STATUS_WRONG;
		}
		if ((long)in.words[0] > 0 && !refused) {
			got++;
		} else if ((long)in.words[0] == -SYS_EMFILE) {
			refused = true;
		} else {
			printf("exhaust: receiver: handle %ld after %ld\n",
			       (long)in.words[0], got);
			return STATUS_WRONG;
		}
	}
	/* The room the senders could not take is this task's own. */
	mine = sys_endpoint_create();
	if (mine < 0) {
		printf("exhaust: receiver: no room of its own (%ld)\n", mine);
		return STATUS_WRONG;
	}
	return got;
}

/* Where the next map goes: each call of map_until_refused goes on. */
static uint64_t map_end = MEMORY_AT;
static uint64_t pages_mapped; /* by the last map_until_refused */

/* Maps chunks, then pages, from map_end until refused; the refusal. */
static long map_until_refused(void)
{
	uint64_t from = map_end;
	long r;

	pages_mapped = 0;
	while ((r = sys_map((void *)map_end, MEMORY_CHUNK,
			    SYS_PROT_READ | SYS_PROT_WRITE)) == 0) {
		map_end += MEMORY_CHUNK;
		pages_mapped += MEMORY_CHUNK / PAGE;
	}
	if (r == -SYS_ENOMEM || r == -SYS_EBUSY) {
		while ((r = sys_map((void *)map_end, PAGE,
				    SYS_PROT_READ | SYS_PROT_WRITE)) == 0) {
			map_end += PAGE;
			pages_mapped++;
		}
	}
	printf("exhaust: mapped %lu MiB and %lu pages, then %ld\n",
	       (unsigned long)((map_end - from) >> 20),
	       (unsigned long)(((map_end - from) & ((1UL << 20) - 1)) / PAGE),
	       r);
	return r;
}

/* Starts a thread that ends at once, and waits for it to end. */
static void one_thread(const char *what)
{
	long t;

	__atomic_store_n(&release, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&running, 1, __ATOMIC_RELAXED);
	t = thread_start(sleeper, stacks[0], STACK_SIZE, 0);
	if (t < 0) {
		__atomic_sub_fetch(&running, 1, __ATOMIC_RELAXED);
		say_wrong(what, t, 1);
	}
	while (__atomic_load_n(&running, __ATOMIC_ACQUIRE))
		sys_sleep_ns(SLEEP_NS);
}

/*
 * No user memory is left (or, with check_shm false, less than a task
 * needs): the kernel's own allocations still succeed.
 */
static void memory_full(bool check_shm)
{
	long r, ep;

	/*
	 * Asked before the kernel frees anything: a thread's stack, once
	 * freed, would lift free memory above the reserve again. Memory may
	 * still grow meanwhile: an earlier task's address space is freed
	 * when the last CPU that used it, lazily perhaps, lets it go. An
	 * object that is granted is then handed back, and more maps take
	 * what was freed; one granted after maps that took nothing more is
	 * an object past the reserve.
	 */
	for (unsigned tries = 0; check_shm; tries++) {
		r = sys_shm_create(PAGE);
		if (r == -SYS_ENOMEM)
			break;
		if (r >= 0)
			sys_handle_close(r);
		if (r >= 0 && tries < MEMORY_FULL_TRIES) {
			map_until_refused();
			if (pages_mapped)
				continue;
		}
		say_wrong("a shared object with user memory full", r,
			  -SYS_ENOMEM);
		break;
	}
	one_thread("a thread with user memory full");
	ep = sys_endpoint_create();
	if (ep < 0)
		say_wrong("an endpoint with user memory full", ep, 1);
}

/* Modes 3 and 5; the exit status. */
static int memory(long mode)
{
	long r = map_until_refused(), id;
	unsigned objects = 0;

	if (mode == MODE_MEMORY) {
		if (r != -SYS_EBUSY)
			say_wrong("the first task's maps: its share", r,
				  -SYS_EBUSY);
		while ((r = sys_shm_create(BIG_OBJECT)) >= 0 &&
		       objects < BIG_OBJECTS_MAX)
			objects++;
		if (r != -SYS_EBUSY || objects == BIG_OBJECTS_MAX)
			say_wrong("16 MiB objects: refused by the share", r,
				  -SYS_EBUSY);
		r = -SYS_EBUSY; /* its share is used: the next task goes on */
	}
	if (r == -SYS_EBUSY) {
		id = sys_spawn("exhaust", 7, MODE_MEMORY_MORE, NULL, 0);
		if (id >= 0) {
			r = sys_wait(id);
			return wrong ? STATUS_WRONG : (int)r;
		}
		/* Its share ran out as the memory did: too little is left
		 * for another task, maybe a page or two. */
		if (id != -SYS_ENOMEM)
			say_wrong("the next task", id, -SYS_ENOMEM);
		memory_full(false);
	} else if (r != -SYS_ENOMEM) {
		say_wrong("a map past the memory", r, -SYS_ENOMEM);
	} else {
		memory_full(true);
	}
	return wrong ? STATUS_WRONG : 0;
}

static void after(void)
{
	volatile uint64_t *page = (volatile uint64_t *)MEMORY_AT;
	long r;

	one_thread("a thread afterwards");
	r = sys_map((void *)page, PAGE, SYS_PROT_READ | SYS_PROT_WRITE);
	if (r != 0) {
		say_wrong("a page afterwards", r, 0);
		return;
	}
	*page = 1;
	if (*page != 1)
		say_wrong("the page afterwards reads", (long)*page, 1);
}

int main(long arg)
{
	switch (arg) {
	case MODE_LIMITS:
		objects();
		threads();
		children();
		grants();
		break;
	case MODE_CHILD:
		return 0;
	case MODE_RECEIVER:
		return (int)receiver();
	case MODE_MEMORY:
	case MODE_MEMORY_MORE:
		return memory(arg);
	case MODE_AFTER:
		after();
		break;
	default:
		return STATUS_WRONG;
	}
	if (!wrong)
		printf("exhaust: mode %ld: every refusal as documented\n", arg);
	return wrong ? STATUS_WRONG : 0;
}
