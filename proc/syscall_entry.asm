; Ring 3 <-> ring 0: the SYSCALL entry and exit, and the first entry to
; user mode.
;
; SWAPGS discipline: in the kernel, GS base is this CPU's struct percpu; in
; user mode it is the user's (always 0: shootdown gives user programs no
; GS). Every path from ring 3 swaps on the way in and back on the way out;
; trap/isr.asm does the same for interrupts and exceptions.
;
; SYSCALL leaves RSP as the user's: the entry must not touch the stack
; before loading the thread's kernel stack from percpu. It builds the same
; struct trap_frame as an interrupt (trap/trap.h), with vector
; SYSCALL_FRAME_VECTOR, so system calls read arguments and write results in
; one place. The way out is SYSRET to a user address (bits 63:47 clear).
; Any other return address ends the task instead: SYSRET to a
; non-canonical RIP faults in ring 0 on Intel with the user's stack and GS
; already loaded, and IRETQ faults in ring 0 as well (SDM Vol. 2B, IRET:
; #GP(0) "if the return instruction pointer is non-canonical"). A SYSCALL
; in the last user page returns to 0x800000000000, so this is reachable.
; The check runs before SWAPGS, on the kernel's stack, and the task ends
; as for a #GP at that address in ring 3 (trap_dispatch, user_fault).
;
; SYSCALL from compatibility mode enters at MSR_CSTAR: syscall_entry_compat
; ends the task as for the #UD Intel processors raise there. No user code
; can reach compatibility mode (cpu/gdt.c), so it is a second line.

%include "arch/consts.inc"
%include "trap/trap_frame.inc"

SYSCALL_FRAME_VECTOR	equ 0x100	; not a hardware vector
USER_RFLAGS		equ 0x202	; IF, and the always-one bit 1

extern syscall_dispatch
extern ipc_fast_syscall
extern ipc_fast_resumed
extern sched_switch_finish
extern trap_dispatch
global syscall_entry
global syscall_entry_compat
global syscall_return
global ipc_fast_resume
global enter_user_mode

; The way in from SYSCALL: the user stack swapped for this CPU's kernel
; one, and the frame an interrupt from ring 3 would have left, with cs the
; user code segment the call came from (%1). RCX holds the return RIP and
; R11 the flags, as SYSCALL saved them.
%macro SYSCALL_FRAME 1
	swapgs
	mov	[gs:PERCPU_USER_RSP], rsp
	mov	rsp, [gs:PERCPU_SYSCALL_RSP]
	push	GDT_USER_DATA | SELECTOR_RPL3	; ss
	push	qword [gs:PERCPU_USER_RSP]	; rsp
	push	r11				; rflags
	push	%1 | SELECTOR_RPL3		; cs
	push	rcx				; rip
	push	0				; error code
%endmacro

section .text
syscall_entry:
	SYSCALL_FRAME GDT_USER_CODE
	push	SYSCALL_FRAME_VECTOR
	PUSH_GENERAL_REGS
	xor	ebp, ebp			; a backtrace ends here
	mov	rdi, rsp
	; Interrupts stay off: syscall_dispatch turns them on for the calls
	; that can block or run long, and returns with them off again. The
	; IPC calls go to their fast path first (proc/ipc_fast.c), which
	; hands what it declines to the general path itself.
	lea	rdx, [rax - SYSCALL_FAST_FIRST]
	cmp	rdx, SYSCALL_FAST_LAST - SYSCALL_FAST_FIRST
	jbe	syscall_to_fast_path
	call	syscall_dispatch
; The way out, with RSP at the saved registers. Also the way out of a
; thread that blocked in the IPC fast path without its kernel stack: from
; ipc_fast_resume below, and from sched/switch.asm's switch_leave_to_frame
; when the fast path sends its partner straight back.
syscall_return:
	mov	rcx, [rsp + FRAME_RIP]		; restored by the pops below
	shr	rcx, USER_CANONICAL_SHIFT
	jnz	syscall_return_not_user
	POP_GENERAL_REGS
	; RSP now points at the vector and error code, then the IRET frame:
	; rip, cs, rflags, rsp, ss. RCX and R11 are free (SYSCALL clobbered
	; them for the user already).
	mov	rcx, [rsp + 16]			; rip, for SYSRET
	mov	r11, [rsp + 32]			; rflags, for SYSRET
	mov	rsp, [rsp + 40]			; the user's stack
	swapgs
	o64 sysret

; The return address is not a user address: still the kernel's GS and
; stack, with interrupts off. The frame becomes a ring-3 #GP at that
; address and trap_dispatch hands it to user_fault, which ends the task
; and does not return.
syscall_return_not_user:
	mov	qword [rsp + FRAME_VECTOR], VEC_GENERAL_PROTECT
	mov	qword [rsp + FRAME_ERROR], 0
	mov	rdi, rsp
	call	trap_dispatch
	ud2

syscall_to_fast_path:
	call	ipc_fast_syscall
	jmp	syscall_return

; A thread that blocked in the IPC fast path without its kernel stack runs
; again: a switch_context into it returned here, into the resume frame it
; left (sched/switch.asm), with R12 its saved user registers. The switch is
; not yet done. On a fresh stack just below those registers: the end of
; the switch, the rest of its system call (proc/ipc_fast.c), and the way
; out of every system call.
ipc_fast_resume:
	mov	rsp, r12
	xor	ebp, ebp			; a backtrace ends here
	call	sched_switch_finish
	mov	rdi, r12
	call	ipc_fast_resumed
	jmp	syscall_return

; SYSCALL from compatibility mode (MSR_CSTAR): the same way in as
; syscall_entry, then the frame of a ring-3 #UD, which ends the task.
; RCX holds the zero-extended return EIP and R11 the flags, as in 64-bit
; mode; FMASK has already cleared IF, DF, TF, AC and NT.
syscall_entry_compat:
	SYSCALL_FRAME GDT_USER_CODE32
	push	VEC_INVALID_OPCODE
	PUSH_GENERAL_REGS
	xor	ebp, ebp			; a backtrace ends here
	mov	rdi, rsp
	call	trap_dispatch			; user_fault: does not return
	ud2

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
