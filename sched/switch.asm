; The context switch: the only place one thread's stack becomes another's.
;
; void switch_context(struct thread *prev, struct thread *next)
;   Pushes the callee-saved registers (the C ABI lets the compiler keep
;   values there across the call), stores RSP in prev->saved_rsp, loads
;   next->saved_rsp, pops next's callee-saved registers and returns into
;   next: into its own call of switch_context, or, for a thread that never
;   ran, into thread_start (see sched/thread.c, which builds that frame).
;   Everything else (FPU state, address space, the run-queue lock) is the
;   C caller's business (sched/sched.c).

THREAD_SAVED_RSP	equ 0		; offsetof(struct thread, saved_rsp)

global switch_context
global switch_leave
global switch_leave_to_frame
global thread_start
extern thread_first_run
extern switch_finish_to_frame

section .text
switch_context:
	push	rbp
	push	rbx
	push	r12
	push	r13
	push	r14
	push	r15
	mov	[rdi + THREAD_SAVED_RSP], rsp
; Into next (RSI): its saved registers, and return where it left off.
load_context:
	mov	rsp, [rsi + THREAD_SAVED_RSP]
	pop	r15
	pop	r14
	pop	r13
	pop	r12
	pop	rbx
	pop	rbp
	ret

; A new thread's first instructions: sched/thread.c left the entry
; function in R12 and its argument in R13 (popped above).
thread_start:
	xor	ebp, ebp			; ends backtraces
	mov	rdi, r12
	mov	rsi, r13
	call	thread_first_run		; never returns
	ud2

; void switch_leave(struct thread *prev, struct trap_frame *frame,
;                   stackless_code *resume, struct thread *next)
; void switch_leave_to_frame(struct thread *prev, struct trap_frame *frame,
;                            stackless_code *resume,
;                            struct trap_frame *next_frame,
;                            stackless_code *exit)
;   Never return. prev leaves its kernel stack (sched/handoff.h): what it
;   leaves is a resume frame, shaped like the one switch_context saves,
;   with frame (prev's saved user registers) as its R12 and resume as its
;   return address. Then switch_leave goes into next as switch_context
;   does. switch_leave_to_frame instead ends the switch on next's stack,
;   just below next_frame, and leaves by exit with RSP at next_frame.
;   resume and exit belong to the caller (proc/syscall_entry.asm).

%macro LEAVE_RESUME_FRAME 0
	push	rdx				; return address: resume
	sub	rsp, 16				; rbp, rbx: unused
	push	rsi				; r12: prev's user registers
	sub	rsp, 24				; r13, r14, r15: unused
	mov	[rdi + THREAD_SAVED_RSP], rsp
%endmacro

switch_leave:
	LEAVE_RESUME_FRAME
	mov	rsi, rcx
	jmp	load_context

switch_leave_to_frame:
	LEAVE_RESUME_FRAME
	mov	rsp, rcx
	xor	ebp, ebp
	push	r8				; switch_finish_to_frame returns to exit
	jmp	switch_finish_to_frame
