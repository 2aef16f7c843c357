// SPDX-License-Identifier: MIT
/*
 * panic: print everything that helps find the bug, once, then stop.
 * A panic inside a panic (say the backtrace walks into a bad page) prints a
 * single line and stops, so a broken panic path cannot loop.
 */
#include "trap/panic.h"
#include "console/console.h"
#include "arch/extable.h"
#include "console/kprintf.h"
#include "cpu/platform.h"
#include "trap/symbols.h"
#include "trap/trap.h"
#include "arch/x86.h"
#include "lib/lab.h"
#include "arch/layout.h"

#define BACKTRACE_MAX_FRAMES 24

static int panic_depth;
static bool exit_on_panic;
static void (*stop_other_cpus)(void);
static bool stopping_others;

void panic_set_exit_on_panic(bool exit)
{
	exit_on_panic = exit;
}

void panic_set_stop_other_cpus(void (*stop)(void))
{
	__atomic_store_n(&stop_other_cpus, stop, __ATOMIC_RELEASE);
}

bool panic_stopping_others(void)
{
	return __atomic_load_n(&stopping_others, __ATOMIC_SEQ_CST);
}

/*
 * The flag before the NMI: a CPU the NMI reaches must see it set. The
 * store is seq_cst (XCHG or MOV+MFENCE on x86, a full barrier: the ICR
 * write of the NMI cannot pass it) and pairs with the load in
 * panic_stopping_others, which the NMI handler runs (trap/trap.c). Only
 * the first panic gets here (panic_depth), so this runs at most once.
 */
static void stop_others(void)
{
	void (*stop)(void) =
		__atomic_load_n(&stop_other_cpus, __ATOMIC_ACQUIRE);

	if (!stop)
		return;
	__atomic_store_n(&stopping_others, true, __ATOMIC_SEQ_CST);
	stop();
}

static void print_frame_line(int depth, uint64_t rip)
{
	char symbol[96];

	symbol_format(rip, symbol, sizeof(symbol));
	kprintf("  #%-2d %#018llx %s\n", depth, (unsigned long long)rip,
		symbol);
}

/*
 * With frame pointers, each frame begins with the caller's RBP and then the
 * return address. Each read goes through probe_read_u64, so a corrupt chain
 * ends the walk instead of faulting.
 */
void backtrace_print(uint64_t rip, uint64_t rbp)
{
	kprintf("backtrace:\n");
	print_frame_line(0, rip);
	for (int depth = 1; depth < BACKTRACE_MAX_FRAMES && rbp; depth++) {
		uint64_t next_rbp, ret;

		if (!IS_ALIGNED(rbp, 8) || rbp < DIRECT_MAP_BASE ||
		    probe_read_u64((void *)rbp, &next_rbp) ||
		    probe_read_u64((void *)(rbp + 8), &ret) || !ret)
			break;
		print_frame_line(depth, ret);
		/* Frames live higher up the stack as we go: stop on a loop. */
		if (next_rbp <= rbp)
			break;
		rbp = next_rbp;
	}
}

static __noreturn void panic_common(const struct trap_frame *f, const char *fmt,
				    va_list ap)
{
	cli();
	/* Only the first panic, on any CPU, reports: a second one (nested,
	 * or on another CPU racing the NMI) prints one line and stops. */
	if (__atomic_fetch_add(&panic_depth, 1, __ATOMIC_SEQ_CST)) {
		console_enter_panic();
		kprintf("\nPANIC while panicking: ");
		kvprintf(fmt, ap);
		kprintf("\n");
		if (exit_on_panic)
			platform_exit(false);
		halt_forever();
	}
	stop_others();
	console_enter_panic();
	kprintf("\nPANIC: ");
	kvprintf(fmt, ap);
	kprintf("\n");
	trap_print_registers(f);
	backtrace_print(f->rip, f->rbp);
	if (exit_on_panic)
		platform_exit(false);
	kprintf("PANIC: system halted\n");
	halt_forever();
}

__noreturn void panic(const char *fmt, ...)
{
	struct trap_frame f;
	va_list ap;

	capture_registers(&f);
	va_start(ap, fmt);
	panic_common(&f, fmt, ap);
}

/* A lab tree's stub (lib/lab.h): the kernel cannot go on without it. */
void lab_unwritten(const char *lab, const char *handout, const char *function)
{
	panic("lab %s: %s() is not written yet (%s)", lab, function, handout);
}

__noreturn void panic_with_frame(const struct trap_frame *frame,
				 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	panic_common(frame, fmt, ap);
}
