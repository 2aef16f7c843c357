// SPDX-License-Identifier: MIT
/*
 * The boot CPU's path from boot/entry.asm to the job the command line asks
 * for (docs/boot.md):
 *
 *   consoles -> CPU features -> descriptor tables -> boot information and
 *   options -> frame allocator -> kernel page tables -> heap -> boot report
 *   -> tests or the default job -> exit (emulators) or halt (hardware).
 */
#include "apic/ioapic.h"
#include "apic/lapic.h"
#include "apic/pic.h"
#include "apic/timer.h"
#include "apic/tsc.h"
#include "bench/bench.h"
#include "bench/screen.h"
#include "acpi/acpi.h"
#include "acpi/tables.h"
#include "boot/boot_modules.h"
#include "lib/cmdline.h"
#include "lib/inject.h"
#include "console/console.h"
#include "cpu/cpu.h"
#include "trap/crash.h"
#include "console/fbcon.h"
#include "cpu/gdt.h"
#include "trap/idt.h"
#include "console/kprintf.h"
#include "boot/multiboot2.h"
#include "boot/options.h"
#include "lib/option.h"
#include "trap/panic.h"
#include "cpu/platform.h"
#include "cpu/topology.h"
#include "console/serial.h"
#include "lib/string.h"
#include "proc/syscall.h"
#include "proc/task.h"
#include "arch/x86.h"
#include "mm/kmap.h"
#include "arch/layout.h"
#include "mm/pagetable.h"
#include "mm/pmm.h"
#include "mm/tlb.h"
#include "mm/tlb_options.h"
#include "sched/sched.h"
#include "smp/call.h"
#include "cpu/percpu.h"
#include "init/smp_boot.h"
#include "tests/ktest.h"

void kmain(uint32_t magic, uint64_t mbi_phys);

static struct boot_info boot;

/*
 * The boot sequence's own options: how the job ends (done=) and which user
 * programs are the job (init=). Every other option belongs to the
 * subsystem it steers; options_parse collects them all.
 */
enum done_action {
	DONE_EXIT, /* done=exit: end the emulator (halt on hardware) */
	DONE_HALT, /* done=halt: halt, keep the screen (for screendumps) */
};
static const char *const done_words[] =
	{[DONE_EXIT] = "exit", [DONE_HALT] = "halt", NULL};
static const struct option_desc done_desc = {
	.name = "done",
	.type = OPTION_CHOICE,
	.choices = done_words,
	.help = "when the job is done: end the emulator (QEMU's "
		"isa-debug-exit, Bochs's shutdown port), or halt with the "
		"screen kept; real hardware always halts"};
static struct option_value done_option;
OPTION(11, done, &done_desc, &done_option, NULL, NULL);

/*
 * boot_bug=: the screen's boot path forced, for the tests (lib/inject.h).
 * late-screen: the screen does not start early, as if the early window
 * could not reach the framebuffer; it starts with the kernel page tables,
 * with the early log. early-panic: the same, and a panic after the CPU
 * census, before the memory map: the panic must start the screen itself,
 * through the early window, and show the census and itself. late-panic:
 * the screen starts late, then a panic as soon as the kernel page tables
 * are live: the screen's late start must have drawn the kept census.
 */
enum boot_bug {
	BOOT_BUG_NONE,
	BOOT_BUG_LATE_SCREEN,
	BOOT_BUG_EARLY_PANIC,
	BOOT_BUG_LATE_PANIC,
};
static const char *const boot_bug_words[] = {
	[BOOT_BUG_NONE] = "none",
	[BOOT_BUG_LATE_SCREEN] = "late-screen",
	[BOOT_BUG_EARLY_PANIC] = "early-panic",
	[BOOT_BUG_LATE_PANIC] = "late-panic",
	NULL};
static const struct option_desc boot_bug_desc = {
	.name = "boot_bug",
	.type = OPTION_CHOICE,
	.choices = boot_bug_words,
	.help = "force the screen's late path on purpose (tests): start it "
		"only with the kernel page tables, or also panic after the CPU "
		"census, before them, or just after them"};
static struct option_value boot_bug_option;
static unsigned boot_bug_choice; /* enum boot_bug, for INJECTED() */

static void boot_bug_option_set(const struct option_value *value)
{
	boot_bug_choice = value->choice;
}
OPTION(14, boot_bug, &boot_bug_desc, &boot_bug_option, NULL,
       boot_bug_option_set);

/* init=: one word per boot module, filled before parsing. */
static const char *init_words[OPTION_LIST_MAX + 1];
static const struct option_desc init_desc = {
	.name = "init",
	.type = OPTION_LIST,
	.choices = init_words,
	.help = "user programs to start after boot, by boot module name; the "
		"kernel waits for them and ends with success if each exits "
		"with status 0. `all` starts every program that runs on its "
		"own: those that are parts of in-kernel tests stay out"};
static struct option_value init_option;

static void init_option_prepare(void)
{
	size_t n = MIN(boot_module_count(), (size_t)OPTION_LIST_MAX);

	for (size_t i = 0; i < n; i++)
		init_words[i] = boot_module_name(i);
	init_words[n] = NULL;
}
OPTION(70, init, &init_desc, &init_option, init_option_prepare, NULL);

/*
 * Programs that are parts of in-kernel tests (tests/kernel/test_user.c and
 * test_race.c), not jobs of their own. A test starts each with the
 * arguments and handles it needs and judges how it ends. Some end badly on
 * purpose: fault dies of a fault, entry of a forbidden way into the
 * kernel, killrace exits with its own status. The others fail when started
 * alone: bench waits for orders from the kernel, race needs a time to run
 * and replyrace a server. init=all leaves them out, so that it succeeds on
 * a healthy kernel; init=NAME still starts one.
 */
static const char *const test_parts[] = {"bench",    "entry", "fault",
					 "killrace", "race",  "replyrace"};

static bool is_test_part(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(test_parts); i++) {
		if (!strcmp(name, test_parts[i]))
			return true;
	}
	return false;
}

static void report_boot_problem(void *ctx, const char *fmt, ...)
{
	va_list ap;

	(void)ctx;
	kprintf("boot: warning: ");
	va_start(ap, fmt);
	kvprintf(fmt, ap);
	va_end(ap);
	kprintf("\n");
}

/*
 * The boot information is below 4 GiB (GRUB passes a 32-bit pointer), where
 * the boot page tables map everything at DIRECT_MAP_BASE.
 */
static void read_boot_information(uint64_t mbi_phys)
{
	const uint32_t *mbi = phys_to_virt(mbi_phys);

	if (mb2_parse(mbi, *mbi, &boot, report_boot_problem, NULL))
		panic("boot: the multiboot2 boot information at %#llx is "
		      "unusable (see the warnings above)",
		      (unsigned long long)mbi_phys);
	boot_modules_register(&boot);
}

static uint64_t framebuffer_bytes(void)
{
	return (uint64_t)boot.fb.pitch * boot.fb.height;
}

/*
 * Maps the framebuffer for the boot page tables: EGA text lies below
 * 1 MiB, in their direct map; a linear framebuffer, often above 4 GiB,
 * gets the early window (mm/kmap_early.c). From here on a panic draws on
 * the screen.
 */
static void find_screen(void)
{
	void *virt;

	if (boot.fb.kind == FB_KIND_NONE)
		return;
	if (boot.fb.kind == FB_KIND_EGA_TEXT)
		virt = phys_to_virt(boot.fb.phys);
	else
		virt = kmap_early_window(boot.fb.phys, framebuffer_bytes());
	console_screen_found(&boot.fb, virt);
}

/* With console= and font_scale= in force: the kept lines are drawn. */
static void start_screen(void)
{
	if (INJECTED(boot, BOOT_BUG_LATE_SCREEN) ||
	    INJECTED(boot, BOOT_BUG_EARLY_PANIC) ||
	    INJECTED(boot, BOOT_BUG_LATE_PANIC))
		return;
	console_screen_start();
}

