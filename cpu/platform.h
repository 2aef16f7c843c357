/* SPDX-License-Identifier: MIT */
/*
 * What the kernel runs on (QEMU under KVM or TCG, Bochs, another hypervisor,
 * bare metal), and how to end the run there.
 */
#ifndef CPU_PLATFORM_H
#define CPU_PLATFORM_H

#include "lib/types.h"

enum platform {
	PLATFORM_BARE_METAL,
	PLATFORM_QEMU_TCG,
	PLATFORM_QEMU_KVM,
	PLATFORM_BOCHS,
	PLATFORM_OTHER_HYPERVISOR,
};

/* Detects the platform (needs cpu_probe first). */
void platform_detect(void);
enum platform platform_get(void);

/* Short name for the boot summary: kvm, tcg, bochs, hv, none. */
const char *platform_accel_name(void);

/*
 * Ends the run: QEMU exits through isa-debug-exit (status 33 on success,
 * 35 on failure), Bochs through its shutdown port; elsewhere the CPU halts
 * with the screen left as it is.
 */
__noreturn void platform_exit(bool success);

/* Halts this CPU for good, interrupts off. */
__noreturn void halt_forever(void);

#endif
