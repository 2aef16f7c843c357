// SPDX-License-Identifier: MIT
/*
 * Local APIC set-up and the calls the rest of the kernel uses.
 *
 * Each CPU: enable the APIC globally (IA32_APIC_BASE.EN, plus EXTD for
 * x2APIC), accept every priority (TPR 0), route APIC errors to
 * VECTOR_APIC_ERROR, mask LINT0 (the 8259 is masked anyway), then
 * software-enable the APIC with the spurious vector.
 *
 * LINT1: PC boards wire the chipset's NMI line (memory parity, the NMI
 * button, a watchdog) to LINT1, and the MADT's local-APIC NMI entries name
 * the CPUs whose pin it is. Like Linux (arch/x86/kernel/apic/apic.c,
 * setup_local_APIC), the boot CPU delivers it as an NMI and every AP keeps
 * LINT1 masked: one CPU is enough to report a board NMI, and an AP whose
 * LINT1 is not wired could see a floating pin as NMIs. The panic path does
 * not need LINT1: it sends NMIs by IPI.
 */
#include "apic/lapic.h"
#include "apic/lapic_backend.h"
#include "apic/startup_probe.h"
#include "acpi/acpi.h"
#include "cpu/cpu.h"
#include "console/kprintf.h"
#include "lib/option.h"
#include "trap/panic.h"
#include "trap/trap.h"
#include "arch/x86.h"
#include "mm/kmap.h"
#include "mm/pagetable.h"

/* IA32_APIC_BASE (SDM Vol. 3A, 11.4.4). */
#define APIC_BASE_X2APIC    0x400ULL /* EXTD */
#define APIC_BASE_ENABLE    0x800ULL /* EN */
#define APIC_BASE_ADDR_MASK 0x000ffffffffff000ULL

static const struct lapic_backend *backend;
static enum lapic_mode mode;

/* x2apic=off keeps the xAPIC (MMIO) back end even where x2APIC exists. */
enum { X2APIC_ON, X2APIC_OFF };
static const char *const x2apic_words[] =
	{[X2APIC_ON] = "on", [X2APIC_OFF] = "off", NULL};
static const struct option_desc x2apic_desc = {
	.name = "x2apic",
	.type = OPTION_CHOICE,
	.choices = x2apic_words,
	.help = "use x2APIC when the CPU has it; `off` forces xAPIC (MMIO), "
		"unless the firmware already switched to x2APIC, which cannot "
		"be undone without a reset"};
static struct option_value x2apic_option;
OPTION(40, x2apic, &x2apic_desc, &x2apic_option, NULL, NULL);

enum lapic_mode lapic_mode(void)
{
	return mode;
}

const char *lapic_mode_name(void)
{
	return backend ? backend->name : "none";
}

uint32_t lapic_read(uint32_t reg)
{
	return backend->read(reg);
}

void lapic_write(uint32_t reg, uint32_t value)
{
	backend->write(reg, value);
}

void lapic_eoi(void)
{
	backend->write(LAPIC_EOI, 0);
}

uint32_t lapic_id(void)
{
	return backend->id();
}

void lapic_send_ipi(uint32_t destination, uint32_t command)
{
	/* The xAPIC ICR takes two writes: no IPI may be sent between them
	 * from an interrupt handler on this CPU. */
	uint64_t flags = irq_save();

	backend->send_ipi(destination, command);
	/* The injection kernel notes INIT and STARTUP for the grade
	 * (apic/startup_probe.h). */
	if (INJECT_BUILT)
		startup_probe_ipi(destination, command);
	irq_restore(flags);
}

uint32_t lapic_read_errors(void)
{
	/* The ESR latches on a write (SDM Vol. 3A, 11.5.3). */
	backend->write(LAPIC_ESR, 0);
	return backend->read(LAPIC_ESR);
}

