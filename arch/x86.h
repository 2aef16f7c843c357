/* SPDX-License-Identifier: MIT */
/*
 * x86-64 instruction wrappers and architectural constants. One instruction
 * per helper, named as in the Intel SDM; no other file in shootdown holds
 * inline assembly for these instructions.
 */
#ifndef ARCH_X86_H
#define ARCH_X86_H

#include "lib/types.h"
#include "arch/consts.h"

/* CR0 (SDM Vol. 3A, 2.5); PE, WP, PG come from arch/consts.h */
#define CR0_MP 0x00000002ULL /* monitor coprocessor */
#define CR0_EM 0x00000004ULL /* x87 emulation: must be clear for FPU use */
#define CR0_TS 0x00000008ULL /* task switched */
#define CR0_ET 0x00000010ULL /* extension type: reads 1 on every x86-64 */
#define CR0_NE 0x00000020ULL /* native x87 error reporting */
#define CR0_NW \
	0x20000000ULL /* not write-through (with CD: caches incoherent) */
#define CR0_CD 0x40000000ULL /* cache disable: no new lines are filled */

/* CR4 (SDM Vol. 3A, 2.5); PAE comes from arch/consts.h */
#define CR4_MCE	       0x00000040ULL /* machine-check exception enabled */
#define CR4_PGE	       0x00000080ULL /* global pages */
#define CR4_OSFXSR     0x00000200ULL /* FXSAVE/FXRSTOR and SSE */
#define CR4_OSXMMEXCPT 0x00000400ULL /* SIMD floating-point exceptions */
#define CR4_UMIP       0x00000800ULL /* SGDT, SIDT, SLDT, SMSW, STR: ring 0 only */
#define CR4_PCIDE      0x00020000ULL /* process-context identifiers */
#define CR4_OSXSAVE    0x00040000ULL /* XSAVE and XGETBV/XSETBV */
#define CR4_SMEP       0x00100000ULL /* supervisor-mode execution prevention */
#define CR4_SMAP       0x00200000ULL /* supervisor-mode access prevention */

/* RFLAGS */
#define RFLAGS_IF 0x00000200ULL /* interrupts enabled */
#define RFLAGS_DF 0x00000400ULL /* string direction */
#define RFLAGS_AC 0x00040000ULL /* alignment check / SMAP override */

/* Model-specific registers (SDM Vol. 4); EFER comes from arch/consts.h */
#define MSR_APIC_BASE 0x0000001bU
#define MSR_PAT	      0x00000277U

/* Intel IA32_BIOS_SIGN_ID, AMD PATCH_LEVEL: the microcode revision. */
#define MSR_BIOS_SIGN_ID 0x0000008bU

/* IA32_TSC_ADJUST (CPUID.7.0:EBX[1]): added to the TSC on every read. */
#define MSR_TSC_ADJUST 0x0000003bU

/*
 * AMD DE_CFG (BKDGs and PPRs of families 10h-17h): bit 1 makes LFENCE
 * dispatch-serialising, which is what orders RDTSC behind it.
 */
#define MSR_AMD_DE_CFG		    0xc0011029U
#define AMD_DE_CFG_LFENCE_SERIALIZE (1ULL << 1)

/* XCR0 (SDM Vol. 1, 13.3) */
#define XCR0_X87 0x1ULL
#define XCR0_SSE 0x2ULL
#define XCR0_AVX 0x4ULL

static inline uint8_t inb(uint16_t port)
{
	uint8_t value;

	__asm__ volatile("inb %1, %0" : "=a"(value) : "Nd"(port));
	return value;
}

static inline uint32_t inl(uint16_t port)
{
	uint32_t value;

	__asm__ volatile("inl %1, %0" : "=a"(value) : "Nd"(port));
	return value;
}

static inline void outb(uint16_t port, uint8_t value)
{
	__asm__ volatile("outb %0, %1" : : "a"(value), "Nd"(port));
}

static inline void outw(uint16_t port, uint16_t value)
{
	__asm__ volatile("outw %0, %1" : : "a"(value), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t value)
{
	__asm__ volatile("outl %0, %1" : : "a"(value), "Nd"(port));
}

static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;

	__asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}

static inline void wrmsr(uint32_t msr, uint64_t value)
{
	/* "memory": an MSR write can change how memory behaves (PAT, EFER). */
	__asm__ volatile("wrmsr"
			 :
			 : "c"(msr), "a"((uint32_t)value),
			   "d"((uint32_t)(value >> 32))
			 : "memory");
}

struct cpuid_regs {
	uint32_t eax, ebx, ecx, edx;
};

