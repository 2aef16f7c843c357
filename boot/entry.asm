; The 32-bit entry from GRUB and the climb to 64-bit C.
;
; GRUB enters here in 32-bit protected mode, paging off, with EAX holding the
; multiboot2 magic and EBX the physical address of the boot information. That
; is all we rely on: under UEFI the GDT, stack and interrupt state GRUB leaves
; differ from BIOS, so we load our own GDT and stack before touching memory
; through segments or calls.
;
; Steps:
;  1. check the magic, that CPUID exists and that the CPU has long mode;
;     otherwise print why on COM1 and the VGA text screen and halt;
;  2. build boot page tables: the first 4 GiB identity-mapped (we are still
;     running at physical addresses), the same 4 GiB at DIRECT_MAP_BASE (so C
;     can read the boot information before mm/ builds the real tables), and
;     the first 2 GiB at KERNEL_VMA, where the image is linked;
;  3. enable PAE, long mode (and NX when present), paging; far-jump into a
;     64-bit code segment; jump to the higher half; call kmain(magic, mbi).
;
; Every address used before step 3 is physical: symbol - KERNEL_VMA.

%include "arch/consts.inc"

%define PHYS(sym) ((sym) - KERNEL_VMA)

BOOT_IDENTITY_GIB	equ 4		; identity and direct map: 4 GiB
BOOT_PD_PAGES		equ BOOT_IDENTITY_GIB
PD_ENTRIES		equ 512
LARGE_PAGE_SIZE		equ 0x200000	; 2 MiB
PML4_SLOT_DIRECT	equ 256
PML4_SLOT_KERNEL	equ 511
PDPT_SLOT_KERNEL	equ 510		; -2 GiB within the top 512 GiB
VGA_TEXT		equ 0xb8000
VGA_ATTR_WHITE_ON_RED	equ 0x4f
UART_THR		equ 0		; transmit holding register
UART_IER		equ 1
UART_DLL		equ 0		; divisor latch, with LCR.DLAB set
UART_DLM		equ 1
UART_FCR		equ 2
UART_LCR		equ 3
UART_LSR		equ 5
UART_LCR_DLAB		equ 0x80
UART_LCR_8N1		equ 0x03
UART_LSR_THRE		equ 0x20	; transmitter holding register empty
UART_DIVISOR_115200	equ 1

extern kmain
extern font_psf_start

global _start
global boot_pml4

section .boot.text progbits alloc exec nowrite align=16
bits 32
_start:
	cli
	cld
	mov	esp, PHYS(boot_stack_top)
	mov	edi, eax			; multiboot2 magic
	mov	esi, ebx			; boot information (physical)

	cmp	edi, MB2_BOOT_MAGIC
	mov	ebx, msg_not_multiboot2
	jne	fail_early

	; CPUID exists iff EFLAGS.ID can be toggled.
	pushfd
	pop	eax
	mov	ecx, eax
	xor	eax, EFLAGS_ID
	push	eax
	popfd
	pushfd
	pop	eax
	push	ecx
	popfd
	xor	eax, ecx
	mov	ebx, msg_no_long_mode
	jz	fail_early

	; CPUID overwrites EBX: the message is set again after each use.
	mov	eax, CPUID_EXT_MAX
	cpuid
	mov	ebx, msg_no_long_mode
	cmp	eax, CPUID_EXT_FEATURES
	jb	fail_early
	mov	eax, CPUID_EXT_FEATURES
	cpuid
	mov	ebx, msg_no_long_mode
	test	edx, CPUID_EXT_EDX_LM
	jz	fail_early
	mov	ebp, edx			; keep the NX bit for later

	call	build_boot_page_tables

	mov	eax, cr4
	or	eax, CR4_PAE
	mov	cr4, eax
	mov	eax, PHYS(boot_pml4)
	mov	cr3, eax

	mov	ecx, MSR_EFER
	rdmsr
	or	eax, EFER_LME
	test	ebp, CPUID_EXT_EDX_NX
	jz	.no_nx
	or	eax, EFER_NXE
.no_nx:
	wrmsr

	mov	eax, cr0
	or	eax, CR0_PG | CR0_WP | CR0_PE
	mov	cr0, eax

	lgdt	[boot_gdt_pointer]
	jmp	GDT_KERNEL_CODE:long_mode_entry

