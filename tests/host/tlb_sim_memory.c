// SPDX-License-Identifier: MIT
/*
 * The simulator's shared memory: x86-TSO with store buffers, plus what the
 * compiler may do with relaxed stores (docs/tlb-simulator.md, "Memory").
 * Every sim_shared_* call (sync/shared.h built with SHOOTDOWN_SIM) lands
 * here, and each is a scheduling point before it acts.
 *
 *   stores      go into the CPU's FIFO store buffer: entries of up to 8
 *               bytes {address, size, bytes, order}. A block write
 *               (shared_write) is one entry per aligned 8-byte piece.
 *   loads       assemble each byte from the CPU's own newest buffered store
 *               covering it, else from memory (store forwarding). Loads
 *               stay in program order: load-load reordering by the compiler
 *               is not modelled, so acquire and relaxed loads behave alike.
 *   drains      an entry becomes visible (is written to memory) only when
 *               the scheduler says (a "drain" move), or when forced:
 *                - locked read-modify-writes and CAS with release (or
 *                  stronger) order, SEQ_CST stores, tlb_hw_fence (MFENCE)
 *                  and serializing instructions (sim_memory_serialize:
 *                  MOV to CR3/CR4, INVLPG, INVPCID, IRET) drain the whole
 *                  buffer first;
 *                - a locked operation with relaxed or acquire order drains
 *                  up to the newest entry for its own address: the compiler
 *                  may sink any other earlier relaxed store below it;
 *                - a full buffer drains its oldest entry.
 *   order       which entry may drain: the oldest always (TSO); a younger
 *               one only if it is a relaxed store (or part of a block
 *               write) and no older entry overlaps it, which is what the
 *               compiler may do with a relaxed store (move it below earlier
 *               stores to other addresses). A release store never passes
 *               an older entry. Stores are only ever delayed, never moved
 *               up above earlier loads.
 *   interrupts  delivery does not drain (the SDM lists no such effect);
 *               the handler's IRET is serializing (SDM Vol. 3A,
 *               "Serializing Instructions"), so the scheduler calls
 *               sim_memory_serialize after a handler.
 *
 * Memory itself is the host's: only the CPU holding the baton runs, so the
 * simulator reads and writes the real variables. The simulator's own
 * checks read through sim_memory_peek, which includes buffered stores.
 * With sim_explain (-v), a load also says what it returned and which
 * other CPUs' buffers hold a store to the same variable
 * (tlb_sim_explain.c); that reads the buffers only, so the run takes the
 * same steps.
 */
#include "tests/host/tlb_sim.h"
#include "sync/shared.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Entries of one CPU's store buffer: far more than any path buffers. */
#define SB_ENTRIES 64
#define SB_PIECE   8 /* the largest single store */

struct sb_entry {
	uintptr_t addr;
	uint8_t size;
	uint8_t order; /* __ATOMIC_RELAXED (also block pieces), RELEASE */
	uint8_t bytes[SB_PIECE];
	uint64_t seq; /* global age, for sim_memory_peek */
};

struct store_buffer {
	struct sb_entry e[SB_ENTRIES]; /* oldest first */
	unsigned n;
};

static struct {
	struct store_buffer sb[SIM_CPUS_MAX];
	unsigned cpus;
	uint64_t seq;
	uint64_t version; /* bumped whenever memory's contents change */
	uintptr_t stack_lo[SIM_CPUS_MAX], stack_hi[SIM_CPUS_MAX];
} M;

void sim_memory_reset(unsigned cpus)
{
	for (unsigned c = 0; c < SIM_CPUS_MAX; c++)
		M.sb[c].n = 0;
	M.cpus = cpus;
	M.seq = 0;
	M.version = 0;
}

void sim_memory_set_stack(unsigned cpu, uintptr_t lo, uintptr_t hi)
{
	M.stack_lo[cpu] = lo;
	M.stack_hi[cpu] = hi;
}

uint64_t sim_memory_version(void)
{
	return M.version;
}

static bool overlaps(uintptr_t a, size_t asize, uintptr_t b, size_t bsize)
{
	return a < b + bsize && b < a + asize;
}

/* --- Names, for the trace ---------------------------------------------------------- */

/* "cpu1 is_lazy" for the protocol's per-CPU fields, else the address. */
static const char *name_of(uintptr_t a, char *buf, size_t size)
{
	for (unsigned c = 0; c < M.cpus; c++) {
		uintptr_t base = (uintptr_t)&tlb_cpus[c];
		size_t off = a - base;

		if (a < base || off >= sizeof(tlb_cpus[c]))
			continue;
		snprintf(buf, size, "cpu%u %s", c,
			 off == offsetof(struct tlb_cpu, loaded_mm)
				 ? "loaded_mm"
			 : off == offsetof(struct tlb_cpu, is_lazy) ? "is_lazy"
			 : off >= offsetof(struct tlb_cpu, request) ? "request"
								    : "state");
		return buf;
	}
	snprintf(buf, size, "%#llx", (unsigned long long)a);
	return buf;
}