static void enable_this_cpu(bool boot_cpu)
{
	uint64_t base = rdmsr(MSR_APIC_BASE);

	/* Disabled -> xAPIC -> x2APIC: the SDM's legal transitions
	 * (Vol. 3A, 11.12.5), one step at a time. */
	if (!(base & APIC_BASE_ENABLE)) {
		base |= APIC_BASE_ENABLE;
		wrmsr(MSR_APIC_BASE, base);
	}
	if (mode == LAPIC_X2APIC && !(base & APIC_BASE_X2APIC))
		wrmsr(MSR_APIC_BASE, base | APIC_BASE_X2APIC);

	lapic_write(LAPIC_TPR, 0);
	lapic_write(LAPIC_LVT_ERROR, VECTOR_APIC_ERROR);
	lapic_write(LAPIC_LVT_LINT0, LVT_MASKED);
	lapic_write(LAPIC_LVT_LINT1, boot_cpu ? LVT_DELIVERY_NMI
					      : LVT_MASKED | LVT_DELIVERY_NMI);
	lapic_write(LAPIC_LVT_TIMER, LVT_MASKED);
	lapic_write(LAPIC_SPURIOUS, LAPIC_SPURIOUS_ENABLE | VECTOR_SPURIOUS);
	lapic_read_errors();
	lapic_eoi();
}

static void apic_error_interrupt(struct trap_frame *frame)
{
	(void)frame;
	kprintf("apic: error interrupt on APIC ID %u: ESR %#x\n", lapic_id(),
		lapic_read_errors());
}

const char *lapic_choose_mode(const struct lapic_mode_facts *f,
			      enum lapic_mode *out)
{
	*out = LAPIC_XAPIC;
	if (f->firmware_x2apic) {
		*out = LAPIC_X2APIC;
		if (f->dmar_opt_out)
			return "firmware enabled x2APIC, so the DMAR's x2APIC "
			       "opt-out cannot be honoured";
		return f->allow_x2apic ? "firmware enabled x2APIC"
				       : "firmware enabled x2APIC (x2apic=off "
					 "cannot leave it without a reset)";
	}
	if (!f->cpu_x2apic)
		return "the CPU has no x2APIC";
	if (!f->allow_x2apic)
		return "x2apic=off";
	if (f->dmar_opt_out)
		return "the DMAR table opts out of x2APIC (and no interrupt "
		       "remapping here)";
	*out = LAPIC_X2APIC;
	return "the CPU has x2APIC";
}

void lapic_init_boot_cpu(uint64_t lapic_phys)
{
	uint64_t base = rdmsr(MSR_APIC_BASE);
	const struct dmar_info *dmar = acpi_dmar();
	struct lapic_mode_facts facts = {
		.cpu_x2apic = boot_cpu.x2apic,
		.firmware_x2apic =
			(base & APIC_BASE_ENABLE) && (base & APIC_BASE_X2APIC),
		.allow_x2apic = x2apic_option.choice == X2APIC_ON,
		.dmar_opt_out = dmar && dmar->x2apic_opt_out,
	};
	const char *why = lapic_choose_mode(&facts, &mode);

	if (mode == LAPIC_X2APIC) {
		backend = &x2apic_backend;
	} else {
		backend = &xapic_backend;
		if (!lapic_phys)
			lapic_phys = base & APIC_BASE_ADDR_MASK;
		xapic_registers = ioremap(lapic_phys, PAGE_SIZE, PTE_CACHE_UC);
	}
	trap_set_handler(VECTOR_APIC_ERROR, apic_error_interrupt);
	trap_set_spurious(VECTOR_SPURIOUS, NULL);
	enable_this_cpu(true);
	kprintf("apic: %s, boot CPU APIC ID %u, version %#x; chosen because "
		"%s\n",
		backend->name, lapic_id(), lapic_read(LAPIC_VERSION) & 0xff,
		why);
}

void lapic_init_this_cpu(void)
{
	KASSERT(backend, "the boot CPU sets the APIC mode first");
	enable_this_cpu(false);
}
