// SPDX-License-Identifier: MIT
/*
 * Detection uses things each platform answers and real hardware does not:
 * QEMU's fw_cfg device answers "QEMU" at I/O port 0x510/0x511, Bochs's
 * port 0xe9 hack reads back 0xe9 (enabled in our bochsrc), and the
 * hypervisor CPUID leaf names KVM or TCG. Only then do we write to the
 * emulators' exit ports: on a real PC those ports may belong to something.
 */
#include "cpu/platform.h"
#include "cpu/cpu.h"
#include "console/kprintf.h"
#include "console/serial.h"
#include "lib/string.h"
#include "arch/x86.h"

#define FW_CFG_SELECTOR	 0x510
#define FW_CFG_DATA	 0x511
#define FW_CFG_SIGNATURE 0x0000
#define BOCHS_E9_PORT	 0xe9
#define BOCHS_SHUTDOWN	 0x8900
#define QEMU_DEBUG_EXIT	 0xf4
/* isa-debug-exit exits with (value << 1) | 1: 0x10 -> 33, 0x11 -> 35. */
#define QEMU_EXIT_SUCCESS 0x10
#define QEMU_EXIT_FAILURE 0x11

static enum platform platform;

static bool qemu_fw_cfg_present(void)
{
	char sig[5];

	outw(FW_CFG_SELECTOR, FW_CFG_SIGNATURE);
	for (int i = 0; i < 4; i++)
		sig[i] = (char)inb(FW_CFG_DATA);
	sig[4] = '\0';
	return !strcmp(sig, "QEMU");
}

void platform_detect(void)
{
	if (qemu_fw_cfg_present())
		platform = !strcmp(boot_cpu.hypervisor, "KVMKVMKVM")
				   ? PLATFORM_QEMU_KVM
				   : PLATFORM_QEMU_TCG;
	else if (inb(BOCHS_E9_PORT) == BOCHS_E9_PORT)
		platform = PLATFORM_BOCHS;
	else if (boot_cpu.hypervisor_bit)
		platform = PLATFORM_OTHER_HYPERVISOR;
	else
		platform = PLATFORM_BARE_METAL;
}

enum platform platform_get(void)
{
	return platform;
}

const char *platform_accel_name(void)
{
	switch (platform) {
	case PLATFORM_QEMU_TCG:
		return "tcg";
	case PLATFORM_QEMU_KVM:
		return "kvm";
	case PLATFORM_BOCHS:
		return "bochs";
	case PLATFORM_OTHER_HYPERVISOR:
		return "hv";
	default:
		return "none";
	}
}

__noreturn void halt_forever(void)
{
	for (;;) {
		cli();
		hlt();
	}
}

__noreturn void platform_exit(bool success)
{
	static const char shutdown[] = "Shutdown";

	/* Emulators stop at once: let the last report line leave the UART. */
	serial_flush();
	switch (platform) {
	case PLATFORM_QEMU_TCG:
	case PLATFORM_QEMU_KVM:
		outl(QEMU_DEBUG_EXIT,
		     success ? QEMU_EXIT_SUCCESS : QEMU_EXIT_FAILURE);
		break;
	case PLATFORM_BOCHS:
		for (const char *c = shutdown; *c; c++)
			outb(BOCHS_SHUTDOWN, (uint8_t)*c);
		break;
	default:
		break;
	}
	kprintf("shootdown: %s; halted (you can power off now)\n",
		success ? "done" : "stopped on failure");
	halt_forever();
}