; Fill boot_pml4, boot_pdpt_low, boot_pdpt_kernel and boot_pd (section .bss,
; which GRUB zero-fills as the ELF program header asks).
build_boot_page_tables:
	push	edi
	push	esi
	; boot_pd: BOOT_PD_PAGES tables of 2 MiB leaves covering 0..4 GiB.
	mov	edx, PHYS(boot_pd)
	xor	ecx, ecx
.next_large_page:
	mov	eax, ecx
	shl	eax, 21				; index * 2 MiB (fits: < 4 GiB)
	or	eax, PTE_PRESENT | PTE_WRITE | PTE_HUGE
	mov	[edx + ecx * 8], eax
	mov	dword [edx + ecx * 8 + 4], 0
	inc	ecx
	cmp	ecx, BOOT_PD_PAGES * PD_ENTRIES
	jb	.next_large_page

	; boot_pdpt_low[i] -> boot_pd page i
	mov	edi, PHYS(boot_pdpt_low)
	xor	ecx, ecx
.next_pd:
	mov	eax, ecx
	shl	eax, 12
	add	eax, PHYS(boot_pd) + (PTE_PRESENT | PTE_WRITE)
	mov	[edi + ecx * 8], eax
	inc	ecx
	cmp	ecx, BOOT_PD_PAGES
	jb	.next_pd

	; The kernel's 2 GiB reuse the first two page directories.
	mov	edi, PHYS(boot_pdpt_kernel)
	mov	dword [edi + PDPT_SLOT_KERNEL * 8], \
		PHYS(boot_pd) + (PTE_PRESENT | PTE_WRITE)
	mov	dword [edi + (PDPT_SLOT_KERNEL + 1) * 8], \
		PHYS(boot_pd) + PAGE_SIZE + (PTE_PRESENT | PTE_WRITE)

	mov	edi, PHYS(boot_pml4)
	mov	dword [edi], PHYS(boot_pdpt_low) + (PTE_PRESENT | PTE_WRITE)
	mov	dword [edi + PML4_SLOT_DIRECT * 8], \
		PHYS(boot_pdpt_low) + (PTE_PRESENT | PTE_WRITE)
	mov	dword [edi + PML4_SLOT_KERNEL * 8], \
		PHYS(boot_pdpt_kernel) + (PTE_PRESENT | PTE_WRITE)

	pop	esi
	pop	edi
	ret

; EBX: NUL-terminated message (physical address); EDI/ESI as at entry.
; Print the message on COM1, on the VGA text screen and, when GRUB set up a
; 32-bit linear framebuffer (then the text screen is not visible), drawn
; there with the kernel's font. Then halt for good.
fail_early:
	call	draw_on_framebuffer
	; COM1: 115200 baud, 8N1, FIFO on. A missing port just eats the bytes.
	mov	dx, COM1_PORT + UART_IER
	xor	al, al
	out	dx, al
	mov	dx, COM1_PORT + UART_LCR
	mov	al, UART_LCR_DLAB
	out	dx, al
	mov	dx, COM1_PORT + UART_DLL
	mov	al, UART_DIVISOR_115200
	out	dx, al
	mov	dx, COM1_PORT + UART_DLM
	xor	al, al
	out	dx, al
	mov	dx, COM1_PORT + UART_LCR
	mov	al, UART_LCR_8N1
	out	dx, al

	mov	esi, ebx
	mov	edi, VGA_TEXT
.next_char:
	lodsb
	test	al, al
	jz	.halt
	mov	ah, VGA_ATTR_WHITE_ON_RED
	mov	[edi], ax
	add	edi, 2
	mov	ah, al
	mov	ecx, 100000			; bound the wait: no UART, no hang
	mov	dx, COM1_PORT + UART_LSR
.wait_uart:
	in	al, dx
	test	al, UART_LSR_THRE
	jnz	.send
	loop	.wait_uart
.send:
	mov	al, ah
	mov	dx, COM1_PORT + UART_THR
	out	dx, al
	jmp	.next_char
.halt:
	cli
	hlt
	jmp	.halt

; Draws the message at EBX in the top-left corner of the multiboot2
; framebuffer, white on red, if the boot information (ESI, when EDI holds the
; magic) describes a direct-colour 32-bit framebuffer below 4 GiB. The font
; is the kernel's PSF2 file (console/font.txt): a 32-byte header, then 16
; bytes per glyph, one byte per row, bit 7 leftmost.
MB2_TAG_FRAMEBUFFER	equ 8
MB2_FB_RGB		equ 1
PSF2_HEADER_SIZE	equ 32
GLYPH_BYTES		equ 16
GLYPH_WIDTH		equ 8
FB_WHITE		equ 0x00ffffff
FB_DARK_RED		equ 0x00a00000
draw_on_framebuffer:
	pushad
	cmp	edi, MB2_BOOT_MAGIC
	jne	.done
	mov	edx, esi
	add	edx, [esi]			; end of the boot information
	lea	ecx, [esi + 8]			; first tag
.next_tag:
	cmp	ecx, edx
	jae	.done
	mov	eax, [ecx]
	test	eax, eax			; end tag
	jz	.done
	cmp	eax, MB2_TAG_FRAMEBUFFER
	je	.found
	mov	eax, [ecx + 4]
	add	eax, 7
	and	eax, ~7
	jz	.done				; a zero size would loop forever
	add	ecx, eax
	jmp	.next_tag
.found:
	cmp	dword [ecx + 12], 0		; address above 4 GiB: unreachable
	jne	.done
	cmp	byte [ecx + 28], 32		; bits per pixel
	jne	.done
	cmp	byte [ecx + 29], MB2_FB_RGB
	jne	.done
	mov	edi, [ecx + 8]			; first pixel
	mov	edx, [ecx + 16]			; pitch
	mov	ebp, [ecx + 20]			; width in pixels
	shr	ebp, 3				; characters that fit
.next_char:
	movzx	eax, byte [ebx]
	test	eax, eax
	jz	.done
	cmp	eax, 32				; control characters end the line
	jb	.done
	test	ebp, ebp
	jz	.done
	dec	ebp
	shl	eax, 4				; * GLYPH_BYTES
	lea	esi, [eax + PHYS(font_psf_start) + PSF2_HEADER_SIZE]
	push	edi
	mov	ecx, GLYPH_BYTES
.next_row:
	mov	al, [esi]
	push	edi
	push	ecx
	mov	ecx, GLYPH_WIDTH
.next_pixel:
	mov	dword [edi], FB_DARK_RED
	shl	al, 1
	jnc	.background
	mov	dword [edi], FB_WHITE
.background:
	add	edi, 4
	loop	.next_pixel
	pop	ecx
	pop	edi
	add	edi, edx			; next pixel row
	inc	esi
	loop	.next_row
	pop	edi
	add	edi, GLYPH_WIDTH * 4		; next character cell
	inc	ebx
	jmp	.next_char
.done:
	popad
	ret

section .boot.data progbits alloc noexec nowrite align=16
msg_not_multiboot2:
	db "shootdown: not started by a multiboot2 loader (use GRUB); halted.", 13, 10, 0
msg_no_long_mode:
	db "shootdown: this CPU has no 64-bit long mode; shootdown needs an x86-64 CPU. Halted.", 13, 10, 0

; A minimal GDT for the jump to 64-bit code; cpu/gdt.c replaces it.
	align 16
boot_gdt:
	dq 0					; null
	dq 0x00af9b000000ffff			; 0x08: 64-bit code, DPL 0, accessed
	dq 0x00cf93000000ffff			; 0x10: data, DPL 0, accessed
boot_gdt_end:
boot_gdt_pointer:
	dw boot_gdt_end - boot_gdt - 1
	dq boot_gdt

bits 64
section .boot.text
long_mode_entry:
	mov	ax, GDT_KERNEL_DATA
	mov	ds, ax
	mov	es, ax
	mov	ss, ax
	xor	eax, eax
	mov	fs, ax
	mov	gs, ax
	mov	rax, higher_half_entry
	jmp	rax

section .text
higher_half_entry:
	mov	rsp, boot_stack_top
	xor	ebp, ebp			; ends the backtrace
	mov	edi, edi			; magic, zero-extended
	mov	esi, esi			; boot information, physical
	call	kmain
.hang:
	cli
	hlt
	jmp	.hang

section .bss
align PAGE_SIZE
boot_pml4:		resb PAGE_SIZE
boot_pdpt_low:		resb PAGE_SIZE
boot_pdpt_kernel:	resb PAGE_SIZE
boot_pd:		resb PAGE_SIZE * BOOT_PD_PAGES

; The boot CPU's stack. The page below it is a guard: mm/kmap.c leaves it
; unmapped, so an overflow faults (and the double-fault handler, on its own
; IST stack, reports it) instead of corrupting page tables above.
global boot_stack_guard
global boot_stack_top
section .bss
align PAGE_SIZE
boot_stack_guard:	resb PAGE_SIZE
boot_stack_bottom:	resb BOOT_STACK_SIZE
boot_stack_top:
