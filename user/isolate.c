// SPDX-License-Identifier: MIT
/*
 * Isolation by handles (started by tests/kernel/test_user.c).
 *
 * arg bits 0-3, the mode; bits 4-31, for mode 0, how many handle values
 * to try (0: DEFAULT_TRIES), and for mode 9, a task id:
 *   0  alone: spawned with no handles, tries every handle value below the
 *      count on every call that takes a handle (the old global object ids
 *      were small numbers and are among them), then values on the edges
 *      of the encoding. Every try must fail with -SYS_EBADF: a task
 *      reaches nothing it was not given.
 *   1  the parent of a mode-2 child: makes a shared-memory object and an
 *      endpoint, gives the child a read-only handle to the memory and a
 *      receive-only handle to the endpoint at spawn, then sends it a
 *      read-write handle to the memory over IPC, and checks the child
 *      wrote through it.
 *   2  the child: the read-only handle maps for reading and nothing else;
 *      the granted one maps for writing, and it writes CHILD_MARK.
 *   3  the revoker, parent of a mode-4 child: gives it read-only handles
 *      to two objects, waits until it maps and reads both, revokes the
 *      first (the child's handle lacks SYS_RIGHT_REVOKE: it cannot), and
 *      checks that the child, touching the revoked page, is killed by the
 *      fault, while the other object still reads back in both tasks.
 *   4  the child: maps and reads both, tells the parent, waits for the
 *      revoke, reads the other object, finds the revoked one gone for
 *      good (-SYS_EIDRM), then touches its old page.
 *   5  the owner of a secret, parent of a mode-6 child: maps an object
 *      read-write, writes SECRET_MARK, and gives the child a grant-only,
 *      a write-only and a read-only handle to it. The child must be
 *      killed by a fault and the secret must be intact. Also: no object
 *      of a length that rounds up past 2^64 exists.
 *   6  the child: maps with prot 0 through the grant-only handle and with
 *      SYS_PROT_WRITE through the write-only one (both refused: neither
 *      holds SYS_RIGHT_MAP_READ, and every x86 page is readable; should
 *      one map, it reads the page to show the leak); maps the read-only
 *      one for reading, tries to raise it by SYS_PROTECT to read-exec
 *      and to read-write (-SYS_EPERM), then writes to it, which faults.
 *   7  a parent of a mode-8 child and a mode-9 sibling: the sibling's
 *      wait for the mode-8 child must fail, and the parent's must still
 *      get its status, once.
 *   8  the waited-for child: sleeps a little, exits with WAITED_STATUS.
 *   9  the sibling: bits 4-31 of arg are the mode-8 child's task id;
 *      SYS_WAIT on it must give -SYS_ESRCH: it is not this task's child.
 *  10  the abandoner: spawns mode-8 children, lets the first half end,
 *      spawns the second half and exits without waiting for any. The
 *      kernel must let all of them go: the first at once, the second as
 *      each ends (the test counts the tasks left).
 * The exit status is 0 when every answer was the right one.
 */
#include "user/lib/ulib.h"

#define MODE_ALONE     0
#define MODE_PARENT    1
#define MODE_CHILD     2
#define MODE_REVOKER   3
#define MODE_REVOKED   4
#define DEFAULT_TRIES  4096
#define PAGE	       4096UL
#define PARENT_AT      0x500000000000UL
#define CHILD_READ_AT  0x510000000000UL
#define CHILD_WRITE_AT 0x520000000000UL
#define PARENT_MARK    0x5041524eUL /* "PARN" */
#define CHILD_MARK     0x4348494cUL /* "CHIL" */
#define KEPT_MARK      0x4b455054UL /* "KEPT" */
#define KEPT_AT	       0x530000000000UL
#define LABEL_MAPPED   1 /* child to revoker: both objects mapped */
#define LABEL_REVOKED  2 /* revoker to child: the first one is gone */
#define SLOT_KEPT      2
#define LABEL_GRANT    (SYS_IPC_LABEL_HANDLE | 1)
#define SLOT_MEMORY    0 /* the child's spawn slots */
#define SLOT_ENDPOINT  1
#define WRONG_SHOWN    8

