// SPDX-License-Identifier: MIT
/*
 * Starting the application processors (APs).
 *
 * For each CPU the MADT lists as enabled, other than the boot CPU, in MADT
 * order:
 *  1. allocate its per-CPU data, descriptor tables and a guarded stack;
 *  2. fill the trampoline's parameter block (init/trampoline.asm);
 *  3. INIT, wait 10 ms, STARTUP, wait 200 us, STARTUP again if the CPU has
 *     not yet said it is alive (the MP specification's sequence; modern CPUs
 *     and emulators start on the first STARTUP, old ones may need both);
 *  4. wait for it to announce itself in ap_entry, at most AP_TIMEOUT_NS;
 *     if it does not, send INIT again so it cannot wake later and run on
 *     the parameters of the next CPU, and report it.
 * The AP loads the real kernel page tables, its GDT/TSS/IDT, its GS base,
 * its local APIC and timer, marks itself online, and idles with interrupts
 * on, ready for cross-CPU calls.
 */
#include "init/smp_boot.h"
#include "apic/lapic.h"
#include "apic/startup_probe.h"
#include "apic/timer.h"
#include "apic/tsc.h"
#include "acpi/tables.h"
#include "cpu/cpu.h"
#include "cpu/cpu_quirks.h"
#include "trap/idt.h"
#include "console/kprintf.h"
#include "trap/panic.h"
#include "cpu/platform.h"
#include "lib/option.h"
#include "cpu/topology.h"
#include "lib/string.h"
#include "proc/syscall.h"
#include "arch/x86.h"
#include "mm/heap.h"
#include "mm/kmap.h"
#include "mm/kstack.h"
#include "arch/layout.h"
#include "mm/pagetable.h"
#include "mm/pmm.h"
#include "mm/tlb.h"
#include "sched/sched.h"
#include "smp/call.h"
#include "cpu/percpu.h"
#include "lib/inject.h"
#include "sync/shared.h"

#define INIT_DELAY_NS	 10000000ULL /* 10 ms after INIT */
#define STARTUP_DELAY_NS 200000ULL   /* 200 us after each STARTUP */
/* Generous: TCG with many vCPUs on a loaded host, and Bochs, are slow. */
#define AP_TIMEOUT_NS 2000000000ULL /* 2 s */
/* ap_bug=late: well inside AP_TIMEOUT_NS, far longer than a start-up. */
#define AP_LATE_NS (AP_TIMEOUT_NS / 4)

struct trampoline_params {
	uint64_t cr3;
	uint64_t efer;
	uint64_t stack;
	uint64_t percpu;
	uint64_t entry;
};

extern const char trampoline_start[], trampoline_end[];
extern const struct trampoline_params trampoline_params;

/* Set by the AP in ap_entry (release), polled by the boot CPU (acquire). */
static volatile uint32_t ap_alive;

/* One row per CPU the MADT parse kept (at most MAX_CPUS), plus one for the
 * boot CPU, which a bad MADT may leave out. */
static struct cpu_report_line {
	uint32_t apic_id;
	enum cpu_state state;
	int index; /* -1 when not online */
} report[MAX_CPUS + 1];
static size_t report_count;

__noreturn void ap_entry(struct percpu *p);

/*
 * ap_bug=: the first AP to run ap_entry misbehaves, so that the grade of
 * lab L0 sees whether the boot CPU waits for an AP that answers late and
 * gives up on one that never answers (lib/inject.h).
 */
enum ap_bug { AP_BUG_NONE, AP_BUG_LATE, AP_BUG_SILENT };
static const char *const ap_bug_words[] = {[AP_BUG_NONE] = "none",
					   [AP_BUG_LATE] = "late",
					   [AP_BUG_SILENT] = "silent",
					   NULL};
static const struct option_desc ap_bug_desc = {
	.name = "ap_bug",
	.type = OPTION_CHOICE,
	.choices = ap_bug_words,
	.help = "make the first AP to start misbehave on purpose (labs): "
		"`late` announces itself 0.5 s late, `silent` never does; "
		"the boot CPU must wait for the one and report the other as "
		"not answering"};
static struct option_value ap_bug_option;
static enum ap_bug ap_bug_choice;

static void ap_bug_set(const struct option_value *value)
{
	ap_bug_choice = (enum ap_bug)value->choice;
}
OPTION(42, ap_bug, &ap_bug_desc, &ap_bug_option, NULL, ap_bug_set);

