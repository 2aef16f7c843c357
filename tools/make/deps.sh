#!/usr/bin/env bash
# Check that everything building, `make run` and `make test` need is here;
# install what is missing.
#
#   tools/make/deps.sh             check; install the missing packages (apt-get)
#   tools/make/deps.sh --packages  print every package needed, one line, with
#                                  those only CI needs (.ci/run: clang, lld)
#
# It runs before every `make run` and `make test`, so the check uses shell
# builtins only and prints nothing when all is present. Package names are
# Debian's (also right on Ubuntu). Elsewhere it lists them and fails.
set -euo pipefail

arch=$(uname -m)

# The packages, each with what shows it is installed: a command, or
# a path (a glob; one match is enough). Order: build, image, emulators,
# hygiene, plots, labs, QR tests.
requirements() {
	need make cmd make
	need nasm cmd nasm
	if [[ $arch == x86_64 ]]; then
		# The Makefile takes gcc on an x86-64 host, clang otherwise.
		need gcc cmd-any gcc clang
		need gcc cmd cc # HOSTCC for the host unit tests
	else
		need clang cmd clang
		need lld cmd ld.lld
		need gcc cmd cc
	fi
	need binutils cmd ld
	need binutils cmd nm
	need binutils cmd objdump
	need python3 cmd python3
	need grub-common cmd grub-mkrescue
	need grub-pc-bin path /usr/lib/grub/i386-pc/multiboot2.mod
	need grub-efi-amd64-bin path /usr/lib/grub/x86_64-efi/multiboot2.mod
	# The 32-bit UEFI loader: grub-mkrescue adds it when installed.
	need grub-efi-ia32-bin path /usr/lib/grub/i386-efi/multiboot2.mod
	need xorriso cmd xorriso
	need mtools cmd mformat # grub-mkrescue builds the EFI FAT image with it
	need qemu-system-x86 cmd qemu-system-x86_64
	need ovmf path /usr/share/OVMF/OVMF_CODE_4M.fd /usr/share/OVMF/OVMF_CODE.fd
	need ovmf path /usr/share/OVMF/OVMF_VARS_4M.fd /usr/share/OVMF/OVMF_VARS.fd
	need ovmf-ia32 path /usr/share/OVMF/OVMF32_CODE_4M.secboot.fd
	need bochs cmd bochs
	need bochsbios path /usr/share/bochs/BIOS-bochs-latest
	# A symlink from bochs into vgabios: -e follows it.
	need vgabios path /usr/share/bochs/VGABIOS-lgpl-latest
	# Debian's Bochs has no headless display; tools/run/boot.py uses `term`.
	need bochs-term path "/usr/lib/*/bochs/plugins/libbx_term_gui.so*"
	need bsdutils cmd script # gives Bochs's term display a terminal
	need clang-format cmd clang-format
	need cppcheck cmd cppcheck
	need gnuplot-nox cmd gnuplot # make plots, make timeline
	need spin cmd spin # lab L7's model checker (tools/labs/spin_check.py)
	need gdb cmd gdb # make profile-path single-steps QEMU (tools/run/path_profile.py)
	need zbar-tools cmd zbarimg # decodes the QR codes of host/qr (tests/qr/)
	# CI (.ci/run) builds and boots everything with clang as well, so that
	# make CC=clang keeps working; make run and make test need neither.
	if [[ $for_ci == 1 ]]; then
		need clang cmd clang
		need lld cmd ld.lld
	fi
}

missing=()
all=()
for_ci=0
[[ ${1:-} == --packages ]] && for_ci=1

# need PACKAGE cmd NAME | cmd-any NAME... | path GLOB...
need() {
	local package=$1 kind=$2 item
	shift 2
	all+=("$package")
	case $kind in
	cmd)
		command -v "$1" >/dev/null 2>&1 && return 0
		;;
	cmd-any)
		for item in "$@"; do
			command -v "$item" >/dev/null 2>&1 && return 0
		done
		;;
	path)
		for item in "$@"; do
			# Unquoted on purpose: the pattern is a glob.
			for item in $item; do
				[[ -e $item ]] && return 0
			done
		done
		;;
	esac
	missing+=("$package")
}

unique() {
	printf '%s\n' "$@" | awk 'NF && !seen[$0]++' | tr '\n' ' ' | sed 's/ $//'
}

requirements

if [[ ${1:-} == --packages ]]; then
	unique "${all[@]}"
	echo
	exit 0
elif [[ $# -gt 0 ]]; then
	echo "usage: $0 [--packages]" >&2
	exit 2
fi

[[ ${#missing[@]} -eq 0 ]] && exit 0

read -ra packages <<<"$(unique "${missing[@]}")"
if ! command -v apt-get >/dev/null 2>&1; then
	echo "deps: missing packages (Debian names): ${packages[*]}" >&2
	echo "deps: install them (or your system's equivalents), then run make again" >&2
	exit 1
fi

as_root=()
if [[ $EUID -ne 0 ]]; then
	command -v sudo >/dev/null 2>&1 || {
		echo "deps: need root to install: ${packages[*]}" >&2
		exit 1
	}
	as_root=(sudo)
fi
apt_install() {
	"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends "${packages[@]}"
}

echo "deps: installing ${packages[*]}"
if ! apt_install; then
	# Usually a fresh machine without package lists.
	echo "deps: install failed; running apt-get update and trying again"
	"${as_root[@]}" apt-get update
	apt_install
fi

# Check again: a package may not have brought what we looked for.
missing=()
all=()
requirements
if [[ ${#missing[@]} -gt 0 ]]; then
	echo "deps: still missing after the install: $(unique "${missing[@]}")" >&2
	exit 1
fi
