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
global thread_start
extern thread_first_run

section .text
switch_context:
	push	rbp
	push	rbx
	push	r12
	push	r13
	push	r14
	push	r15
	mov	[rdi + THREAD_SAVED_RSP], rsp
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
