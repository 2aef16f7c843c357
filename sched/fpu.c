// SPDX-License-Identifier: MIT
#include "sched/fpu.h"
#include "cpu/cpu.h"
#include "console/kprintf.h"
#include "trap/panic.h"
#include "lib/string.h"
#include "arch/x86.h"
#include "mm/heap.h"

#define CPUID_LEAF_XSAVE     0x0d
#define FXSAVE_AREA_SIZE     512
#define MXCSR_DEFAULT	     0x1f80 /* all SIMD exceptions masked */
#define XCR_XFEATURE_ENABLED 0

static size_t area_size;
uint64_t fpu_xsave_components;
static void *initial_state;

static void fpu_save(void *area)
{
	if (fpu_xsave_components)
		xsave64(area, fpu_xsave_components);
	else if (boot_cpu.fxsr)
		fxsave64(area);
}

void fpu_init(void)
{
	void *raw;

	if (boot_cpu.xsave) {
		fpu_xsave_components = xgetbv(XCR_XFEATURE_ENABLED);
		/* EBX: bytes needed for the components enabled in XCR0. */
		area_size = cpuid(CPUID_LEAF_XSAVE, 0).ebx;
	} else {
		area_size = FXSAVE_AREA_SIZE;
	}
	area_size = ALIGN_UP(area_size, FPU_AREA_ALIGN);
	/* kmalloc aligns to 16: take room to align to 64 by hand. */
	raw = kzalloc(area_size + FPU_AREA_ALIGN);
	if (!raw)
		panic("fpu: no memory for the initial state");
	initial_state = (void *)ALIGN_UP((uintptr_t)raw, FPU_AREA_ALIGN);
	fninit();
	if (boot_cpu.fxsr)
		ldmxcsr(MXCSR_DEFAULT);
	fpu_save(initial_state);
	kprintf("fpu: %s, %zu-byte save area\n", fpu_method(), area_size);
}

size_t fpu_area_size(void)
{
	return area_size;
}

void fpu_init_area(void *area)
{
	memcpy(area, initial_state, area_size);
}

void fpu_switch_fxsave(void *save, const void *restore)
{
	if (boot_cpu.fxsr) {
		fxsave64(save);
		fxrstor64(restore);
	}
}

const char *fpu_method(void)
{
	return boot_cpu.xsave ? "xsave" : boot_cpu.fxsr ? "fxsave" : "none";
}
