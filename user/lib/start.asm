; Where user programs begin. The kernel enters _start (the ELF entry
; point) in ring 3 with RSP 16-byte aligned and the program's argument in
; RDI, and there is no return address: _start must never return.
;
; The System V ABI wants RSP + 8 to be a multiple of 16 when a function
; starts, which is what a CALL from an aligned RSP produces; so _start
; calls main right away and needs no other set-up. The exit status goes
; through sys_exit (user/lib/syscall.c), which keeps the system-call
; numbers in one place, uapi/syscall.h.

bits 64

extern main
extern sys_exit
extern sys_thread_exit

global _start
global ulib_thread_entry

section .text

_start:
	xor	ebp, ebp		; the outermost frame: backtraces stop here
	call	main			; RDI is still the argument
	movsxd	rdi, eax		; int status -> long
	call	sys_exit
	ud2				; sys_exit does not return

; The entry of threads made by thread_start (user/lib/ulib.c): RSP is
; 16-byte aligned and RDI points at the pair {function, argument} stored
; just above that stack top.
ulib_thread_entry:
	xor	ebp, ebp
	mov	rax, [rdi]		; the function
	mov	rdi, [rdi + 8]		; its argument
	call	rax
	call	sys_thread_exit
	ud2
