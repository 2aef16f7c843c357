// SPDX-License-Identifier: MIT
/*
 * x2APIC back end: each register is the MSR 0x800 + offset/16 (SDM Vol. 3A,
 * 11.12.1.2); the ICR is one 64-bit MSR with the destination in bits 63:32,
 * and there is no delivery-status bit to wait for.
 */
#include "apic/lapic.h"
#include "apic/lapic_backend.h"
#include "arch/x86.h"

#define X2APIC_MSR_BASE 0x800U
#define X2APIC_MSR_ICR	0x830U

static uint32_t x2apic_msr(uint32_t reg)
{
	return X2APIC_MSR_BASE + (reg >> 4);
}

static uint32_t x2apic_read(uint32_t reg)
{
	return (uint32_t)rdmsr(x2apic_msr(reg));
}

static void x2apic_write(uint32_t reg, uint32_t value)
{
	wrmsr(x2apic_msr(reg), value);
}

/*
 * WRMSR to an x2APIC register is not serializing: the IPI could leave
 * before this CPU's earlier stores are visible to the CPU it interrupts,
 * which would then read stale data (a flush request, say). The SDM's cure
 * is MFENCE; LFENCE before the WRMSR (Intel SDM Vol. 3A, 11.12.3, "MSR
 * Access in x2APIC Mode"; 12.12.3 in editions from 2024).
 */
static void x2apic_send_ipi(uint32_t destination, uint32_t command)
{
	mfence();
	lfence();
	wrmsr(X2APIC_MSR_ICR, ((uint64_t)destination << 32) | command);
}

static uint32_t x2apic_id(void)
{
	return x2apic_read(LAPIC_ID);
}

const struct lapic_backend x2apic_backend = {
	.name = "x2apic",
	.read = x2apic_read,
	.write = x2apic_write,
	.send_ipi = x2apic_send_ipi,
	.id = x2apic_id,
};