/* APs that ran ap_entry: the first one is ap_bug='s. */
static SHARED(uint32_t) aps_entered;

static void ap_bug_first_entry(void)
{
	/* Relaxed: the count orders nothing else. */
	if (shared_fetch_add(&aps_entered, 1, __ATOMIC_RELAXED))
		return;
	if (INJECTED(ap, AP_BUG_LATE))
		tsc_delay_ns(AP_LATE_NS);
	if (INJECTED(ap, AP_BUG_SILENT))
		halt_forever();
}

static void announce(uint32_t value)
{
	__atomic_store_n(&ap_alive, value, __ATOMIC_RELEASE);
}

/* The first C code an AP runs (from init/trampoline.asm). */
__noreturn void ap_entry(struct percpu *p)
{
	struct cpu_features f;
	enum lfence_setting lfence;

	if (INJECT_BUILT)
		ap_bug_first_entry();
	/* The trampoline's tables identity-map low memory; drop them. */
	tlb_load_kernel_root(kernel_root);
	gdt_load(p->tables);
	percpu_install(p);
	idt_load();
	cpu_probe(&f);
	if (!cpu_features_agree(&f, &boot_cpu)) {
		announce(CPU_INCOMPATIBLE + 1);
		halt_forever();
	}
	cpu_enable_features(&boot_cpu);
	cpu_quirks_this_cpu(&boot_cpu, &lfence);
	/* The census shows the boot CPU's; an AP speaks only if it differs. */
	if (lfence != boot_cpu.lfence)
		kprintf("cpu: CPU %u: %s (on the boot CPU: %s)\n", p->index,
			cpu_lfence_setting_name(lfence),
			cpu_lfence_setting_name(boot_cpu.lfence));
	tsc_adjust_reset_this_cpu(p->index);
	cpu_topology_read_this_cpu(p->index);
	syscall_init_this_cpu();
	kmap_init_this_cpu();
	tlb_init_cpu(kernel_root);
	lapic_init_this_cpu();
	apic_timer_init_this_cpu();
	cpus[p->index] = p;
	/* Plain: the boot CPU starts no other AP until our announcement (a
	 * release, so it also publishes this bit). */
	cpumask_set(&cpu_online_mask, p->index);
	announce(CPU_ONLINE + 1);
	sched_run_idle_ap(p->stack_top);
}

/*
 * Page tables for the trampoline: the kernel half of the kernel's tables
 * plus the first 2 MiB identity-mapped in the user half, below 4 GiB
 * because the trampoline loads CR3 in 32-bit mode. They are never freed
 * (12 KiB, once), like every kernel page table (docs/tlb.md, "Page tables:
 * who frees them, and when"): an AP that did not answer in time may still
 * wake up and walk them.
 */
static uint64_t build_trampoline_root(void)
{
	uint64_t *pml4, *pdpt, *pd;
	uint64_t frames[3];

	for (int i = 0; i < 3; i++) {
		frames[i] = pmm_alloc_frame();
		if (!frames[i] || frames[i] >= GiB(4))
			panic("smp: no page below 4 GiB for the AP trampoline "
			      "tables");
	}
	pml4 = phys_to_virt(frames[0]);
	pdpt = phys_to_virt(frames[1]);
	pd = phys_to_virt(frames[2]);
	memcpy(pml4 + PML4_KERNEL_FIRST,
	       (uint64_t *)phys_to_virt(kernel_root) + PML4_KERNEL_FIRST,
	       (PML4_ENTRIES - PML4_KERNEL_FIRST) * sizeof(uint64_t));
	pml4[0] = frames[1] | PTE_PRESENT | PTE_WRITE;
	pdpt[0] = frames[2] | PTE_PRESENT | PTE_WRITE;
	pd[0] = 0 | PTE_PRESENT | PTE_WRITE | PTE_HUGE;
	return frames[0];
}

static bool wait_alive(uint64_t ns)
{
	uint64_t deadline = tsc_read_ordered() + ns_to_tsc(ns);

	while (tsc_read_ordered() < deadline) {
		if (__atomic_load_n(&ap_alive, __ATOMIC_ACQUIRE))
			return true;
		cpu_relax();
	}
	return __atomic_load_n(&ap_alive, __ATOMIC_ACQUIRE) != 0;
}

