; Interrupt and exception entry stubs, one per vector.
;
; Each stub makes the stack look the same for every vector: vectors without
; a CPU-pushed error code push a zero in its place, then every stub pushes
; its vector number and jumps to isr_common, which saves the general
; registers as a struct trap_frame (trap/trap.h) and calls trap_dispatch.
;
; The CPU aligns RSP to 16 bytes before pushing its frame (SDM Vol. 3A,
; 6.14.2); 5 CPU words + error code + vector + 15 registers = 22 words keep
; that alignment for the C call.
;
; GS: coming from ring 3, GS base is the user's and must be swapped for the
; kernel's (and back on the way out). The saved CS says where we came from,
; except for NMI, double fault and machine check: those can strike in the
; few kernel instructions between SYSCALL and its SWAPGS (or SWAPGS and
; SYSRET), where CS is the kernel's but GS is still the user's. For them
; the GS base itself decides: a kernel GS base is a kernel (negative)
; address. RBX remembers whether we swapped; the C code preserves it.

%include "arch/consts.inc"
%include "trap/trap_frame.inc"

extern trap_dispatch
extern entry_clac
global isr_stub_table
global capture_registers

; Vectors for which the CPU pushes an error code (SDM Vol. 3A, table 6-1).
%define HAS_ERROR_CODE(v) ((v) == 8 || (v) == 10 || (v) == 11 || (v) == 12 || \
	(v) == 13 || (v) == 14 || (v) == 17 || (v) == 21 || (v) == 29 || (v) == 30)

section .text

%macro ISR_STUB 1
isr_stub_%1:
%if !HAS_ERROR_CODE(%1)
	push	0
%endif
	push	%1
	jmp	isr_common
%endmacro

%assign vector 0
%rep 256
	ISR_STUB vector
%assign vector vector + 1
%endrep

VEC_NMI		equ 2
VEC_DOUBLE_FAULT equ 8
VEC_MACHINE_CHECK equ 18

isr_common:
	PUSH_GENERAL_REGS
	cld				; the C ABI expects DF clear
	; AC clear, or SMAP is off for the handler: gates clear TF, NT and
	; IF but keep AC, which ring 3 sets with POPF and the kernel has set
	; between STAC and CLAC. CLAC exists only with SMAP, and without
	; SMAP AC means nothing in ring 0. The saved RFLAGS keep AC for the
	; way back.
	cmp	byte [rel entry_clac], 0
	je	.ac_clear
	clac
.ac_clear:
	xor	ebx, ebx
	mov	rax, [rsp + FRAME_VECTOR]
	cmp	rax, VEC_NMI
	je	.by_gs_base
	cmp	rax, VEC_DOUBLE_FAULT
	je	.by_gs_base
	cmp	rax, VEC_MACHINE_CHECK
	je	.by_gs_base
	test	byte [rsp + FRAME_CS], SELECTOR_RPL3
	jz	.gs_ready
	jmp	.swap
.by_gs_base:
	mov	ecx, MSR_GS_BASE
	rdmsr
	test	edx, edx			; negative: already the kernel's
	js	.gs_ready
.swap:
	swapgs
	mov	ebx, 1
.gs_ready:
	mov	rdi, rsp
	call	trap_dispatch
	; Back to ring 3 only at a user address: IRETQ to a non-canonical
	; RIP faults in ring 0 (proc/syscall_entry.asm says why). An
	; interrupt after the last instruction of the last user page saves
	; RIP 0x800000000000. The task ends as for a ring-3 #GP there.
	test	byte [rsp + FRAME_CS], SELECTOR_RPL3
	jz	.rip_checked
	mov	rax, [rsp + FRAME_RIP]
	shr	rax, USER_CANONICAL_SHIFT
	jnz	.not_user_rip
.rip_checked:
	test	ebx, ebx
	jz	.gs_restored
	swapgs
.gs_restored:
	POP_GENERAL_REGS
	add	rsp, 16			; vector and error code
	iretq

.not_user_rip:
	mov	qword [rsp + FRAME_VECTOR], VEC_GENERAL_PROTECT
	mov	qword [rsp + FRAME_ERROR], 0
	mov	rdi, rsp
	call	trap_dispatch			; user_fault: does not return
	ud2

; void capture_registers(struct trap_frame *frame): this function's caller's
; registers, as panic() prints them. RIP is the return address, RSP the
; caller's stack pointer after the return.
capture_registers:
	mov	[rdi + 0*8], r15
	mov	[rdi + 1*8], r14
	mov	[rdi + 2*8], r13
	mov	[rdi + 3*8], r12
	mov	[rdi + 4*8], r11
	mov	[rdi + 5*8], r10
	mov	[rdi + 6*8], r9
	mov	[rdi + 7*8], r8
	mov	[rdi + 8*8], rbp
	mov	[rdi + 9*8], rdi
	mov	[rdi + 10*8], rsi
	mov	[rdi + 11*8], rdx
	mov	[rdi + 12*8], rcx
	mov	[rdi + 13*8], rbx
	mov	[rdi + 14*8], rax
	mov	qword [rdi + 15*8], 0	; vector: none
	mov	qword [rdi + 16*8], 0	; error code: none
	mov	rax, [rsp]
	mov	[rdi + 17*8], rax	; rip
	mov	eax, cs
	mov	[rdi + 18*8], rax
	pushfq
	pop	rax
	mov	[rdi + 19*8], rax	; rflags
	lea	rax, [rsp + 8]
	mov	[rdi + 20*8], rax	; rsp
	mov	eax, ss
	mov	[rdi + 21*8], rax
	mov	rax, [rdi + 14*8]
	ret

section .rodata
align 8
isr_stub_table:
%assign vector 0
%rep 256
	dq	isr_stub_ %+ vector
%assign vector vector + 1
%endrep
