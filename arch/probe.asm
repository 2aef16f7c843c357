; Memory probes that survive a fault: the access instruction has an entry
; in the exception table (section .extable, arch/extable.h), so a page
; fault or general-protection fault on it resumes at the fixup, which
; returns -EFAULT instead of the kernel dying. Used by tests that take a
; fault on purpose, by anything that must touch memory it cannot trust, and
; for MSRs an emulator may not have (a #GP instead of a value).

EFAULT	equ 14

global probe_read_u64
global probe_write_u64

section .text

; int probe_read_u64(const void *addr, uint64_t *out)
probe_read_u64:
.access:
	mov	rax, [rdi]
	mov	[rsi], rax
	xor	eax, eax
	ret
.fixup:
	mov	eax, -EFAULT
	ret

; int probe_write_u64(void *addr, uint64_t value)
probe_write_u64:
.access:
	mov	[rdi], rsi
	xor	eax, eax
	ret
.fixup:
	mov	eax, -EFAULT
	ret

; int probe_rdmsr(uint32_t msr, uint64_t *out)
global probe_rdmsr
probe_rdmsr:
	mov	ecx, edi
.access:
	rdmsr
	shl	rdx, 32
	or	rax, rdx
	mov	[rsi], rax
	xor	eax, eax
	ret
.fixup:
	mov	eax, -EFAULT
	ret

; int probe_wrmsr(uint32_t msr, uint64_t value)
global probe_wrmsr
probe_wrmsr:
	mov	ecx, edi
	mov	eax, esi
	mov	rdx, rsi
	shr	rdx, 32
.access:
	wrmsr
	xor	eax, eax
	ret
.fixup:
	mov	eax, -EFAULT
	ret

section .extable progbits alloc noexec nowrite align=8
	dq	probe_read_u64.access, probe_read_u64.fixup
	dq	probe_write_u64.access, probe_write_u64.fixup
	dq	probe_rdmsr.access, probe_rdmsr.fixup
	dq	probe_wrmsr.access, probe_wrmsr.fixup

; int copy_user_bytes(void *dst, const void *src, size_t n)
; A copy in which one side is user memory (the caller checked that it lies
; in the user half and opened SMAP with STAC). A fault on the user side
; returns -EFAULT instead of killing the kernel.
global copy_user_bytes
section .text
copy_user_bytes:
	mov	rcx, rdx
.access:
	rep	movsb
	xor	eax, eax
	ret
.fixup:
	mov	eax, -EFAULT
	ret

section .extable
	dq	copy_user_bytes.access, copy_user_bytes.fixup
