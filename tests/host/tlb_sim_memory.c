// SPDX-License-Identifier: MIT
/*
 * The simulator's shared memory (smp/shared.h with SHOOTDOWN_SIM), for
 * now sequentially consistent: each access is a scheduling point, then a
 * plain access; read-modify-writes are host atomics. (The TSO version,
 * with store buffers, replaces this file.)
 */
#include "tests/host/tlb_sim.h"
#include "smp/shared.h"

#include <string.h>

static void point(void)
{
	if (sim_current() >= 0)
		sim_point();
}

uint64_t sim_shared_load(const void *p, size_t size, int order)
{
	uint64_t v = 0;

	(void)order;
	point();
	memcpy(&v, p, size);
	return v;
}

void sim_shared_store(void *p, size_t size, uint64_t v, int order)
{
	(void)order;
	point();
	memcpy(p, &v, size);
}

#define RMW(type)                                                           \
	do {                                                                \
		type *q = p, x = (type)v;                                   \
		switch (op) {                                               \
		case SIM_RMW_ADD:                                           \
			return __atomic_fetch_add(q, x, __ATOMIC_SEQ_CST);  \
		case SIM_RMW_OR:                                            \
			return __atomic_fetch_or(q, x, __ATOMIC_SEQ_CST);   \
		case SIM_RMW_AND:                                           \
			return __atomic_fetch_and(q, x, __ATOMIC_SEQ_CST);  \
		case SIM_RMW_XCHG:                                          \
			return __atomic_exchange_n(q, x, __ATOMIC_SEQ_CST); \
		}                                                           \
	} while (0)

uint64_t sim_shared_rmw(void *p, size_t size, enum sim_rmw op, uint64_t v,
			int order)
{
	(void)order;
	point();
	switch (size) {
	case 1:
		RMW(uint8_t);
		break;
	case 2:
		RMW(uint16_t);
		break;
	case 4:
		RMW(uint32_t);
		break;
	default:
		RMW(uint64_t);
		break;
	}
	return 0;
}

bool sim_shared_cas(void *p, size_t size, void *expected, uint64_t v,
		    int success, int failure)
{
	(void)success;
	(void)failure;
	point();
	switch (size) {
	case 1:
		return __atomic_compare_exchange_n(
			(uint8_t *)p, (uint8_t *)expected, (uint8_t)v, false,
			__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	case 2:
		return __atomic_compare_exchange_n(
			(uint16_t *)p, (uint16_t *)expected, (uint16_t)v, false,
			__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	case 4:
		return __atomic_compare_exchange_n(
			(uint32_t *)p, (uint32_t *)expected, (uint32_t)v, false,
			__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	default:
		return __atomic_compare_exchange_n(
			(uint64_t *)p, (uint64_t *)expected, v, false,
			__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	}
}

void sim_shared_read(void *dst, const void *src, size_t size)
{
	point();
	memcpy(dst, src, size);
}

void sim_shared_write(void *dst, const void *src, size_t size)
{
	point();
	memcpy(dst, src, size);
}