static const char *screen_description(void)
{
	switch (console_screen_state()) {
	case CONSOLE_SCREEN_ON:
		return "";
	case CONSOLE_SCREEN_LATER:
		return " (drawn from the kernel page tables on)";
	case CONSOLE_SCREEN_ABSENT:
		break;
	}
	return " (a mode the console cannot draw in)";
}

static void switch_to_kernel_page_tables(void)
{
	void *fb_virt = NULL;

	kmap_build(&boot);
	if (boot.fb.kind != FB_KIND_NONE)
		fb_virt = ioremap(boot.fb.phys, framebuffer_bytes(),
				  PTE_CACHE_WC);
	/* The screen moves: what is printed in between is kept, then
	 * drawn at the new mapping. */
	console_screen_pause();
	kmap_activate();
	console_screen_resume(fb_virt);
}

static void print_memory_map(void)
{
	kprintf("memory map (%zu entries):\n", boot.mmap_count);
	for (size_t i = 0; i < boot.mmap_count; i++) {
		const struct mb2_region *r = &boot.mmap[i];

		kprintf("  0x%012llx-0x%012llx %s\n",
			(unsigned long long)r->base,
			(unsigned long long)(r->base + r->length - 1),
			mb2_mmap_type_name(r->type));
	}
}

/* The local APIC, time sources, then the other CPUs. */
static void start_cpus(void)
{
	const struct madt_info *madt = acpi_madt();

	lapic_init_boot_cpu(madt ? madt->lapic_address : 0);
	this_cpu()->apic_id = lapic_id();
	ioapic_init(madt);
	tsc_init();
	apic_timer_init_this_cpu();
	smp_call_init_cpu(this_cpu());
	sched_init();
	smp_boot_cpus(madt);
	smp_report();
}

static void print_boot_summary(void)
{
	char invlpgb[48];

	kprintf("boot: cpus=%u apic=%s pcid=%d invpcid=%d invlpgb=%d "
		"accel=%s mem_mib=%llu tsc_mhz=%llu tsc=%s timer=%s\n",
		cpu_count, lapic_mode_name(), tlb_policy.pcid,
		tlb_policy.invpcid, tlb_policy.invlpgb, platform_accel_name(),
		(unsigned long long)(pmm_total_count() >> (20 - PAGE_SHIFT)),
		(unsigned long long)(tsc_hz() / 1000000), tsc_source(),
		apic_timer_mode_name());
	kprintf("boot: INVLPGB/TLBSYNC: %s\n",
		tlb_invlpgb_census(&tlb_policy, &boot_cpu, invlpgb,
				   sizeof(invlpgb)));
}

/*
 * Runs the programs init= names, one task each, and waits for them all.
 * init=all names every program, and then the parts of tests stay out.
 */
static bool run_init_programs(const struct option_words *programs)
{
	static int ids[OPTION_LIST_MAX];
	size_t count = MIN(boot_module_count(), (size_t)OPTION_LIST_MAX);
	bool every = true, ok = true;

	for (size_t i = 0; i < count; i++)
		every &= option_words_has(programs, i);
	for (size_t i = 0; i < count; i++) {
		ids[i] = 0;
		if (!option_words_has(programs, i) ||
		    (every && is_test_part(boot_module_name(i))))
			continue;
		ids[i] = task_spawn(boot_module_name(i), 0, NULL, 0);
		if (ids[i] < 0) {
			kprintf("init: %s did not start (%d)\n",
				boot_module_name(i), ids[i]);
			ok = false;
		}
	}
	for (size_t i = 0; i < count; i++) {
		long status = 0;
		int err;

		if (ids[i] <= 0)
			continue;
		/* Judge a status only when the wait returned one. */
		err = task_wait(ids[i], &status);
		if (err) {
			kprintf("init: %s (task %d): no exit status (%d)\n",
				boot_module_name(i), ids[i], err);
			ok = false;
			continue;
		}
		kprintf("init: %s (task %d) exited with status %ld\n",
			boot_module_name(i), ids[i], status);
		ok &= status == 0;
	}
	return ok;
}

