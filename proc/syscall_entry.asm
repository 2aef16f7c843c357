; Ring 3 <-> ring 0: the SYSCALL entry and exit, and the first entry to
; user mode.
;
; SWAPGS discipline: in the kernel, GS base is this CPU's struct percpu; in
; user mode it is the user's (always 0: shootdown gives user programs no
; GS). Every path from ring 3 swaps on the way in and back on the way out;
; kernel/isr.asm does the same for interrupts and exceptions.
;
; SYSCALL leaves RSP as the user's: the entry must not touch the stack
; before loading the thread's kernel stack from percpu. It builds the same
; struct trap_frame as an interrupt (kernel/trap.h), with vector
; SYSCALL_FRAME_VECTOR, so system calls read arguments and write results in
; one place. The way out is SYSRET, except when the return address is not
; canonical: SYSRET would then fault in ring 0 with the user's stack (the
; Intel SYSRET erratum, CVE-2012-0217), so that case takes IRETQ, which
; faults in ring 3.

%include "boot/consts.inc"
%include "kernel/trap_frame.inc"

SYSCALL_FRAME_VECTOR	equ 0x100	; not a hardware vector
USER_RFLAGS		equ 0x202	; IF, and the always-one bit 1
USER_CANONICAL_SHIFT	equ 47		; user addresses have bits 63:47 clear

extern syscall_dispatch
extern ipc_fast_syscall
global syscall_entry
global syscall_return
global enter_user_mode

section .text
syscall_entry:
	swapgs
	mov	[gs:PERCPU_USER_RSP], rsp
	mov	rsp, [gs:PERCPU_SYSCALL_RSP]
	push	GDT_USER_DATA | SELECTOR_RPL3	; ss
	push	qword [gs:PERCPU_USER_RSP]	; rsp
	push	r11				; rflags (SYSCALL saved them)
	push	GDT_USER_CODE | SELECTOR_RPL3	; cs
	push	rcx				; rip (SYSCALL saved it)
	push	0				; error code
	push	SYSCALL_FRAME_VECTOR
	PUSH_GENERAL_REGS
	xor	ebp, ebp			; a backtrace ends here
	mov	rdi, rsp
	; Interrupts stay off: syscall_dispatch turns them on for the calls
	; that can block or run long, and returns with them off again. The
	; IPC calls go to their fast path first (proc/ipc.c), which hands
	; what it declines to the general path itself.
	lea	rdx, [rax - SYSCALL_FAST_FIRST]
	cmp	rdx, SYSCALL_FAST_LAST - SYSCALL_FAST_FIRST
	jbe	syscall_to_fast_path
	call	syscall_dispatch
; The way out, with RSP at the saved registers; also from sched/switch.asm
; (resume_stackless), for a thread that left its kernel stack in the IPC
; fast path.
syscall_return:
	POP_GENERAL_REGS
	; RSP now points at the vector and error code, then the IRET frame:
	; rip, cs, rflags, rsp, ss. RCX and R11 are free (SYSCALL clobbered
	; them for the user already).
	mov	rcx, [rsp + 16]			; rip, for SYSRET
	mov	r11, rcx
	shr	r11, USER_CANONICAL_SHIFT
	jnz	.return_with_iret
	mov	r11, [rsp + 32]			; rflags, for SYSRET
	mov	rsp, [rsp + 40]			; the user's stack
	swapgs
	o64 sysret

.return_with_iret:
	add	rsp, 16				; vector, error code
	swapgs
	iretq

syscall_to_fast_path:
	call	ipc_fast_syscall
	jmp	syscall_return

; void enter_user_mode(uint64_t entry, uint64_t user_stack, uint64_t arg)
; Starts the calling thread in ring 3 at entry with RSP = user_stack and
; RDI = arg, every other register zero. Never returns.
enter_user_mode:
	cli
	push	GDT_USER_DATA | SELECTOR_RPL3	; ss
	push	rsi				; rsp
	push	USER_RFLAGS			; rflags: interrupts on
	push	GDT_USER_CODE | SELECTOR_RPL3	; cs
	push	rdi				; rip
	mov	rdi, rdx
	xor	eax, eax
	xor	ebx, ebx
	xor	ecx, ecx
	xor	edx, edx
	xor	esi, esi
	xor	ebp, ebp
	xor	r8d, r8d
	xor	r9d, r9d
	xor	r10d, r10d
	xor	r11d, r11d
	xor	r12d, r12d
	xor	r13d, r13d
	xor	r14d, r14d
	xor	r15d, r15d
	swapgs
	iretq
