/* SPDX-License-Identifier: MIT */
/*
 * Handles: how a task names the kernel objects it may use.
 *
 * Theory of operation.
 *
 * 1. Objects. A shared-memory object or an IPC endpoint is a `struct
 *    kobject` (a type and a reference count) inside a bigger structure of
 *    its own subsystem. Every holder of a pointer to it holds a reference:
 *    a handle, a message in flight, a system call using it right now, the
 *    kernel code that made it. The last kobject_put releases it through
 *    its type's release function.
 *
 * 2. Tables. Each task has one handle table of HANDLE_SLOTS slots. A slot
 *    holds an object reference, the rights this task has on it
 *    (SYS_RIGHT_*, uapi/syscall.h) and a generation. The handle value
 *    user code sees is generation << SYS_HANDLE_SLOT_BITS | slot. Two ID
 *    spaces meet here and stay apart: a handle means something only in
 *    its own task's table, and no global object number ever reaches user
 *    code, so a task can use only what it created or was given.
 *
 * 3. Lookup (handle_get) splits the value, checks the slot is in range and
 *    in use, that its generation matches, that the object has the type
 *    wanted and that every right asked for is held; then it takes a
 *    reference, so the object outlives the operation even if another
 *    thread closes the handle meanwhile. O(1): one table lock, held for a
 *    few loads, and one atomic increment.
 *
 * 4. Closing drops the slot's reference and bumps the generation, so the
 *    old value is refused from then on (SYS_EBADF) even once the slot is
 *    reused. Generations run from 1 to HANDLE_GEN_MAX, so a handle is
 *    never 0. They never wrap: a slot closed at HANDLE_GEN_MAX is retired
 *    (proc/handle.c) and never filled again, so no stale handle ever
 *    matches. A task loses a slot only after 2^24 - 1 closes of it.
 *
 * 5. Rights only shrink: a dup, a spawn or an IPC grant gives the receiver
 *    the rights of the handle passed, masked; passing needs
 *    SYS_RIGHT_GRANT on that handle.
 *
 * Errors: -EBADF for a value that is not a live handle of this task or
 * names an object of another type; -EPERM for a missing right; -EMFILE
 * when the table is full.
 */
#ifndef PROC_HANDLE_H
#define PROC_HANDLE_H

#include "lib/types.h"
#include "uapi/syscall.h"
#include "sync/spinlock.h"

#define HANDLE_SLOTS	 SYS_HANDLE_SLOTS
#define HANDLE_GEN_BITS	 24
#define HANDLE_GEN_MAX	 ((1U << HANDLE_GEN_BITS) - 1)
#define HANDLE_GEN_FIRST 1 /* what a fresh table's slots start with */

enum kobject_type {
	KOBJECT_SHM = SYS_HANDLE_TYPE_SHM,
	KOBJECT_ENDPOINT = SYS_HANDLE_TYPE_ENDPOINT,
};

#define KOBJECT_TYPES 3 /* one more than the largest kobject_type */

/*
 * What a task's objects are charged to: a count of the live objects it
 * created, by type, and the frames they hold (shared objects' pages).
 * Separate from the task, so an object that outlives its creator (a
 * handle given away) keeps no task or address space alive: the task and
 * each object charged hold a reference.
 */
struct kobject_charge {
	uint32_t refcount;	      /* atomic */
	uint32_t live[KOBJECT_TYPES]; /* atomic: objects charged, by type */
	uint64_t frames;	      /* atomic: frames they hold */
};

struct kobject {
	enum kobject_type type; /* set at creation, never changes */
	uint32_t refcount;	/* atomic */
	/* Whom it counts against (a reference), or NULL; set once, just
	 * after creation, and read only by its release. */
	struct kobject_charge *charge;
};

/* The object starts with one reference: its creator's. */
void kobject_init(struct kobject *obj, enum kobject_type type);

/* A new account with nothing charged (one reference), or NULL. */
struct kobject_charge *kobject_charge_create(void);
/* Drops a reference to the account; the last one frees it. */
void kobject_charge_put(struct kobject_charge *charge);
/*
 * Counts obj (just created, not yet charged) and its frames against
 * charge until obj is released: 0, or -EBUSY when charge already holds
 * max live objects of obj's type, or its frames would pass
 * mm_memory_limit() (obj is then not charged).
 */
int kobject_charge(struct kobject *obj, struct kobject_charge *charge,
		   uint32_t max);
/*
 * Whether frames more still fit charge's share, as things stand: a check
 * before allocating them, so that a task past its share is refused before
 * it takes the memory; kobject_charge decides.
 */
bool kobject_frames_fit(const struct kobject_charge *charge, uint64_t frames);
/* A reference more: the caller already holds one. */
static inline void kobject_get(struct kobject *obj)
{
	/* Relaxed: the caller's reference keeps the count above zero. */
	__atomic_add_fetch(&obj->refcount, 1, __ATOMIC_RELAXED);
}

