#!/usr/bin/env bash
# The shootdown tools image (docs/container.md): build it, enter it, run a
# command in it with the source tree mounted, or refresh its lock.
#
#   container/run.sh build          build the image (make container)
#   container/run.sh shell          a shell inside (make container-shell)
#   container/run.sh run COMMAND    COMMAND (one string) inside, run by bash
#                                   (make container-run CMD=..., container-grade)
#   container/run.sh lock           rewrite container/packages.lock from a
#                                   fresh BASE (make container-lock)
#
# The tree is mounted at its own path, and the working directory is the
# same inside, so paths in logs and messages are the host's. The user
# inside is the caller (uid and gid), except for root, and under
# rootless Docker, whose root is the caller.
#
# Environment: CONTAINER_ENGINE (podman or docker; the first found),
# BASE (the Debian image, default debian:bookworm), SNAPSHOT (build from
# snapshot.debian.org at that time), CONTAINER_IMAGE (default
# shootdown-tools), CONTAINER_BUILD_ARGS and CONTAINER_RUN_ARGS (more
# options for the engine's build and run).
#
# Written for bash 3.2 as well (macOS's): no mapfile, no associative arrays.
set -eu

case $0 in
*/*) here=${0%/*} ;;
*) here=. ;;
esac
here=$(cd "$here" && pwd)
root=${here%/*}

die() {
	echo "container: $*" >&2
	exit 2
}

# --- The engine, before anything else needs a command -------------------
engine=${CONTAINER_ENGINE:-}
if [ -z "$engine" ]; then
	if command -v podman >/dev/null 2>&1; then
		engine=podman
	elif command -v docker >/dev/null 2>&1; then
		engine=docker
	else
		die "found neither podman nor docker: install one (docs/container.md), or name it with CONTAINER_ENGINE="
	fi
fi
case ${engine##*/} in
podman* | docker*) ;;
*) die "CONTAINER_ENGINE=$engine: use podman or docker" ;;
esac
command -v "$engine" >/dev/null 2>&1 || die "CONTAINER_ENGINE=$engine: no such command"
kind=docker
case ${engine##*/} in podman*) kind=podman ;; esac

base=${BASE:-debian:bookworm}
case $base in
*[[:space:]]* | -*) die "BASE=$base: name one image, e.g. BASE=debian:bookworm" ;;
esac
snapshot=${SNAPSHOT:-}
if [ -n "$snapshot" ] && ! printf '%s\n' "$snapshot" | grep -Eq '^[0-9]{8}T[0-9]{6}Z$'; then
	die "SNAPSHOT=$snapshot: give a time as YYYYMMDDTHHMMSSZ (the lock's made: line)"
fi
image=${CONTAINER_IMAGE:-shootdown-tools}
# The image runs x86-64 code and holds x86-64 GRUB and firmware: on an
# Arm Mac it is emulated, never built for Arm.
platform=linux/amd64

digest() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum | cut -c1-12
	else
		shasum -a 256 | cut -c1-12
	fi
}

# The tag follows what the image is made of, so a changed lock or base
# gives a new image and `run` builds it.
tag=$({ cat "$here/Containerfile" "$here/install.sh" "$here/packages.lock"; echo "$base $snapshot"; } | digest)

build() {
	echo "container: building $image:$tag from $base with $engine (minutes, the first time)"
	# shellcheck disable=SC2086
	"$engine" build --platform "$platform" --build-arg "BASE=$base" \
		--build-arg "SNAPSHOT=$snapshot" -t "$image:$tag" -t "$image:latest" \
		-f "$here/Containerfile" ${CONTAINER_BUILD_ARGS:-} "$here"
}

have_image() {
	"$engine" image inspect "$image:$tag" >/dev/null 2>&1
}

# run_in [-t] COMMAND...: COMMAND in the image, the tree mounted.
run_in() {
	have_image || {
		echo "container: no image $image:$tag yet"
		build
	}
	set -- --rm -i --platform "$platform" --security-opt label=disable \
		-v "$root:$root" -w "$(workdir)" "$@"
	# A worktree's git directory lies outside the tree: mount it as well.
	common=$(git -C "$root" rev-parse --git-common-dir 2>/dev/null || true)
	if [ -n "$common" ]; then
		case $common in /*) ;; *) common=$root/$common ;; esac
		common=$(cd "$common" && pwd)
		case $common/ in
		"$root"/*) ;;
		*) set -- "$@" -v "$common:$common" ;;
		esac
	fi
	uid=$(id -u)
	if [ "$uid" != 0 ]; then
		case $kind/$(rootless) in
		podman/true) set -- "$@" --userns=keep-id ;;
		# Rootless Docker maps its root to the caller and any other
		# user inside to a subordinate uid that cannot write the tree.
		docker/true) ;;
		*) set -- "$@" --user "$uid:$(id -g)" ;;
		esac
		set -- "$@" -e HOME=/tmp
	fi
	if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
		set -- "$@" --device /dev/kvm
	fi
	for v in TERM GRADE_SEED GRADE_QUICK GRADE_BUG GRADE_FIRST_FAILURE GRADE_FIRST_CHECK ONLY; do
		eval "isset=\${$v+x}"
		[ -z "$isset" ] || set -- "$@" -e "$v"
	done
	# shellcheck disable=SC2086
	exec "$engine" run "$@" ${CONTAINER_RUN_ARGS:-} "$image:$tag" "${cmd[@]}"
}

# true when the engine runs as the caller, not as root: each engine says
# so in its own field of `info`.
rootless() {
	if [ "$kind" = podman ]; then
		"$engine" info --format '{{.Host.Security.Rootless}}' 2>/dev/null || true
		return
	fi
	case $("$engine" info --format '{{.SecurityOptions}}' 2>/dev/null || true) in
	*name=rootless*) echo true ;;
	*) echo false ;;
	esac
}

# The caller's directory when it is inside the tree, else the tree.
workdir() {
	case $PWD/ in
	"$root"/*) echo "$PWD" ;;
	*) echo "$root" ;;
	esac
}

# run_in, with a terminal inside when there is one outside.
run_tty() {
	if [ -t 0 ] && [ -t 1 ]; then run_in -t; else run_in; fi
}

case ${1:-} in
build)
	[ $# = 1 ] || die "usage: container/run.sh build"
	build
	;;
shell)
	[ $# = 1 ] || die "usage: container/run.sh shell"
	cmd=(bash)
	run_tty
	;;
run)
	if [ $# != 2 ] || [ -z "$2" ]; then
		die "usage: container/run.sh run 'COMMAND' (make container-run CMD='make grade LAB=L3')"
	fi
	cmd=(bash -c "$2")
	run_tty
	;;
lock)
	[ $# = 1 ] || die "usage: container/run.sh lock"
	echo "container: resolving the newest packages on $base with $engine"
	# deps.sh runs inside, where the image's architecture is the lock's.
	# shellcheck disable=SC2086,SC2016
	"$engine" run --rm -i --platform "$platform" --security-opt label=disable \
		-v "$root:/src:ro" ${CONTAINER_RUN_ARGS:-} "$base" \
		bash -c '/src/container/install.sh --resolve $(/src/tools/make/deps.sh --packages)' \
		>"$here/packages.lock.new"
	mv "$here/packages.lock.new" "$here/packages.lock"
	echo "container: wrote container/packages.lock ($(grep -vc '^#' "$here/packages.lock") packages)"
	;;
*)
	die "usage: container/run.sh build | shell | run 'COMMAND' | lock (docs/container.md)"
	;;
esac