void sim_memory_trace_drain(unsigned cpu, unsigned i, const char *why)
{
	const struct sb_entry *e = &M.sb[cpu].e[i];
	uint64_t v = 0;
	char name[48];

	memcpy(&v, e->bytes, e->size);
	sim_trace("cpu%u's store %s = %#llx (%u bytes) becomes visible%s", cpu,
		  name_of(e->addr, name, sizeof(name)), (unsigned long long)v,
		  e->size, why);
}

/* --- Draining -------------------------------------------------------------------- */

static void write_memory(const struct sb_entry *e)
{
	if (memcmp((void *)e->addr, e->bytes, e->size)) {
		memcpy((void *)e->addr, e->bytes, e->size);
		M.version++;
	}
}

bool sim_memory_drainable(unsigned cpu, unsigned i)
{
	const struct store_buffer *sb = &M.sb[cpu];
	const struct sb_entry *e = &sb->e[i];

	if (i >= sb->n)
		return false;
	if (i == 0)
		return true;
	if (e->order != __ATOMIC_RELAXED)
		return false;
	for (unsigned j = 0; j < i; j++) {
		if (overlaps(sb->e[j].addr, sb->e[j].size, e->addr, e->size))
			return false;
	}
	return true;
}

unsigned sim_memory_buffered(unsigned cpu)
{
	return M.sb[cpu].n;
}

void sim_memory_drain_entry(unsigned cpu, unsigned i)
{
	struct store_buffer *sb = &M.sb[cpu];

	if (!sim_memory_drainable(cpu, i))
		sim_fail("cpu%u: store buffer entry %u cannot drain", cpu, i);
	write_memory(&sb->e[i]);
	memmove(&sb->e[i], &sb->e[i + 1],
		(sb->n - i - 1) * sizeof(struct sb_entry));
	sb->n--;
}

/* Drains entries 0 .. last (oldest first). */
static void drain_through(unsigned cpu, unsigned last)
{
	for (unsigned i = 0; i <= last; i++)
		sim_memory_drain_entry(cpu, 0);
}

void sim_memory_drain_all(unsigned cpu)
{
	if (M.sb[cpu].n)
		drain_through(cpu, M.sb[cpu].n - 1);
}

void sim_memory_drain_stack(unsigned cpu)
{
	struct store_buffer *sb = &M.sb[cpu];

	for (unsigned i = sb->n; i-- > 0;) {
		const struct sb_entry *e = &sb->e[i];

		if (e->addr >= M.stack_lo[cpu] && e->addr < M.stack_hi[cpu]) {
			drain_through(cpu, i);
			return;
		}
	}
}

void sim_memory_serialize(void)
{
	int self = sim_current();

	if (self >= 0)
		sim_memory_drain_all((unsigned)self);
}

/* --- Accesses -------------------------------------------------------------------- */

/* Byte b of the newest store in cpu's buffer covering it, or memory's. */
static uint8_t read_byte(int cpu, uintptr_t b)
{
	if (cpu >= 0) {
		const struct store_buffer *sb = &M.sb[cpu];

		for (unsigned i = sb->n; i-- > 0;) {
			const struct sb_entry *e = &sb->e[i];

			if (b >= e->addr && b < e->addr + e->size)
				return e->bytes[b - e->addr];
		}
	}
	return *(const uint8_t *)b;
}

static void read_bytes(int cpu, void *dst, const void *src, size_t size)
{
	for (size_t i = 0; i < size; i++)
		((uint8_t *)dst)[i] = read_byte(cpu, (uintptr_t)src + i);
}

static uint64_t as_u64(const void *bytes, size_t size)
{
	uint64_t v = 0;

	memcpy(&v, bytes, size); /* little-endian, as x86 */
	return v;
}

static void check_size(size_t size)
{
	if (size != 1 && size != 2 && size != 4 && size != 8)
		sim_fail("a shared access of %zu bytes (1, 2, 4 or 8)", size);
}

uint64_t sim_memory_peek(const void *p, size_t size)
{
	uint8_t bytes[SB_PIECE] = {0};

	check_size(size);
	for (size_t i = 0; i < size; i++) {
		uintptr_t b = (uintptr_t)p + i;
		uint64_t newest = 0;

		bytes[i] = *(const uint8_t *)b;
		for (unsigned c = 0; c < M.cpus; c++) {
			const struct store_buffer *sb = &M.sb[c];

			for (unsigned k = 0; k < sb->n; k++) {
				const struct sb_entry *e = &sb->e[k];

				if (b >= e->addr && b < e->addr + e->size &&
				    e->seq >= newest) {
					newest = e->seq;
					bytes[i] = e->bytes[b - e->addr];
				}
			}
		}
	}
	return as_u64(bytes, size);
}

bool sim_memory_forwards(unsigned cpu, const void *p, size_t size)
{
	const struct store_buffer *sb = &M.sb[cpu];

	for (unsigned i = 0; i < sb->n; i++) {
		if (overlaps(sb->e[i].addr, sb->e[i].size, (uintptr_t)p, size))
			return true;
	}
	return false;
}

bool sim_memory_pending(unsigned cpu, const void *p, size_t size,
			uint64_t *value)
{
	const struct store_buffer *sb = &M.sb[cpu];

	for (unsigned i = sb->n; i-- > 0;) {
		const struct sb_entry *e = &sb->e[i];

		if (e->addr == (uintptr_t)p && e->size == size) {
			*value = as_u64(e->bytes, size);
			return true;
		}
	}
	return false;
}

static void buffer(unsigned cpu, uintptr_t addr, const void *bytes, size_t size,
		   int order)
{
	struct store_buffer *sb = &M.sb[cpu];
	struct sb_entry *e;

	if (sb->n == SB_ENTRIES)
		drain_through(cpu, 0);
	e = &sb->e[sb->n++];
	e->addr = addr;
	e->size = (uint8_t)size;
	e->order = (uint8_t)(order == __ATOMIC_RELAXED ? __ATOMIC_RELAXED
						       : __ATOMIC_RELEASE);
	memcpy(e->bytes, bytes, size);
	e->seq = ++M.seq;
}

static bool releases(int order)
{
	return order == __ATOMIC_RELEASE || order == __ATOMIC_ACQ_REL ||
	       order == __ATOMIC_SEQ_CST;
}

/*
 * Before a locked operation on [p, p+size): what its order makes the
 * buffer give up (see the top of the file).
 */
static void drain_for_locked(unsigned cpu, const void *p, size_t size,
			     int order)
{
	const struct store_buffer *sb = &M.sb[cpu];

	if (releases(order)) {
		sim_memory_drain_all(cpu);
		return;
	}
	for (unsigned i = sb->n; i-- > 0;) {
		if (overlaps(sb->e[i].addr, sb->e[i].size, (uintptr_t)p,
			     size)) {
			drain_through(cpu, i);
			return;
		}
	}
}

/* The scheduling point before every access; -1 outside simulated CPUs. */
static int access_point(void)
{
	int self = sim_current();

	if (self >= 0)
		sim_access_point();
	return self;
}

uint64_t sim_shared_load(const void *p, size_t size, int order)
{
	uint8_t bytes[SB_PIECE] = {0};
	int self = access_point();

	(void)order; /* loads stay in program order */
	check_size(size);
	read_bytes(self, bytes, p, size);
	if (sim_explain && self >= 0)
		sim_explain_load((unsigned)self, p, size, as_u64(bytes, size));
	return as_u64(bytes, size);
}

void sim_shared_store(void *p, size_t size, uint64_t v, int order)
{
	int self = access_point();

	check_size(size);
	if (self < 0) {
		memcpy(p, &v, size);
		return;
	}
	buffer((unsigned)self, (uintptr_t)p, &v, size, order);
	if (order == __ATOMIC_SEQ_CST) /* MOV + MFENCE, or XCHG */
		sim_memory_drain_all((unsigned)self);
}

static void write_locked(void *p, size_t size, uint64_t v)
{
	if (memcmp(p, &v, size)) {
		memcpy(p, &v, size);
		M.version++;
	}
}

uint64_t sim_shared_rmw(void *p, size_t size, enum sim_rmw op, uint64_t v,
			int order)
{
	int self = access_point();
	uint64_t old = 0, result;

	check_size(size);
	if (self >= 0)
		drain_for_locked((unsigned)self, p, size, order);
	memcpy(&old, p, size);
	switch (op) {
	case SIM_RMW_ADD:
		result = old + v;
		break;
	case SIM_RMW_OR:
		result = old | v;
		break;
	case SIM_RMW_AND:
		result = old & v;
		break;
	default:
		result = v;
		break;
	}
	write_locked(p, size, result);
	return old;
}

bool sim_shared_cas(void *p, size_t size, void *expected, uint64_t v,
		    int success, int failure)
{
	int self = access_point();
	uint64_t old = 0, want = 0;

	(void)failure; /* LOCK CMPXCHG is locked either way */
	check_size(size);
	if (self >= 0)
		drain_for_locked((unsigned)self, p, size, success);
	memcpy(&old, p, size);
	memcpy(&want, expected, size);
	if (old != want) {
		memcpy(expected, &old, size);
		return false;
	}
	write_locked(p, size, v);
	return true;
}

void sim_shared_read(void *dst, const void *src, size_t size)
{
	int self = access_point();

	read_bytes(self, dst, src, size);
}

void sim_shared_write(void *dst, const void *src, size_t size)
{
	int self = access_point();
	uintptr_t at = (uintptr_t)dst;
	const uint8_t *from = src;

	if (self < 0) {
		memcpy(dst, src, size);
		return;
	}
	while (size) {
		size_t piece = SB_PIECE - (at % SB_PIECE);

		piece = MIN(piece, size);
		buffer((unsigned)self, at, from, piece, __ATOMIC_RELAXED);
		at += piece;
		from += piece;
		size -= piece;
	}
}
