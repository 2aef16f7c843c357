#!/usr/bin/env bash
# Install the tools image's Debian packages at exactly the versions of
# container/packages.lock, or make that lock. Runs as root inside a Debian
# container (the Containerfile; container/run.sh lock), never on the host.
#
#   install.sh LOCK                  install every package LOCK pins, at its
#                                    version, then check what got installed
#   install.sh --print LOCK          print the name=version pins of LOCK, one
#                                    a line, as the install would use them
#   install.sh --resolve PACKAGE...  on a fresh base: install the newest
#                                    PACKAGEs and EXTRA_PACKAGES, and print a
#                                    lock of everything that added, and of
#                                    those PACKAGEs the base had already
#
# SNAPSHOT=YYYYMMDDTHHMMSSZ (the lock's `made:` time, or later) fetches from
# snapshot.debian.org as the archive was then: pinned versions the archive
# has since replaced stay installable.
set -euo pipefail

# Not in tools/make/deps.sh (a developer's machine has it already), but
# needed inside: make check, make lab-tree and the mutants list files
# with git ls-files.
EXTRA_PACKAGES="git"

die() {
	echo "container/install.sh: $*" >&2
	exit 1
}

# The name=version lines of a lock (comments and blank lines skipped).
pins() {
	sed -e 's/#.*//' -e 's/[[:space:]]//g' "$1" | awk 'NF'
}

release() {
	# shellcheck disable=SC1091
	. /etc/os-release
	[[ -n ${VERSION_CODENAME:-} ]] || die "/etc/os-release names no release"
	echo "$VERSION_CODENAME"
}

# One set of package sources, the same on every base: the release, its
# updates and its security archive (a debootstrap base has only the
# first; Debian's image has all three in debian.sources).
sources() {
	local rel=$1 main=http://deb.debian.org/debian
	local security=http://deb.debian.org/debian-security
	if [[ -n ${SNAPSHOT:-} ]]; then
		[[ $SNAPSHOT =~ ^[0-9]{8}T[0-9]{6}Z$ ]] ||
			die "SNAPSHOT=$SNAPSHOT: give a time as YYYYMMDDTHHMMSSZ, e.g. the lock's made: time"
		main=http://snapshot.debian.org/archive/debian/$SNAPSHOT
		security=http://snapshot.debian.org/archive/debian-security/$SNAPSHOT
		echo 'Acquire::Check-Valid-Until "false";' >/etc/apt/apt.conf.d/80snapshot
	fi
	rm -f /etc/apt/sources.list.d/debian.sources
	cat >/etc/apt/sources.list <<-EOF
		deb $main $rel main
		deb $main $rel-updates main
		deb $security $rel-security main
	EOF
}

# apt-get update only warns when a list cannot be fetched, and the install
# then blames the lock: stop here and name the network instead.
update_lists() {
	apt-get update --error-on=any ||
		die "cannot fetch the package lists of $1: no network inside the build? (docs/container.md)"
}

installed() {
	dpkg-query -W -f '${db:Status-Abbrev} ${Package}=${Version}\n' |
		awk '$1 == "ii" { print $2 }' | sort
}

apt_install() {
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		--allow-downgrades "$@"
}

install_lock() {
	local lock=$1 rel want
	rel=$(release)
	want=$(sed -n 's/^# release: *//p' "$lock")
	[[ $want == "$rel" ]] || die "$lock is for Debian $want; this base is $rel (BASE=debian:$want)"
	sources "$rel"
	update_lists "$rel"
	local before
	before=$(installed)
	mapfile -t wanted < <(pins "$lock")
	if ! apt_install "${wanted[@]}"; then
		echo "container/install.sh: a pinned version is not in the archive any more." >&2
		echo "  Build from the archive as it was: make container SNAPSHOT=$(sed -n 's/^# made: *//p' "$lock")" >&2
		echo "  or refresh the lock: make container-lock (docs/container.md)" >&2
		exit 1
	fi
	# Every pin at its version; anything else apt chose is named.
	local pin name version have bad=0
	for pin in "${wanted[@]}"; do
		name=${pin%%=*} version=${pin#*=}
		have=$(dpkg-query -W -f '${Version}' "$name" 2>/dev/null || true)
		if [[ $have != "$version" ]]; then
			echo "container/install.sh: $name is ${have:-not installed}, the lock says $version" >&2
			bad=1
		fi
	done
	[[ $bad == 0 ]] || exit 1
	local extra
	extra=$(comm -13 <(echo "$before") <(installed) | comm -23 - <(pins "$lock" | sort))
	[[ -z $extra ]] || echo "container/install.sh: also installed, not in the lock: $(tr '\n' ' ' <<<"$extra")"
	apt-mark manual "${wanted[@]%%=*}" >/dev/null
	# Keep the package lists: make compare-linux fetches Debian's kernel
	# with apt-get download. Drop the downloaded .debs.
	apt-get clean
}

resolve() {
	local rel before
	rel=$(release)
	sources "$rel"
	update_lists "$rel" >&2
	before=$(installed)
	# shellcheck disable=SC2086
	apt_install "$@" $EXTRA_PACKAGES >&2
	echo "# The exact Debian packages of the shootdown tools image: everything the"
	echo "# packages below add to the base, dependencies included, and those of"
	echo "# them the base had already, at the version installed. Made by make"
	echo "# container-lock (container/install.sh --resolve); docs/container.md"
	echo "# says how to refresh it. Not edited by hand."
	echo "# release: $rel"
	echo "# made: $(date -u +%Y%m%dT%H%M%SZ)"
	echo "# requested: $*"
	echo "# extra: $EXTRA_PACKAGES"
	# What the install added, and the packages asked for that the base
	# had already (bsdutils): pinned as well, so that every one is.
	local package
	{
		comm -13 <(echo "$before") <(installed)
		for package in "$@" $EXTRA_PACKAGES; do
			echo "$package=$(dpkg-query -W -f '${Version}' "$package")"
		done
	} | sort -u
}

case ${1:-} in
--print)
	[[ $# == 2 ]] || die "usage: install.sh --print LOCK"
	pins "$2"
	;;
--resolve)
	shift
	[[ $# -gt 0 ]] || die "usage: install.sh --resolve PACKAGE..."
	resolve "$@"
	;;
-* | "")
	die "usage: install.sh LOCK | --print LOCK | --resolve PACKAGE..."
	;;
*)
	[[ $# == 1 && -f $1 ]] || die "usage: install.sh LOCK (a file)"
	install_lock "$1"
	;;
esac
