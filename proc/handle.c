// SPDX-License-Identifier: MIT
/*
 * Handle tables and the objects they name (the theory is in proc/handle.h).
 *
 * Shared memory keeps its own structure in mm/ (struct shm, with the
 * reference count address spaces use); here it is wrapped in a small
 * object holding one reference to it, so handles can name it without mm/
 * knowing about handles. Endpoints embed their kobject (proc/endpoint.h).
 */
#include "proc/handle.h"
#include "trap/panic.h"
#include "lib/errno.h"
#include "mm/heap.h"
#include "mm/mm.h"
#include "proc/ipc.h"

_Static_assert(SYS_HANDLE_SLOTS <= 64, "slot index in SYS_HANDLE_SLOT_BITS");
_Static_assert(KOBJECT_SHM < KOBJECT_TYPES && KOBJECT_ENDPOINT < KOBJECT_TYPES,
	       "struct kobject_charge counts each type in live[type]");
_Static_assert(SYS_HANDLE_SLOT_BITS + HANDLE_GEN_BITS < 31,
	       "a handle value fits a positive int");
_Static_assert(SYS_PROT_READ == SYS_RIGHT_MAP_READ &&
		       SYS_PROT_WRITE == SYS_RIGHT_MAP_WRITE &&
		       SYS_PROT_EXEC == SYS_RIGHT_MAP_EXEC,
	       "SYS_SHM_MAP checks prot against the map rights bit for bit");

/*
 * The generation of a retired slot: one whose generation would have
 * wrapped. No handle of a slot in use has it, and no slot retired is
 * filled again (handle_install skips it), so handle_lookup_locked, which
 * finds no object there, refuses every value naming it.
 */
#define HANDLE_GEN_RETIRED 0
_Static_assert(HANDLE_GEN_RETIRED < HANDLE_GEN_FIRST,
	       "a retired slot's generation is none a handle was given");

struct shm_object {
	struct kobject obj;
	struct shm *shm; /* a reference */
};

void kobject_init(struct kobject *obj, enum kobject_type type)
{
	obj->type = type;
	obj->refcount = 1;
	obj->charge = NULL;
}

struct kobject_charge *kobject_charge_create(void)
{
	struct kobject_charge *charge = kzalloc(sizeof(*charge));

	if (charge)
		charge->refcount = 1;
	return charge;
}

void kobject_charge_put(struct kobject_charge *charge)
{
	if (!__atomic_sub_fetch(&charge->refcount, 1, __ATOMIC_ACQ_REL))
		kfree(charge);
}

/*
 * Adds frames to charge->frames unless that passes a task's share of
 * memory, the same as its address space's (mm/mm.c, "Memory accounts").
 * Relaxed, as the count: it orders nothing else.
 */
static bool charge_frames(struct kobject_charge *charge, uint64_t frames)
{
	uint64_t had = __atomic_load_n(&charge->frames, __ATOMIC_RELAXED);

	do {
		if (had + frames > mm_memory_limit())
			return false;
	} while (!__atomic_compare_exchange_n(
		&charge->frames, &had, had + frames, false, __ATOMIC_RELAXED,
		__ATOMIC_RELAXED));
	return true;
}

/* The frames obj holds: a shared object's pages; an endpoint none. */
static uint64_t frames_of(struct kobject *obj)
{
	return obj->type == KOBJECT_SHM ? shm_frames(shm_object_memory(obj))
					: 0;
}

bool kobject_frames_fit(const struct kobject_charge *charge, uint64_t frames)
{
	return __atomic_load_n(&charge->frames, __ATOMIC_RELAXED) + frames <=
	       mm_memory_limit();
}