static enum cpu_state start_cpu(uint32_t apic_id, unsigned index,
				uint64_t trampoline_root)
{
	struct trampoline_params *params =
		phys_to_virt(TRAMPOLINE_PHYS + ((uint64_t)&trampoline_params -
						(uint64_t)trampoline_start));
	struct percpu *p = kzalloc(sizeof(*p));
	uint8_t startup_page = TRAMPOLINE_PHYS >> PAGE_SHIFT;

	if (!p || !(p->tables = kzalloc(sizeof(*p->tables))) ||
	    !(p->stack_top = kstack_alloc()))
		panic("smp: out of memory starting CPU %u", index);
	p->index = index;
	p->apic_id = apic_id;
	smp_call_init_cpu(p);
	/* The injection kernel notes whether the CPU started before has
	 * announced itself: its parameters are about to be overwritten. */
	if (INJECT_BUILT)
		startup_probe_moved_on(
			__atomic_load_n(&ap_alive, __ATOMIC_ACQUIRE) != 0);

	*params = (struct trampoline_params){
		.cr3 = trampoline_root,
		.efer = rdmsr(MSR_EFER),
		.stack = p->stack_top,
		.percpu = (uint64_t)p,
		.entry = (uint64_t)ap_entry,
	};
	__atomic_store_n(&ap_alive, 0, __ATOMIC_RELEASE);

	/* LAB(L0) begin: INIT, STARTUP (twice if need be), wait for it
	 * keeps: startup_page, wait_alive */
	lapic_send_ipi(apic_id, ICR_INIT | ICR_LEVEL_ASSERT);
	tsc_delay_ns(INIT_DELAY_NS);
	lapic_send_ipi(apic_id, ICR_STARTUP | startup_page);
	if (!wait_alive(STARTUP_DELAY_NS)) {
		lapic_send_ipi(apic_id, ICR_STARTUP | startup_page);
		wait_alive(AP_TIMEOUT_NS);
	}
	if (!__atomic_load_n(&ap_alive, __ATOMIC_ACQUIRE)) {
		/* Park it: it must not wake later on another CPU's stack. */
		lapic_send_ipi(apic_id, ICR_INIT | ICR_LEVEL_ASSERT);
		return CPU_NO_ANSWER;
	}
	return (enum cpu_state)(ap_alive - 1);
	/* LAB(L0) end */
}

/*
 * Stops every other online CPU with an NMI (trap/panic.c calls it), one
 * IPI per CPU to its APIC ID. Not the all-but-self shorthand: that also
 * reaches CPUs the kernel does not run, where it has nothing to stop: one
 * parked again with INIT waits for a STARTUP and is the firmware's until
 * then, and one halted for incompatible features is not the kernel's to
 * wake. An AP still between its STARTUP and its announcement is not in
 * the mask yet: it finishes its bring-up and idles.
 *
 * This CPU is found by its GS base, not this_cpu(): a CPU that panics
 * early in its bring-up has no per-CPU data yet (GS base 0, matching no
 * CPU), and a load through GS would fault inside the panic.
 */
static void stop_other_cpus(void)
{
	const struct percpu *self = (const struct percpu *)rdmsr(MSR_GS_BASE);

	for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++) {
		if (cpumask_test(&cpu_online_mask, cpu) && cpus[cpu] != self)
			lapic_send_ipi(cpus[cpu]->apic_id, ICR_NMI);
	}
}

static void add_report(uint32_t apic_id, enum cpu_state state, int index)
{
	KASSERT(report_count < ARRAY_SIZE(report), "CPU report full");
	report[report_count++] =
		(struct cpu_report_line){apic_id, state, index};
}

/* xAPIC IDs are 8 bits and 0xff is the broadcast address. */
#define XAPIC_MAX_ID 0xfe

/* maxcpus=N: a machine with many CPUs runs as a smaller one, and the
 * report of CPUs over the limit can be seen under an emulator. */
static const struct option_desc maxcpus_desc = {
	.name = "maxcpus",
	.type = OPTION_UINT,
	.min = 1,
	.max = MAX_CPUS,
	.def = MAX_CPUS,
	.help = "start at most this many CPUs, the boot CPU included; the "
		"others are reported as over the limit"};
static struct option_value maxcpus_option;
OPTION(41, maxcpus, &maxcpus_desc, &maxcpus_option, NULL, NULL);

/* CPUs the kernel cannot run, by reason; each reason said in one line. */
struct left_out {
	size_t table_full; /* MAX_CPUS (cpus[], the CPU masks) or maxcpus= */
	size_t needs_x2apic;
};

