#!/usr/bin/env bash
# Build a hybrid BIOS+UEFI bootable ISO (GRUB 2, multiboot2) for the kernel.
#
#   tools/mkiso.sh <out.iso> <kernel.elf>               the USB-stick image:
#       a GRUB menu (timeout 3) with the default job, all tests, serial-only
#       and screen-only entries
#   tools/mkiso.sh <out.iso> <kernel.elf> <word>...     boot at once (no menu)
#       with the words as the kernel command line; pass "" for an empty one
#
# grub-mkrescue puts the i386-pc (BIOS, El Torito + MBR) and x86_64-efi (EFI
# system partition image) GRUBs on one image, so the same file boots from CD
# or USB under either firmware. It takes about 0.3 s here, so no caching.
# Scratch files live in a temporary directory under build/, never in the
# source tree; the ISO appears atomically (written aside, then renamed).
set -euo pipefail

usage() {
	echo "usage: $0 <out.iso> <kernel.elf> [cmdline words...]" >&2
	exit 2
}
[[ $# -ge 2 ]] || usage
out=$1
kernel=$2
shift 2
[[ -f $kernel ]] || { echo "mkiso: no kernel at $kernel" >&2; exit 1; }

root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/build/tmp" "$(dirname "$out")"
work=$(mktemp -d "$root/build/tmp/mkiso.XXXXXX")
trap 'rm -rf "$work"' EXIT

tree=$work/iso
mkdir -p "$tree/boot/grub"
cp "$kernel" "$tree/boot/shootdown.elf"

# Quote one word for grub.cfg: GRUB's script syntax treats everything inside
# single quotes literally, except that a ' must close, be escaped, reopen.
grub_quote() {
	local q=\'\\\'\'
	printf "'%s'" "${1//\'/$q}"
}

# Modules, loaded globally. all_video loads the platform's video drivers
# (vbe/vga/bochs/cirrus under BIOS, efi_gop/efi_uga under UEFI).
preamble() {
	echo "insmod all_video"
	echo "insmod multiboot2"
}

# One menu entry; $2 holds the (already quoted) kernel options, each with a
# leading space. gfxpayload makes GRUB set a linear framebuffer mode and
# hand it to the kernel (multiboot2 framebuffer tag); "auto" falls back to
# whatever the firmware offers. It must be set after `multiboot2`: that
# command overwrites gfxpayload from the kernel's framebuffer header tag
# ("auto" for width=height=0, which gave 800x600x24 under SeaBIOS).
entry() {
	printf "menuentry '%s' {\n" "$1"
	printf "\tmultiboot2 /boot/shootdown.elf%s\n" "$2"
	printf "\tset gfxpayload=1024x768x32,1024x768,auto\n"
	printf "\tboot\n}\n"
}

cfg=$tree/boot/grub/grub.cfg
if [[ $# -gt 0 ]]; then
	# One entry, booted at once: the image for one run or one test.
	args=""
	for word in "$@"; do
		if [[ -n $word ]]; then
			args+=" $(grub_quote "$word")"
		fi
	done
	{
		echo "set timeout=0"
		echo "set timeout_style=hidden"
		preamble
		entry "shootdown" "$args"
	} >"$cfg"
else
	# The menu for USB sticks and `make iso`. Under BIOS the GRUB menu is
	# shown on the serial port too, for serial-only machines. Not under
	# UEFI: there the firmware console usually reaches COM1 already (OVMF
	# does), and a second copy doubles every line.
	{
		echo "set timeout=3"
		echo "set default=0"
		echo "if [ \"\$grub_platform\" = pc ]; then"
		echo "	if serial --unit=0 --speed=115200; then"
		echo "		terminal_input --append serial"
		echo "		terminal_output --append serial"
		echo "	fi"
		echo "fi"
		preamble
		entry "shootdown" ""
		entry "shootdown: run all tests" " test=all done=halt"
		entry "shootdown: serial console only" " console=serial"
		entry "shootdown: screen only" " console=fb"
	} >"$cfg"
fi

# No fonts, locales or themes: the menu uses the text console, and they
# would more than double the image size.
if ! TMPDIR=$work grub-mkrescue --fonts= --locales= --themes= \
	-o "$work/out.iso" "$tree" >"$work/log" 2>&1; then
	cat "$work/log" >&2
	echo "mkiso: grub-mkrescue failed" >&2
	exit 1
fi
mv -f "$work/out.iso" "$out"