static __noreturn void finish(bool success)
{
	tlb_stats_print_if_requested();
	if (done_option.choice == DONE_HALT) {
		kprintf("shootdown: %s; halted (done=halt)\n",
			success ? "done" : "stopped on failure");
		halt_forever();
	}
	platform_exit(success);
}

void kmain(uint32_t magic, uint64_t mbi_phys)
{
	serial_init();
	cpu_probe(&boot_cpu);
	cpu_topology_read_this_cpu(0);
	gdt_load(&boot_cpu_tables);
	percpu_init_boot_cpu();
	idt_load();
	pic_remap_and_mask();
	cpu_enable_features(&boot_cpu);
	syscall_init_this_cpu();
	platform_detect();

	KASSERT(magic == MB2_BOOT_MAGIC, "boot/entry.asm checked the magic");
	read_boot_information(mbi_phys);
	find_screen();

	kprintf("shootdown: a teaching kernel for TLB coherence\n");
	kprintf("boot: loader \"%s\", command line \"%s\"\n",
		boot.loader_name ? boot.loader_name : "?", boot.cmdline);
	/* Every subsystem's options, console= among them, are in force after
	 * this; the warnings print before console= moves the output. */
	options_parse(boot.cmdline);
	start_screen();
	/* The CPU's known errata, with cpu_quirks= in force: before the
	 * census reports them and before mm/ settles PCID and INVPCID. */
	cpu_apply_quirks(&boot_cpu);
	/* From here on a panic ends an emulator run at once (done=exit). */
	panic_set_exit_on_panic(done_option.choice == DONE_EXIT);
	if (options_help_requested()) {
		options_print_help();
		finish(true);
	}
	if (boot.fb.kind == FB_KIND_NONE)
		kprintf("boot: serial %s, screen absent\n",
			serial_present() ? "COM1" : "absent");
	else if (fbcon_font_scale_for(&boot.fb) > 1)
		kprintf("boot: serial %s, screen framebuffer %ux%u, font "
			"x%u%s\n",
			serial_present() ? "COM1" : "absent", boot.fb.width,
			boot.fb.height, fbcon_font_scale_for(&boot.fb),
			screen_description());
	else
		kprintf("boot: serial %s, screen framebuffer %ux%u%s\n",
			serial_present() ? "COM1" : "absent", boot.fb.width,
			boot.fb.height, screen_description());
	options_report();
	cpu_report(&boot_cpu);
	if (INJECTED(boot, BOOT_BUG_EARLY_PANIC))
		panic("boot_bug=early-panic: a deliberate panic before the "
		      "kernel page tables");
	print_memory_map();
	for (size_t i = 0; i < boot.module_count; i++)
		kprintf("boot: module %s at %#llx, %llu bytes\n",
			boot.modules[i].cmdline,
			(unsigned long long)boot.modules[i].start,
			(unsigned long long)(boot.modules[i].end -
					     boot.modules[i].start));

	pmm_init(&boot, mbi_phys);
	switch_to_kernel_page_tables();
	if (INJECTED(boot, BOOT_BUG_LATE_PANIC))
		panic("boot_bug=late-panic: a deliberate panic with the "
		      "screen just started");
	acpi_init(&boot);
	acpi_print_tables();
	start_cpus();
	print_boot_summary();
	/* From here on the boot thread is a thread like any other. */
	sti();

	crash_if_requested();
	if (ktest_requested())
		finish(ktest_run_requested());
	kprintf("shootdown: boot complete\n");
	if (option_words_any(&init_option.words) &&
	    !run_init_programs(&init_option.words))
		finish(false);
	/* The default job: the benchmarks, all unless bench= names some. */
	if (!option_words_any(&init_option.words) || bench_requested()) {
		bool measured = bench_run_requested();

		bench_screen_show();
		finish(measured);
	}
	finish(true);
}