int kobject_charge(struct kobject *obj, struct kobject_charge *charge,
		   uint32_t max)
{
	uint32_t *live = &charge->live[obj->type];
	uint32_t n = __atomic_load_n(live, __ATOMIC_RELAXED);

	/* A compare-exchange: two threads of a task never both pass max.
	 * Relaxed: the count orders nothing else. */
	do {
		if (n >= max)
			return -EBUSY;
	} while (!__atomic_compare_exchange_n(
		live, &n, n + 1, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	if (!charge_frames(charge, frames_of(obj))) {
		__atomic_sub_fetch(live, 1, __ATOMIC_RELAXED);
		return -EBUSY;
	}
	/* Relaxed: the caller's task holds a reference to the account. */
	__atomic_add_fetch(&charge->refcount, 1, __ATOMIC_RELAXED);
	obj->charge = charge;
	return 0;
}

/* The object is going: it no longer counts against its creator. */
static void uncharge(struct kobject *obj)
{
	struct kobject_charge *charge = obj->charge;

	if (!charge)
		return;
	obj->charge = NULL;
	__atomic_sub_fetch(&charge->live[obj->type], 1, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&charge->frames, frames_of(obj), __ATOMIC_RELAXED);
	kobject_charge_put(charge);
}

void kobject_put_unheld(struct kobject *obj)
{
	panic("kobject %p (type %d): put once more than it was got", obj,
	      obj->type);
}

void kobject_release(struct kobject *obj)
{
	struct shm_object *so;

	uncharge(obj); /* before an endpoint's slot may be reused */
	switch (obj->type) {
	case KOBJECT_SHM:
		so = (struct shm_object *)obj;
		shm_put(so->shm);
		kfree(so);
		break;
	case KOBJECT_ENDPOINT:
		ipc_endpoint_release(obj);
		break;
	}
}

struct kobject *shm_object_create(uint64_t len)
{
	struct shm_object *so = kmalloc(sizeof(*so));

	if (!so)
		return NULL;
	so->shm = shm_create(len);
	if (!so->shm) {
		kfree(so);
		return NULL;
	}
	kobject_init(&so->obj, KOBJECT_SHM);
	return &so->obj;
}

struct shm *shm_object_memory(struct kobject *obj)
{
	KASSERT(obj->type == KOBJECT_SHM, "object type %d is not shm",
		obj->type);
	return ((struct shm_object *)obj)->shm;
}

void handle_table_init(struct handle_table *table)
{
	table->lock = (struct spinlock)SPINLOCK_INIT;
	for (int i = 0; i < HANDLE_SLOTS; i++)
		table->slots[i] =
			(struct handle_slot){NULL, 0, HANDLE_GEN_FIRST};
}

static uint64_t handle_value(unsigned slot, uint32_t gen)
{
	return (uint64_t)gen << SYS_HANDLE_SLOT_BITS | slot;
}

/* Slots that can still be filled; table locked. */
static unsigned free_slots_locked(const struct handle_table *table)
{
	unsigned n = 0;

	for (int i = 0; i < HANDLE_SLOTS; i++) {
		const struct handle_slot *s = &table->slots[i];

		n += !s->obj && s->gen != HANDLE_GEN_RETIRED;
	}
	return n;
}

/* handle_install, leaving at least keep slots free (or -EMFILE). */
static long install(struct handle_table *table, struct kobject *obj,
		    uint32_t rights, int slot, unsigned keep)
{
	uint64_t flags = spin_lock_irqsave(&table->lock);
	long h = -EMFILE;

	if (keep && free_slots_locked(table) <= keep)
		slot = HANDLE_SLOTS; /* the loop below finds none */
	for (int i = slot < 0 ? 0 : slot; i < HANDLE_SLOTS; i++) {
		struct handle_slot *s = &table->slots[i];

		if (!s->obj && s->gen != HANDLE_GEN_RETIRED) {
			kobject_get(obj);
			s->obj = obj;
			s->rights = rights;
			h = (long)handle_value((unsigned)i, s->gen);
			break;
		}
		if (slot >= 0)
			break;
	}
	spin_unlock_irqrestore(&table->lock, flags);
	return h;
}

long handle_install(struct handle_table *table, struct kobject *obj,
		    uint32_t rights, int slot)
{
	return install(table, obj, rights, slot, 0);
}

static struct kobject *get(struct handle_table *table, uint64_t h,
			   bool any_type, enum kobject_type type, uint32_t need,
			   uint32_t *rights, int *err)
{
	uint64_t flags = spin_lock_irqsave(&table->lock);
	struct handle_slot *s = handle_lookup_locked(table, h);
	struct kobject *obj = NULL;

	if (!s || (!any_type && s->obj->type != type)) {
		*err = -EBADF;
	} else if ((s->rights & need) != need) {
		*err = -EPERM;
	} else {
		*err = 0;
		obj = s->obj;
		kobject_get(obj);
		if (rights)
			*rights = s->rights;
	}
	spin_unlock_irqrestore(&table->lock, flags);
	return obj;
}

struct kobject *handle_get(struct handle_table *table, uint64_t h,
			   enum kobject_type type, uint32_t need,
			   uint32_t *rights, int *err)
{
	return get(table, h, false, type, need, rights, err);
}

struct kobject *handle_get_any(struct handle_table *table, uint64_t h,
			       uint32_t need, uint32_t *rights, int *err)
{
	return get(table, h, true, KOBJECT_SHM, need, rights, err);
}

void handle_receive(struct handle_table *table, struct handle_grant *got,
		    struct ipc_message *m)
{
	long h = install(table, got->obj, got->rights, -1, HANDLE_RECEIVE_KEEP);

	kobject_put(got->obj); /* the handle holds its own */
	got->obj = NULL;
	m->words[0] = (uint64_t)h;
	m->words[1] = h < 0 ? 0 : got->rights;
}

long handle_dup(struct handle_table *table, uint64_t h, uint64_t want)
{
	uint32_t rights;
	int err;
	struct kobject *obj;
	long dup;

	if (want >> 32)
		return -EPERM; /* no such rights exist, so none are held */
	obj = handle_get_any(table, h, (uint32_t)want, &rights, &err);
	if (!obj)
		return err;
	dup = handle_install(table, obj, (uint32_t)want, -1);
	kobject_put(obj);
	return dup;
}

/*
 * Empties slot s (table locked); returns the reference it held. The
 * generation moves on, or the slot retires rather than wrap to one that
 * old handles carry.
 */
static struct kobject *clear_locked(struct handle_slot *s)
{
	struct kobject *obj = s->obj;

	s->obj = NULL;
	s->rights = 0;
	s->gen = s->gen == HANDLE_GEN_MAX ? HANDLE_GEN_RETIRED : s->gen + 1;
	return obj;
}

long handle_close(struct handle_table *table, uint64_t h)
{
	uint64_t flags = spin_lock_irqsave(&table->lock);
	struct handle_slot *s = handle_lookup_locked(table, h);
	struct kobject *obj = s ? clear_locked(s) : NULL;

	spin_unlock_irqrestore(&table->lock, flags);
	if (!obj)
		return -EBADF;
	/* Outside the lock: releasing an endpoint takes other locks. */
	kobject_put(obj);
	return 0;
}

long handle_info(struct handle_table *table, uint64_t h)
{
	uint32_t rights;
	int err;
	struct kobject *obj = handle_get_any(table, h, 0, &rights, &err);
	long info;

	if (!obj)
		return err;
	info = (long)obj->type << SYS_HANDLE_INFO_TYPE_SHIFT | rights;
	kobject_put(obj);
	return info;
}

void handle_table_close_all(struct handle_table *table)
{
	for (int i = 0; i < HANDLE_SLOTS; i++) {
		uint64_t flags = spin_lock_irqsave(&table->lock);
		struct handle_slot *s = &table->slots[i];
		struct kobject *obj = s->obj ? clear_locked(s) : NULL;

		spin_unlock_irqrestore(&table->lock, flags);
		if (obj)
			kobject_put(obj);
	}
}