#define MODE_OWNER	5
#define MODE_PRYING	6
#define MODE_FAMILY	7
#define MODE_WAITED	8
#define MODE_THIEF	9
#define MODE_ABANDONER	10
#define MODE_MASK	0xfUL
#define ARG_SHIFT	4 /* above the mode: tries, or a task id */
#define ARG_MASK	0xfffffffUL
#define SECRET_MARK	0x53454352UL /* "SECR" */
#define SLOT_GRANT_ONLY 0	     /* the prying child's spawn slots */
#define SLOT_WRITE_ONLY 1
#define SLOT_READ_ONLY	2
#define PRY_AT		0x540000000000UL
#define WAITED_STATUS	42
#define WAITED_SLEEP_NS 10000000UL /* 10 ms: the sibling tries meanwhile */
#define ABANDONED	8	   /* children per half */

static unsigned long wrong;

static void expect(const char *what, long value, long got, long want)
{
	if (got == want)
		return;
	if (++wrong <= WRONG_SHOWN)
		printf("isolate: %s (%#lx) returned %ld, not %ld\n", what,
		       (unsigned long)value, got, want);
}

/* Every call that takes a handle, with h: all must give -SYS_EBADF. */
static void try_everything(long h)
{
	struct ipc_message m = {.label = 1}, in;
	long list[1] = {h};

	expect("SYS_SHM_MAP", h,
	       sys_shm_map(h, (void *)PARENT_AT,
			   SYS_PROT_READ | SYS_PROT_WRITE),
	       -SYS_EBADF);
	expect("SYS_IPC_SEND", h, sys_ipc_send(h, &m), -SYS_EBADF);
	expect("SYS_IPC_RECV", h, sys_ipc_recv(h, &in), -SYS_EBADF);
	expect("SYS_IPC_CALL", h, sys_ipc_call(h, &m, &in), -SYS_EBADF);
	expect("SYS_IPC_REPLY_RECV", h, sys_ipc_reply_recv(h, &m, &in),
	       -SYS_EBADF);
	expect("SYS_HANDLE_DUP", h, sys_handle_dup(h, 0), -SYS_EBADF);
	expect("SYS_HANDLE_CLOSE", h, sys_handle_close(h), -SYS_EBADF);
	expect("SYS_HANDLE_INFO", h, sys_handle_info(h), -SYS_EBADF);
	expect("SYS_SHM_REVOKE", h, sys_shm_revoke(h), -SYS_EBADF);
	expect("SYS_SPAWN with it", h, sys_spawn("hello", 5, 0, list, 1),
	       -SYS_EBADF);
}

static int alone(unsigned long tries)
{
	static const long edges[] = {
		-1,
		-SYS_HANDLE_SLOTS,
		1L << 30,
		(1L << 30) - 1,
		0x7fffffff,
		1L << 62,
		(long)(1UL << 63),
		0x100000000L | SYS_HANDLE_SPAWNED(0),
	};

	for (unsigned long h = 0; h < tries; h++)
		try_everything((long)h);
	for (size_t i = 0; i < ARRAY_SIZE(edges); i++)
		try_everything(edges[i]);
	printf("isolate: %lu handle values tried on 10 calls, %lu wrong\n",
	       tries + (unsigned long)ARRAY_SIZE(edges), wrong);
	return wrong != 0;
}

/* Spawns this program in mode, with the handles given; < 0 said. */
static long spawn_mode(const char *who, long mode, const long *given,
		       size_t count)
{
	static const char name[] = "isolate";
	long id = sys_spawn(name, sizeof(name) - 1, mode, given, count);

	if (id < 0)
		printf("isolate: %s: spawn failed (%ld)\n", who, id);
	return id;
}

static int parent(void)
{
	long shm = sys_shm_create(PAGE), ep = sys_endpoint_create(), given[2];
	struct ipc_message grant = {.label = LABEL_GRANT};
	volatile uint64_t *mem = (volatile uint64_t *)PARENT_AT;
	long id;

	if (shm < 0 || ep < 0 ||
	    sys_shm_map(shm, (void *)PARENT_AT,
			SYS_PROT_READ | SYS_PROT_WRITE)) {
		printf("isolate: parent: set-up failed (%ld, %ld)\n", shm, ep);
		return 1;
	}
	mem[0] = PARENT_MARK;
	given[SLOT_MEMORY] =
		sys_handle_dup(shm, SYS_RIGHT_MAP_READ | SYS_RIGHT_GRANT);
	given[SLOT_ENDPOINT] =
		sys_handle_dup(ep, SYS_RIGHT_RECEIVE | SYS_RIGHT_GRANT);
	id = spawn_mode("parent", MODE_CHILD, given, 2);
	if (id < 0)
		return 1;
	/* Read and write, nothing more, whatever the handle itself holds. */
	grant.words[0] = (uint64_t)shm;
	grant.words[1] = SYS_RIGHT_MAP_READ | SYS_RIGHT_MAP_WRITE;
	expect("parent: SYS_IPC_SEND(grant)", ep, sys_ipc_send(ep, &grant), 0);
	expect("parent: SYS_WAIT", id, sys_wait(id), 0);
	expect("parent: what the child wrote", PARENT_AT, (long)mem[1],
	       CHILD_MARK);
	return wrong != 0;
}

static int child(void)
{
	long shm = spawned_handle(SLOT_MEMORY),
	     ep = spawned_handle(SLOT_ENDPOINT);
	struct ipc_message m = {.label = 1}, in;
	long got;

	expect("child: SYS_HANDLE_INFO(read-only)", shm, sys_handle_info(shm),
	       SYS_HANDLE_TYPE_SHM << SYS_HANDLE_INFO_TYPE_SHIFT |
		       SYS_RIGHT_MAP_READ | SYS_RIGHT_GRANT);
	expect("child: SYS_SHM_MAP(read-only, write)", shm,
	       sys_shm_map(shm, (void *)CHILD_READ_AT,
			   SYS_PROT_READ | SYS_PROT_WRITE),
	       -SYS_EPERM);
	expect("child: SYS_SHM_MAP(read-only, exec)", shm,
	       sys_shm_map(shm, (void *)CHILD_READ_AT, SYS_PROT_EXEC),
	       -SYS_EPERM);
	expect("child: SYS_HANDLE_DUP(raise)", shm,
	       sys_handle_dup(shm, SYS_RIGHT_MAP_WRITE), -SYS_EPERM);
	expect("child: SYS_SHM_MAP(read-only, read)", shm,
	       sys_shm_map(shm, (void *)CHILD_READ_AT, SYS_PROT_READ), 0);
	expect("child: what the parent wrote", CHILD_READ_AT,
	       (long)*(volatile uint64_t *)CHILD_READ_AT, PARENT_MARK);
	expect("child: a third spawned handle", spawned_handle(2),
	       sys_handle_info(spawned_handle(2)), -SYS_EBADF);
	expect("child: SYS_IPC_SEND(receive only)", ep, sys_ipc_send(ep, &m),
	       -SYS_EPERM);

	/* The parent waits until this is taken: always take it. */
	expect("child: SYS_IPC_RECV", ep, sys_ipc_recv(ep, &in),
	       (long)LABEL_GRANT);
	got = (long)in.words[0];
	expect("child: granted rights", got, (long)in.words[1],
	       SYS_RIGHT_MAP_READ | SYS_RIGHT_MAP_WRITE);
	expect("child: SYS_SHM_MAP(granted, exec)", got,
	       sys_shm_map(got, (void *)CHILD_WRITE_AT, SYS_PROT_EXEC),
	       -SYS_EPERM);
	expect("child: SYS_SHM_MAP(granted, read-write)", got,
	       sys_shm_map(got, (void *)CHILD_WRITE_AT,
			   SYS_PROT_READ | SYS_PROT_WRITE),
	       0);
	if (!wrong)
		((volatile uint64_t *)CHILD_WRITE_AT)[1] = CHILD_MARK;
	return wrong != 0;
}

static int revoker(void)
{
	long shm = sys_shm_create(PAGE), kept = sys_shm_create(PAGE),
	     ep = sys_endpoint_create(), given[3], id;
	volatile uint64_t *mem = (volatile uint64_t *)PARENT_AT,
			  *kept_mem = (volatile uint64_t *)KEPT_AT;
	struct ipc_message m;

	if (shm < 0 || kept < 0 || ep < 0 ||
	    sys_shm_map(shm, (void *)PARENT_AT,
			SYS_PROT_READ | SYS_PROT_WRITE) ||
	    sys_shm_map(kept, (void *)KEPT_AT,
			SYS_PROT_READ | SYS_PROT_WRITE)) {
		printf("isolate: revoker: set-up failed (%ld, %ld, %ld)\n", shm,
		       kept, ep);
		return 1;
	}
	mem[0] = PARENT_MARK;
	kept_mem[0] = KEPT_MARK;
	given[SLOT_MEMORY] =
		sys_handle_dup(shm, SYS_RIGHT_MAP_READ | SYS_RIGHT_GRANT);
	given[SLOT_ENDPOINT] = ep;
	given[SLOT_KEPT] =
		sys_handle_dup(kept, SYS_RIGHT_MAP_READ | SYS_RIGHT_GRANT);
	id = spawn_mode("revoker", MODE_REVOKED, given, 3);
	if (id < 0)
		return 1;
	expect("revoker: SYS_IPC_RECV(mapped)", ep, sys_ipc_recv(ep, &m),
	       LABEL_MAPPED);
	expect("revoker: SYS_SHM_REVOKE(no right)", given[SLOT_MEMORY],
	       sys_shm_revoke(given[SLOT_MEMORY]), -SYS_EPERM);
	expect("revoker: SYS_SHM_REVOKE", shm, sys_shm_revoke(shm), 0);
	expect("revoker: SYS_SHM_REVOKE(again)", shm, sys_shm_revoke(shm),
	       -SYS_EIDRM);
	expect("revoker: SYS_SHM_MAP(revoked)", shm,
	       sys_shm_map(shm, (void *)CHILD_READ_AT, SYS_PROT_READ),
	       -SYS_EIDRM);
	m = (struct ipc_message){.label = LABEL_REVOKED};
	expect("revoker: SYS_IPC_SEND(revoked)", ep, sys_ipc_send(ep, &m), 0);
	expect("revoker: the child's status", id, sys_wait(id),
	       SYS_STATUS_FAULT);
	expect("revoker: the other object", KEPT_AT, (long)kept_mem[0],
	       KEPT_MARK);
	return wrong != 0;
}

/* Killed by its last read when all is well: any return is a failure. */
static int revoked(void)
{
	long shm = spawned_handle(SLOT_MEMORY),
	     ep = spawned_handle(SLOT_ENDPOINT),
	     kept = spawned_handle(SLOT_KEPT);
	volatile uint64_t *mem = (volatile uint64_t *)CHILD_READ_AT;
	struct ipc_message m = {.label = LABEL_MAPPED};

	expect("revoked: SYS_SHM_MAP", shm,
	       sys_shm_map(shm, (void *)CHILD_READ_AT, SYS_PROT_READ), 0);
	expect("revoked: SYS_SHM_MAP(kept)", kept,
	       sys_shm_map(kept, (void *)KEPT_AT, SYS_PROT_READ), 0);
	expect("revoked: what the parent wrote", CHILD_READ_AT, (long)mem[0],
	       PARENT_MARK);
	expect("revoked: SYS_IPC_SEND(mapped)", ep, sys_ipc_send(ep, &m), 0);
	expect("revoked: SYS_IPC_RECV(revoked)", ep, sys_ipc_recv(ep, &m),
	       LABEL_REVOKED);
	expect("revoked: the other object", KEPT_AT,
	       (long)*(volatile uint64_t *)KEPT_AT, KEPT_MARK);
	expect("revoked: SYS_SHM_MAP(again)", shm,
	       sys_shm_map(shm, (void *)CHILD_WRITE_AT, SYS_PROT_READ),
	       -SYS_EIDRM);
	if (wrong)
		return 1;
	(void)mem[0]; /* unmapped by the revoke: this faults */
	printf("isolate: revoked: the revoked page still reads\n");
	return 1;
}

static int owner(void)
{
	long shm = sys_shm_create(PAGE), given[3], id;
	volatile uint64_t *mem = (volatile uint64_t *)PARENT_AT;

	expect("owner: SYS_SHM_CREATE(2^64 - 1)", -1,
	       sys_shm_create((size_t)-1), -SYS_ENOMEM);
	expect("owner: SYS_SHM_CREATE(2^64 - PAGE + 1)", -(long)PAGE + 1,
	       sys_shm_create((size_t)-PAGE + 1), -SYS_ENOMEM);
	if (shm < 0 || sys_shm_map(shm, (void *)PARENT_AT,
				   SYS_PROT_READ | SYS_PROT_WRITE)) {
		printf("isolate: owner: set-up failed (%ld)\n", shm);
		return 1;
	}
	mem[0] = SECRET_MARK;
	given[SLOT_GRANT_ONLY] = sys_handle_dup(shm, SYS_RIGHT_GRANT);
	given[SLOT_WRITE_ONLY] =
		sys_handle_dup(shm, SYS_RIGHT_MAP_WRITE | SYS_RIGHT_GRANT);
	given[SLOT_READ_ONLY] =
		sys_handle_dup(shm, SYS_RIGHT_MAP_READ | SYS_RIGHT_GRANT);
	id = spawn_mode("owner", MODE_PRYING, given, 3);
	if (id < 0)
		return 1;
	expect("owner: the child's status", id, sys_wait(id), SYS_STATUS_FAULT);
	expect("owner: the secret", PARENT_AT, (long)mem[0], SECRET_MARK);
	return wrong != 0;
}

/* Maps through handle h with prot, which must give want; reads on success. */
static void pry(const char *what, long h, unsigned prot, long want)
{
	long got = sys_shm_map(h, (void *)PRY_AT, prot);

	expect(what, h, got, want);
	if (got)
		return;
	if (*(volatile uint64_t *)PRY_AT == SECRET_MARK) {
		wrong++;
		printf("isolate: %s: read the secret\n", what);
	}
	sys_unmap((void *)PRY_AT, PAGE);
}

/* Killed by its last write when all is well: any return is a failure. */
static int prying(void)
{
	long ro = spawned_handle(SLOT_READ_ONLY);
	volatile uint64_t *mem = (volatile uint64_t *)CHILD_READ_AT;

	pry("prying: SYS_SHM_MAP(grant only, prot 0)",
	    spawned_handle(SLOT_GRANT_ONLY), 0, -SYS_EINVAL);
	pry("prying: SYS_SHM_MAP(write only, write)",
	    spawned_handle(SLOT_WRITE_ONLY), SYS_PROT_WRITE, -SYS_EPERM);
	expect("prying: SYS_SHM_MAP(read only, read)", ro,
	       sys_shm_map(ro, (void *)mem, SYS_PROT_READ), 0);
	expect("prying: what the owner wrote", CHILD_READ_AT, (long)mem[0],
	       SECRET_MARK);
	expect("prying: SYS_PROTECT(read only, read-exec)", CHILD_READ_AT,
	       sys_protect((void *)mem, PAGE, SYS_PROT_READ | SYS_PROT_EXEC),
	       -SYS_EPERM);
	expect("prying: SYS_PROTECT(read only, read)", CHILD_READ_AT,
	       sys_protect((void *)mem, PAGE, SYS_PROT_READ), 0);
	expect("prying: SYS_PROTECT(read only, read-write)", CHILD_READ_AT,
	       sys_protect((void *)mem, PAGE, SYS_PROT_READ | SYS_PROT_WRITE),
	       -SYS_EPERM);
	/* Right after the raise: should it have worked, the write shows it. */
	mem[0] = CHILD_MARK; /* read-only: this faults */
	printf("isolate: prying: a read-only page took a write\n");
	return 1;
}

static int family(void)
{
	long waited = spawn_mode("family", MODE_WAITED, NULL, 0), thief;

	if (waited < 0)
		return 1;
	thief = spawn_mode("family", MODE_THIEF | waited << ARG_SHIFT, NULL, 0);
	if (thief >= 0)
		expect("family: the sibling's status", thief, sys_wait(thief),
		       0);
	expect("family: SYS_WAIT(child)", waited, sys_wait(waited),
	       WAITED_STATUS);
	expect("family: SYS_WAIT(child, again)", waited, sys_wait(waited),
	       -SYS_ESRCH);
	return wrong != 0;
}

static int waited(void)
{
	sys_sleep_ns(WAITED_SLEEP_NS);
	return WAITED_STATUS;
}

static int thief(long sibling)
{
	expect("thief: SYS_WAIT(sibling)", sibling, sys_wait(sibling),
	       -SYS_ESRCH);
	return wrong != 0;
}

/* Returns before its second half of children ends, and never waits. */
static int abandoner(void)
{
	for (int i = 0; i < 2 * ABANDONED; i++) {
		if (spawn_mode("abandoner", MODE_WAITED, NULL, 0) < 0)
			return 1;
		if (i == ABANDONED - 1)
			sys_sleep_ns(3 * WAITED_SLEEP_NS);
	}
	return 0;
}

int main(long arg)
{
	unsigned long high = ((unsigned long)arg >> ARG_SHIFT) & ARG_MASK;

	switch (arg & MODE_MASK) {
	case MODE_ALONE:
		return alone(high ? high : DEFAULT_TRIES);
	case MODE_PARENT:
		return parent();
	case MODE_CHILD:
		return child();
	case MODE_REVOKER:
		return revoker();
	case MODE_REVOKED:
		return revoked();
	case MODE_OWNER:
		return owner();
	case MODE_PRYING:
		return prying();
	case MODE_FAMILY:
		return family();
	case MODE_WAITED:
		return waited();
	case MODE_THIEF:
		return thief((long)high);
	case MODE_ABANDONER:
		return abandoner();
	default:
		printf("isolate: unknown mode %ld\n", arg & 0xf);
		return 2;
	}
}