/* True (and counted) when an enabled CPU is beyond the kernel's limits. */
static bool over_limit(uint32_t apic_id, struct left_out *left)
{
	if (cpu_count >= maxcpus_option.number) {
		left->table_full++;
		return true;
	}
	if (lapic_mode() == LAPIC_XAPIC && apic_id > XAPIC_MAX_ID) {
		left->needs_x2apic++;
		return true;
	}
	return false;
}

static void report_left_out(const struct madt_info *madt,
			    const struct left_out *left)
{
	size_t listed;

	if (left->needs_x2apic)
		kprintf("smp: %zu CPUs have APIC IDs above %#x, which need "
			"x2APIC mode: left out\n",
			left->needs_x2apic, XAPIC_MAX_ID);
	if (!left->table_full && !madt->cpus_dropped)
		return;
	/* Enabled ones, and the ones the MADT parse had no room for. */
	listed = madt->cpus_enabled + madt->cpus_dropped;
	if (maxcpus_option.number < MAX_CPUS)
		kprintf("smp: %zu CPUs listed, %u started: maxcpus=%llu\n",
			listed, cpu_count,
			(unsigned long long)maxcpus_option.number);
	else
		kprintf("smp: %zu CPUs listed, %u started: the kernel supports "
			"at most %d\n",
			listed, cpu_count, MAX_CPUS);
}

void smp_boot_cpus(const struct madt_info *madt)
{
	uint32_t self = lapic_id();
	struct left_out left = {0};
	uint64_t root;
	size_t n;

	add_report(self, CPU_ONLINE, 0);
	if (!madt) {
		kprintf("smp: no MADT: running on the boot CPU only\n");
		return;
	}
	n = (size_t)((uintptr_t)trampoline_end - (uintptr_t)trampoline_start);
	KASSERT(n <= PAGE_SIZE, "trampoline is %zu bytes", n);
	memcpy(phys_to_virt(TRAMPOLINE_PHYS), trampoline_start, n);
	root = build_trampoline_root();

	for (size_t i = 0; i < madt->cpu_count; i++) {
		const struct madt_cpu *c = &madt->cpus[i];
		enum cpu_state state;

		if (c->enabled && c->apic_id != self &&
		    over_limit(c->apic_id, &left)) {
			add_report(c->apic_id, CPU_OVER_LIMIT, -1);
			continue;
		}
		/* LAB(L0) begin: start one listed CPU, or say why not
		 * keeps: c, state, self, root, start_cpu, stop_other_cpus */
		if (c->apic_id == self)
			continue;
		if (!c->enabled) {
			add_report(c->apic_id, CPU_ABSENT, -1);
			continue;
		}
		state = start_cpu(c->apic_id, cpu_count, root);
		if (state == CPU_ONLINE) {
			add_report(c->apic_id, CPU_ONLINE, (int)cpu_count);
			cpu_count++;
			/* A panic from now on stops the others first. */
			panic_set_stop_other_cpus(stop_other_cpus);
		} else {
			add_report(c->apic_id, state, -1);
			kprintf("smp: CPU with APIC ID %u %s; continuing "
				"without it\n",
				c->apic_id,
				state == CPU_NO_ANSWER
					? "did not answer INIT-SIPI-SIPI"
					: "lacks features the boot CPU has");
		}
		/* LAB(L0) end */
	}
	if (INJECT_BUILT) {
		startup_probe_moved_on(
			__atomic_load_n(&ap_alive, __ATOMIC_ACQUIRE) != 0);
		startup_probe_report(INIT_DELAY_NS);
	}
	report_left_out(madt, &left);
}

static const char *state_name(enum cpu_state s)
{
	switch (s) {
	case CPU_ONLINE:
		return "online";
	case CPU_ABSENT:
		return "absent (not enabled in the MADT)";
	case CPU_NO_ANSWER:
		return "no answer to INIT-SIPI-SIPI";
	case CPU_INCOMPATIBLE:
		return "incompatible features";
	case CPU_OVER_LIMIT:
		return "not supported (limit)";
	}
	return "?";
}

void smp_report(void)
{
	kprintf("cpus: index  APIC ID  state\n");
	for (size_t i = 0; i < report_count; i++) {
		if (report[i].index >= 0)
			kprintf("cpus: %5d  %7u  %s\n", report[i].index,
				report[i].apic_id, state_name(report[i].state));
		else
			kprintf("cpus:     -  %7u  %s\n", report[i].apic_id,
				state_name(report[i].state));
	}
}