static inline struct cpuid_regs cpuid(uint32_t leaf, uint32_t subleaf)
{
	struct cpuid_regs r;

	__asm__ volatile("cpuid"
			 : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx)
			 : "a"(leaf), "c"(subleaf));
	return r;
}

static inline uint64_t read_cr0(void)
{
	uint64_t v;

	__asm__ volatile("mov %%cr0, %0" : "=r"(v));
	return v;
}

static inline void write_cr0(uint64_t v)
{
	__asm__ volatile("mov %0, %%cr0" : : "r"(v) : "memory");
}

static inline uint64_t read_cr2(void)
{
	uint64_t v;

	__asm__ volatile("mov %%cr2, %0" : "=r"(v));
	return v;
}

static inline uint64_t read_cr3(void)
{
	uint64_t v;

	__asm__ volatile("mov %%cr3, %0" : "=r"(v));
	return v;
}

/*
 * "memory": page-table stores before the write must not be moved after it,
 * and loads through the new tables must not be moved before it.
 */
static inline void write_cr3(uint64_t v)
{
	__asm__ volatile("mov %0, %%cr3" : : "r"(v) : "memory");
}

static inline uint64_t read_cr4(void)
{
	uint64_t v;

	__asm__ volatile("mov %%cr4, %0" : "=r"(v));
	return v;
}

/* "memory": toggling CR4.PGE flushes the TLB; see write_cr3. */
static inline void write_cr4(uint64_t v)
{
	__asm__ volatile("mov %0, %%cr4" : : "r"(v) : "memory");
}

/*
 * Writes every modified cache line back to memory and invalidates every
 * cache of this CPU (SDM Vol. 2B, WBINVD). "memory": no access may move
 * across it.
 */
static inline void wbinvd(void)
{
	__asm__ volatile("wbinvd" : : : "memory");
}

static inline uint64_t xgetbv(uint32_t index)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(index));
	return ((uint64_t)hi << 32) | lo;
}

static inline void xsetbv(uint32_t index, uint64_t value)
{
	__asm__ volatile("xsetbv"
			 :
			 : "c"(index), "a"((uint32_t)value),
			   "d"((uint32_t)(value >> 32)));
}

/* x87/SSE state (SDM Vol. 1, 13): the area must be 64-byte aligned. */
static inline void fninit(void)
{
	__asm__ volatile("fninit");
}

static inline void ldmxcsr(uint32_t value)
{
	__asm__ volatile("ldmxcsr %0" : : "m"(value));
}

static inline void xsave64(void *area, uint64_t components)
{
	__asm__ volatile("xsave64 (%0)"
			 :
			 : "r"(area), "a"((uint32_t)components),
			   "d"((uint32_t)(components >> 32))
			 : "memory");
}

static inline void xrstor64(const void *area, uint64_t components)
{
	__asm__ volatile("xrstor64 (%0)"
			 :
			 : "r"(area), "a"((uint32_t)components),
			   "d"((uint32_t)(components >> 32))
			 : "memory");
}

static inline void fxsave64(void *area)
{
	__asm__ volatile("fxsave64 (%0)" : : "r"(area) : "memory");
}

static inline void fxrstor64(const void *area)
{
	__asm__ volatile("fxrstor64 (%0)" : : "r"(area) : "memory");
}

/* "memory": the page-table store that made the flush necessary comes first. */
/* INVPCID types (SDM Vol. 2A, INVPCID) */
#define INVPCID_ADDRESS	       0 /* one address in one PCID, not global */
#define INVPCID_CONTEXT	       1 /* every non-global entry of one PCID */
#define INVPCID_ALL_GLOBAL     2 /* everything, global entries included */
#define INVPCID_ALL_NON_GLOBAL 3 /* every PCID's non-global entries */

/*
 * INVPCID takes a 16-byte descriptor in memory: the PCID (bits 11:0 of the
 * first quadword) and the address. "memory", as for invlpg: page-table
 * stores before it must not be moved after it.
 */
static inline void invpcid(unsigned type, uint16_t pcid, uint64_t va)
{
	struct {
		uint64_t pcid, address;
	} descriptor = {pcid, va};

	__asm__ volatile("invpcid %0, %1"
			 :
			 : "m"(descriptor), "r"((uint64_t)type)
			 : "memory");
}

static inline void invlpg(uint64_t va)
{
	__asm__ volatile("invlpg (%0)" : : "r"(va) : "memory");
}

/*
 * AMD's broadcast invalidation (APM Vol. 3, INVLPGB and TLBSYNC), spelled
 * as bytes so that assemblers older than the instructions build this.
 * INVLPGB takes its request in RAX (address and flags), ECX (page count
 * and stride) and EDX (PCID and ASID). "memory": the page-table stores it
 * covers must not be moved after it by the compiler.
 */
#define INVLPGB_VA	       (1ULL << 0) /* RAX[63:12] is the first page */
#define INVLPGB_PCID	       (1ULL << 1) /* only EDX[31:16]'s PCID */
#define INVLPGB_ASID	       (1ULL << 2) /* only EDX[15:0]'s ASID */
#define INVLPGB_INCLUDE_GLOBAL (1ULL << 3) /* global entries too */
#define INVLPGB_FINAL_ONLY     (1ULL << 4) /* keep cached upper levels */
#define INVLPGB_INCLUDE_NESTED (1ULL << 5) /* guest nested translations */
#define INVLPGB_ECX_STRIDE_2M  (1U << 31)  /* pages 2 MiB apart */
#define INVLPGB_EDX_PCID_SHIFT 16
static inline void invlpgb(uint64_t rax, uint32_t ecx, uint32_t edx)
{
	__asm__ volatile(".byte 0x0f, 0x01, 0xfe"
			 :
			 : "a"(rax), "c"(ecx), "d"(edx)
			 : "memory");
}

/* Waits until every INVLPGB this CPU issued has completed everywhere. */
static inline void tlbsync(void)
{
	__asm__ volatile(".byte 0x0f, 0x01, 0xff" : : : "memory");
}

struct descriptor_pointer {
	uint16_t limit;
	uint64_t base;
} __packed;

static inline void lgdt(const struct descriptor_pointer *p)
{
	__asm__ volatile("lgdt %0" : : "m"(*p));
}

static inline void lidt(const struct descriptor_pointer *p)
{
	__asm__ volatile("lidt %0" : : "m"(*p));
}

static inline void ltr(uint16_t selector)
{
	__asm__ volatile("ltr %0" : : "r"(selector));
}

/*
 * After lgdt: reload CS with a far return (there is no far jump to an
 * immediate in long mode) and the data segments; FS and GS get the null
 * selector (their bases come from MSRs).
 */
static inline void load_segments(uint16_t code, uint16_t data)
{
	__asm__ volatile("pushq %q0\n\t"
			 "leaq 1f(%%rip), %%rax\n\t"
			 "pushq %%rax\n\t"
			 "lretq\n"
			 "1:\n\t"
			 "movw %w1, %%ds\n\t"
			 "movw %w1, %%es\n\t"
			 "movw %w1, %%ss\n\t"
			 "movw %w2, %%fs\n\t"
			 "movw %w2, %%gs"
			 :
			 : "r"((uint64_t)code), "r"(data), "r"(0)
			 : "rax", "memory");
}

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* Orders RDTSC after every earlier instruction (SDM Vol. 2B, RDTSC). */
static inline void lfence(void)
{
	__asm__ volatile("lfence" : : : "memory");
}

static inline void mfence(void)
{
	__asm__ volatile("mfence" : : : "memory");
}

static inline void cpu_relax(void)
{
	__asm__ volatile("pause" : : : "memory");
}

static inline void hlt(void)
{
	__asm__ volatile("hlt" : : : "memory");
}

/* "memory": no access may move out of (cli) or into (sti) the section. */
static inline void cli(void)
{
	__asm__ volatile("cli" : : : "memory");
}

static inline void sti(void)
{
	__asm__ volatile("sti" : : : "memory");
}

/* SMAP: let the kernel touch user pages (stac) until clac. */
static inline void stac(void)
{
	__asm__ volatile("stac" : : : "memory");
}

static inline void clac(void)
{
	__asm__ volatile("clac" : : : "memory");
}

/*
 * Enables interrupts and halts as one step: STI delays interrupts by one
 * instruction, so a wake-up interrupt cannot slip in between and be missed.
 */
static inline void sti_hlt(void)
{
	__asm__ volatile("sti; hlt" : : : "memory");
}

static inline uint64_t read_rflags(void)
{
	uint64_t flags;

	__asm__ volatile("pushfq; popq %0" : "=r"(flags) : : "memory");
	return flags;
}

static inline uint64_t irq_save(void)
{
	uint64_t flags = read_rflags();

	cli();
	return flags;
}

static inline void irq_restore(uint64_t flags)
{
	if (flags & RFLAGS_IF)
		sti();
}

static inline bool irqs_enabled(void)
{
	return read_rflags() & RFLAGS_IF;
}

#endif
