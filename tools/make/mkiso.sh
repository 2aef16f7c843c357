#!/usr/bin/env bash
# Build a hybrid BIOS+UEFI bootable ISO (GRUB 2, multiboot2) for the kernel.
#
#   tools/make/mkiso.sh <out.iso> <kernel.elf>               the USB-stick image:
#       a GRUB menu (timeout 5) with the default job, all tests, serial-only
#       and screen-only entries, and one for a dark screen
#   tools/make/mkiso.sh <out.iso> <kernel.elf> <word>...     boot at once (no menu)
#       with the words as the kernel command line; pass "" for an empty one
#
# Before these, any number of `--module <path>` options add files for the
# kernel: each is copied to /boot/user/<name>.elf and loaded by GRUB as a
# multiboot2 module whose string is <name> (the file name without .elf),
# in every menu entry. The kernel finds user programs by that name.
# `--text-screen` makes the one entry of a boot-at-once image leave the
# screen in 80x25 VGA text mode, as a PC whose firmware offers no graphics
# mode would (the USB image's menu has such an entry of its own).
# `--gfxmode WxH` makes it ask GRUB for a framebuffer of W x H pixels
# instead of 1024x768 (a high-resolution screen), if the firmware has one.
#
# grub-mkrescue puts the i386-pc (BIOS, El Torito + MBR) and x86_64-efi (EFI
# system partition image) GRUBs on one image, so the same file boots from CD
# or USB under either firmware. It takes about 0.3 s here, so no caching.
# Scratch files live in a temporary directory under build/, never in the
# source tree; the ISO appears atomically (written aside, then renamed).
set -euo pipefail

usage() {
	echo "usage: $0 [--module <file>]... [--text-screen | --gfxmode WxH] <out.iso> <kernel.elf> [cmdline words...]" >&2
	exit 2
}

modules=()
text_screen=0
gfxmode=""
while [[ $# -gt 0 && ( $1 == --module || $1 == --text-screen || $1 == --gfxmode ) ]]; do
	if [[ $1 == --text-screen ]]; then
		text_screen=1
		shift
		continue
	fi
	[[ $# -ge 2 ]] || usage
	if [[ $1 == --gfxmode ]]; then
		[[ $2 =~ ^[0-9]+x[0-9]+$ ]] || usage
		gfxmode=$2
	else
		modules+=("$2")
	fi
	shift 2
done
[[ $# -ge 2 ]] || usage
out=$1
kernel=$2
shift 2
[[ -f $kernel ]] || { echo "mkiso: no kernel at $kernel" >&2; exit 1; }

root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$root/build/tmp" "$(dirname "$out")"
work=$(mktemp -d "$root/build/tmp/mkiso.XXXXXX")
trap 'rm -rf "$work"' EXIT

tree=$work/iso
mkdir -p "$tree/boot/grub"
cp "$kernel" "$tree/boot/shootdown.elf"

# Module names become GRUB words and the kernel's names for the programs:
# keep them plain, and unique (two files with one name could not both be
# found).
module_names=()
for path in "${modules[@]}"; do
	[[ -f $path ]] || { echo "mkiso: no module file at $path" >&2; exit 1; }
	name=$(basename "$path")
	name=${name%.elf}
	if [[ ! $name =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]*$ ]]; then
		echo "mkiso: module name '$name' (from $path): use letters," \
			"digits, '_', '.' and '-' only" >&2
		exit 1
	fi
	for seen in "${module_names[@]}"; do
		if [[ $seen == "$name" ]]; then
			echo "mkiso: two modules are named '$name'" >&2
			exit 1
		fi
	done
	module_names+=("$name")
	mkdir -p "$tree/boot/user"
	cp "$path" "$tree/boot/user/$name.elf"
done

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
# leading space; $3, if given, is the display mode instead of the
# framebuffer ("text": 80x25 VGA text, the kernel draws with CP437). The modules follow the kernel (module2 needs multiboot2
# first). gfxpayload makes GRUB set a linear framebuffer mode and
# hand it to the kernel (multiboot2 framebuffer tag); "auto" falls back to
# whatever the firmware offers. It must be set after `multiboot2`: that
# command overwrites gfxpayload from the kernel's framebuffer header tag
# ("auto" for width=height=0, which gave 800x600x24 under SeaBIOS).
entry() {
	printf "menuentry '%s' {\n" "$1"
	printf "\tmultiboot2 /boot/shootdown.elf%s\n" "$2"
	for name in "${module_names[@]}"; do
		printf "\tmodule2 /boot/user/%s.elf %s\n" "$name" "$name"
	done
	printf "\tset gfxpayload=%s\n" "${3:-1024x768x32,1024x768,auto}"
	# Under UEFI the kernel can draw only on a linear framebuffer, and
	# some displays have none: in the menu image, the last words on the
	# firmware's console say where to look when the screen then stays
	# dark.
	if ((menu_image)); then
		printf "\tif [ \"\$grub_platform\" = efi ]; then\n"
		printf "\t\techo 'shootdown: starting. A dark screen from now on: see the menu entry \"%s\".'\n" "$dark_entry"
		printf "\tfi\n"
	fi
	printf "\tboot\n}\n"
}

# The UEFI twin of the BIOS text-screen entry: a UEFI loader cannot leave
# the screen in a text mode (the firmware's text console ends when the
# kernel takes over), so the entry says so and what to do instead.
dark_entry="shootdown: the screen stays dark (UEFI)"
dark_screen_entry() {
	printf "menuentry '%s' {\n" "$dark_entry"
	for line in \
		"Under UEFI there is no text screen a kernel can keep: the firmware's" \
		"text console ends when the kernel starts, and the kernel can draw only" \
		"on a linear framebuffer. Some displays offer none (GRUB then passes a" \
		"framebuffer at address 0, which the kernel refuses with a warning)." \
		"" \
		"What works instead:" \
		" - a BIOS or CSM (legacy) boot of this stick: its menu has an 80x25" \
		"   text-screen entry;" \
		" - the serial port, where the kernel prints everything (115200 8N1);" \
		" - another display output or a docking station's port." \
		"" \
		"Press Enter to go back to the menu."; do
		printf "\techo %s\n" "$(grub_quote "$line")"
	done
	printf "\tread\n}\n"
}

cfg=$tree/boot/grub/grub.cfg
menu_image=0
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
		if ((text_screen)); then
			entry "shootdown" "$args" text
		elif [[ -n $gfxmode ]]; then
			entry "shootdown" "$args" "${gfxmode}x32,$gfxmode,auto"
		else
			entry "shootdown" "$args"
		fi
	} >"$cfg"
else
	# The menu for USB sticks and `make iso`. Under BIOS the GRUB menu is
	# shown on the serial port too, for serial-only machines. Not under
	# UEFI: there the firmware console usually reaches COM1 already (OVMF
	# does), and a second copy doubles every line.
	menu_image=1
	{
		echo "set timeout=5"
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
		# UEFI has no text mode to leave the screen in: BIOS only.
		echo "if [ \"\$grub_platform\" = pc ]; then"
		entry "shootdown: 80x25 text screen (when the others stay dark)" "" text
		echo "else"
		dark_screen_entry
		echo "fi"
	} >"$cfg"
fi

# No fonts, locales or themes: the menu uses the text console, and they
# would more than double the image size. After `--`, options for xorriso:
# the image's MBR is a GPT's protective one, whose one entry is not marked
# active, and some legacy BIOSes boot no USB disk without an active entry;
# mbr_force_bootable adds a second entry, of type 0 over the first block,
# that is. UEFI firmware still finds the GPT through the protective entry.
if ! TMPDIR=$work grub-mkrescue --fonts= --locales= --themes= \
	-o "$work/out.iso" "$tree" -- -boot_image any mbr_force_bootable=on \
	>"$work/log" 2>&1; then
	cat "$work/log" >&2
	echo "mkiso: grub-mkrescue failed" >&2
	exit 1
fi
mv -f "$work/out.iso" "$out"