/* For kobject_put: the last reference went; frees the object. */
void kobject_release(struct kobject *obj);

/* For kobject_put: a put with no reference left to drop (a panic). */
__noreturn void kobject_put_unheld(struct kobject *obj);

/* Inline: a put that is not the last is one locked instruction. */
static inline void kobject_put(struct kobject *obj)
{
	/* Acquire-release: the release of the last reference sees every
	 * write the other holders made before theirs. */
	uint32_t left = __atomic_sub_fetch(&obj->refcount, 1, __ATOMIC_ACQ_REL);

	if (!left)
		kobject_release(obj);
	else if (unlikely(left == UINT32_MAX))
		kobject_put_unheld(obj);
}

struct handle_slot {
	struct kobject *obj; /* a reference; NULL: free */
	uint32_t rights;
	uint32_t gen;
};

struct handle_table {
	struct spinlock lock; /* guards every slot */
	struct handle_slot slots[HANDLE_SLOTS];
};

/* An object and rights on it, passed at spawn or in a message. */
struct handle_grant {
	struct kobject *obj; /* a reference, or NULL for none */
	uint32_t rights;
};

void handle_table_init(struct handle_table *table);

/* Closes every handle: the task ended. */
void handle_table_close_all(struct handle_table *table);

/*
 * A new handle in table for obj with rights (takes its own reference).
 * slot < 0: the lowest free slot; else exactly that one, which must be
 * free. Returns the handle value or -EMFILE.
 */
long handle_install(struct handle_table *table, struct kobject *obj,
		    uint32_t rights, int slot);

/*
 * The object behind handle h, with a reference taken, if it is of type
 * `type` and has every right in `need`; its rights in *rights (may be
 * NULL) and 0 in *err; -EBADF or -EPERM in *err otherwise, and NULL.
 */
struct kobject *handle_get(struct handle_table *table, uint64_t h,
			   enum kobject_type type, uint32_t need,
			   uint32_t *rights, int *err);

/*
 * The slot h names, in use and of h's generation, or NULL (table locked):
 * the lookup of every handle_get, here for handle_find_locked to inline.
 */
static inline struct handle_slot *
handle_lookup_locked(struct handle_table *table, uint64_t h)
{
	struct handle_slot *s;

	if (h >> SYS_HANDLE_SLOT_BITS > HANDLE_GEN_MAX)
		return NULL;
	s = &table->slots[h & (HANDLE_SLOTS - 1)];
	if (!s->obj || s->gen != h >> SYS_HANDLE_SLOT_BITS)
		return NULL;
	return s;
}

/*
 * The object h names in table (locked), if it has this type and these
 * rights, or NULL: handle_get's checks, inline, for the IPC fast path
 * (proc/ipc_fast.c), which takes no reference (it locks the object before it
 * lets go of the table, and the general path, which it leaves anything
 * else to, says why a handle was refused).
 */
static inline struct kobject *handle_find_locked(struct handle_table *table,
						 uint64_t h,
						 enum kobject_type type,
						 uint32_t need)
{
	struct handle_slot *s = handle_lookup_locked(table, h);

	if (s && s->obj->type == type && (s->rights & need) == need)
		return s->obj;
	return NULL;
}

/* As handle_get, for any type. */
struct kobject *handle_get_any(struct handle_table *table, uint64_t h,
			       uint32_t need, uint32_t *rights, int *err);

/*
 * Free slots a received handle may never take: a sender cannot fill the
 * receiver's table, which keeps room for what it creates or duplicates
 * itself. 8 of 64: the most handles a task is passed at spawn.
 */
#define HANDLE_RECEIVE_KEEP SYS_HANDLE_SPAWN_MAX

/*
 * A message m received with got's object: word 0 becomes a new handle to
 * it in table, word 1 its rights. When the table would be left with fewer
 * than HANDLE_RECEIVE_KEEP free slots, the message arrives without the
 * object: word 0 is -EMFILE and word 1 is 0. Takes got's reference.
 */
void handle_receive(struct handle_table *table, struct handle_grant *got,
		    struct ipc_message *m);

/* The system calls: SYS_HANDLE_DUP, _CLOSE, _INFO of the calling task. */
long handle_dup(struct handle_table *table, uint64_t h, uint64_t rights);
long handle_close(struct handle_table *table, uint64_t h);
long handle_info(struct handle_table *table, uint64_t h);

/* A new shared-memory object of len bytes (one reference), or NULL. */
struct kobject *shm_object_create(uint64_t len);
struct shm;
/* The memory behind an object of type KOBJECT_SHM. */
struct shm *shm_object_memory(struct kobject *obj);

#endif
