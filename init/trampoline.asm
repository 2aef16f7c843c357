; The application-processor start-up code.
;
; An AP starts in 16-bit real mode at the page the STARTUP IPI names
; (CS = TRAMPOLINE_PHYS >> 4, IP = 0). init/smp_boot.c copies this blob to
; TRAMPOLINE_PHYS and fills trampoline_params before each STARTUP IPI; the
; APs start one at a time, so one parameter block is enough.
;
; Steps: real mode -> 32-bit protected mode (our own GDT, below) -> PAE,
; the page tables in params.cr3 (the kernel half plus an identity map of the
; first 2 MiB, so this code keeps running when paging turns on), EFER as the
; boot CPU has it, paging -> 64-bit mode -> jump to params.entry (ap_entry in
; init/smp_boot.c, in the higher half) with RSP = params.stack, RDI = params.percpu.
;
; The code runs at TRAMPOLINE_PHYS, not where it is linked, so every address
; is written as TRAMPOLINE_PHYS + (label - trampoline_start).

%include "arch/consts.inc"

%define HERE(label) (TRAMPOLINE_PHYS + ((label) - trampoline_start))

TRAMPOLINE_CODE32	equ 0x08
TRAMPOLINE_DATA		equ 0x10
TRAMPOLINE_CODE64	equ 0x18

global trampoline_start
global trampoline_end
global trampoline_params

section .rodata
align 16
bits 16
trampoline_start:
	cli
	cld
	mov	ax, cs
	mov	ds, ax
	o32 lgdt [trampoline_gdt_pointer - trampoline_start]
	mov	eax, cr0
	or	eax, CR0_PE
	mov	cr0, eax
	jmp	dword TRAMPOLINE_CODE32:HERE(protected_mode)

bits 32
protected_mode:
	mov	ax, TRAMPOLINE_DATA
	mov	ds, ax
	mov	es, ax
	mov	ss, ax
	mov	eax, cr4
	or	eax, CR4_PAE
	mov	cr4, eax
	mov	eax, [HERE(trampoline_params.cr3)]
	mov	cr3, eax
	mov	ecx, MSR_EFER
	mov	eax, [HERE(trampoline_params.efer)]
	xor	edx, edx
	wrmsr
	mov	eax, cr0
	or	eax, CR0_PG | CR0_WP
	mov	cr0, eax
	jmp	TRAMPOLINE_CODE64:HERE(long_mode)

bits 64
long_mode:
	mov	ax, TRAMPOLINE_DATA
	mov	ds, ax
	mov	es, ax
	mov	ss, ax
	mov	rsp, [abs HERE(trampoline_params.stack)]
	mov	rdi, [abs HERE(trampoline_params.percpu)]
	mov	rax, [abs HERE(trampoline_params.entry)]
	xor	ebp, ebp			; ends backtraces
	jmp	rax

align 16
trampoline_gdt:
	dq	0
	dq	0x00cf9b000000ffff		; 0x08: 32-bit code, accessed
	dq	0x00cf93000000ffff		; 0x10: data, accessed
	dq	0x00af9b000000ffff		; 0x18: 64-bit code, accessed
trampoline_gdt_end:
trampoline_gdt_pointer:
	dw	trampoline_gdt_end - trampoline_gdt - 1
	dd	HERE(trampoline_gdt)

; Filled by init/smp_boot.c (struct trampoline_params) before each AP starts.
align 8
trampoline_params:
.cr3:		dq 0		; page tables, below 4 GiB (32-bit CR3 load)
.efer:		dq 0		; EFER value: LME, and NXE when the BSP has it
.stack:		dq 0		; initial RSP
.percpu:	dq 0		; argument of entry
.entry:		dq 0		; 64-bit entry point
trampoline_end:
