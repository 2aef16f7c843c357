; The multiboot2 header: GRUB finds it in the first 32 KiB of the image and
; reads from it what the kernel wants. No EFI boot-services or EFI entry tags:
; GRUB then exits boot services and enters us in 32-bit protected mode with
; paging off, the same hand-off under BIOS and UEFI.

%include "arch/consts.inc"

MB2_ARCH_I386			equ 0
MB2_TAG_END			equ 0
MB2_TAG_INFO_REQUEST		equ 1
MB2_TAG_FRAMEBUFFER		equ 5
MB2_TAG_MODULE_ALIGN		equ 6
MB2_TAG_OPTIONAL		equ 1	; flags: boot even if unsupported

; Information tags the kernel asks for (multiboot2 spec section 3.6).
MB2_INFO_CMDLINE		equ 1
MB2_INFO_MODULE			equ 3
MB2_INFO_MMAP			equ 6
MB2_INFO_FRAMEBUFFER		equ 8
MB2_INFO_ACPI_OLD		equ 14
MB2_INFO_ACPI_NEW		equ 15
MB2_INFO_LOAD_BASE		equ 21

section .multiboot2 progbits alloc noexec nowrite align=8
mb2_header:
	dd MB2_HEADER_MAGIC
	dd MB2_ARCH_I386
	dd mb2_header_end - mb2_header
	dd -(MB2_HEADER_MAGIC + MB2_ARCH_I386 + (mb2_header_end - mb2_header))

	align 8
.info_request:
	dw MB2_TAG_INFO_REQUEST, MB2_TAG_OPTIONAL
	dd .info_request_end - .info_request
	dd MB2_INFO_CMDLINE, MB2_INFO_MODULE, MB2_INFO_MMAP
	dd MB2_INFO_FRAMEBUFFER, MB2_INFO_ACPI_OLD, MB2_INFO_ACPI_NEW
	dd MB2_INFO_LOAD_BASE
.info_request_end:

	; A linear framebuffer, 32 bits per pixel; no size preference (0)
	; so firmware picks its native mode. Optional: text mode still boots.
	align 8
.framebuffer:
	dw MB2_TAG_FRAMEBUFFER, MB2_TAG_OPTIONAL
	dd 20
	dd 0, 0, 32

	; Modules (user programs) on page boundaries, so they can be mapped.
	align 8
.module_align:
	dw MB2_TAG_MODULE_ALIGN, MB2_TAG_OPTIONAL
	dd 8

	align 8
.end:
	dw MB2_TAG_END, 0
	dd 8
mb2_header_end:
