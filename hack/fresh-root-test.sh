#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fresh-root tier: README's set-up, run as README says, on a Debian 12
# machine that has never seen this project. It makes a minimal Debian 12
# root from Debian's own packages (mmdebstrap, variant "important": what a
# freshly installed Debian 12 server has, plus git), clones the commit
# under test into it, and runs hack/demo.sh there under chroot(8) with
# /proc, /sys and /dev of this host and this host's network namespace (its
# loopback, and the route to Debian's mirror and the Go module proxy).
# install-deps must install everything from nothing and the demo must run
# to its end.
#
# What belongs to the network rather than to the project comes in from the
# host, as a fresh machine on this network would have it: /etc/resolv.conf
# and the local CA trust in /usr/local/share/ca-certificates (a TLS-
# inspecting egress proxy's CA; Debian's ca-certificates, which install-deps
# installs, adds it to the root's trust store). Nothing else of the host's
# is used, with one exception made for CI's time and said here: the local
# control plane hack/build-control-plane.sh built on this host (etcd,
# kube-apiserver, kube-scheduler, kube-controller-manager, kubectl) is bound
# into the root read-only, so the root's build-control-plane.sh finds it
# and does not spend 15 to 20 minutes building it again; and this host's
# Go build cache is bound at the root's (/root/.cache/go-build), so the
# demo's build in the root, with the same Go (the toolchain go.mod names)
# and the same flags, takes what this host has compiled instead of
# compiling client-go again beside CI's other phases. The root still
# installs Go, downloads the modules and builds and links the demo
# itself. Set LIKEN_FRESH_ROOT_BUILD_CONTROL_PLANE=1 to build the control
# plane in the root as well and give it an empty build cache (how
# README's cold demo figure is measured).
#
# The pristine root is cached as a tarball in
# ${LIKEN_CACHE:-~/.cache/liken}/fresh-root (it holds only Debian's
# packages) and unpacked anew for every run, so no run sees another's.
# Services are not started inside the root (usr/sbin/policy-rc.d says no,
# as in Debian's container images): there is no init to own them.
#
#   hack/fresh-root-test.sh [COMMIT]      # default HEAD; -keep keeps the root
#
# Prints each step's wall time and exits non-zero when a step failed.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
. hack/env.sh

[ "$(id -u)" = 0 ] || { echo "fresh-root-test: must run as root (chroot, mount)" >&2; exit 1; }
keep=false
commit=""
for a in "$@"; do
	case "$a" in
	-keep) keep=true ;;
	-*) echo "fresh-root-test: unknown flag $a (only -keep)" >&2; exit 2 ;;
	*)
		[ -z "$commit" ] || { echo "fresh-root-test: one commit at most (got $commit and $a)" >&2; exit 2; }
		commit="$a"
		;;
	esac
done
given="${commit:-HEAD}"
commit="$(git rev-parse -q --verify "$given^{commit}")" ||
	{ echo "fresh-root-test: $given is not a commit of this repository" >&2; exit 2; }
[ "${LIKEN_SKIP_DEPS:-0}" = 1 ] || hack/install-deps.sh

log() { echo "fresh-root-test: $*" >&2; }
cache="${LIKEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/liken}"
suite=bookworm
mirror="${LIKEN_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
tarball="$cache/fresh-root/$suite-important-git.tar"
steps=()
step_began=$SECONDS
# step NAME: records the wall time of the step under way as NAME.
step() {
	steps+=("$(printf '%6d s  %s' $(( SECONDS - step_began )) "$1")")
	step_began=$SECONDS
}

if [ ! -s "$tarball" ]; then
	mkdir -p "$(dirname "$tarball")"
	rm -rf "$tarball.tmp"
	# dpkg's force-unsafe-io: the root is thrown away after the run, so
	# dpkg need not fsync each file (minutes on a busy disk).
	with_progress "making a Debian 12 root with mmdebstrap (variant important, plus git) into $tarball" \
		mmdebstrap --quiet --mode=root --format=tar --variant=important --include=git \
		--dpkgopt=force-unsafe-io "$suite" "$tarball.tmp" "$mirror"
	mv "$tarball.tmp" "$tarball"
fi
step "mmdebstrap (once; cached afterwards)"

# release ROOT [keep]: kills what still runs in ROOT, unmounts everything
# mounted into it (each mount point, innermost first, as /proc/self/mounts
# lists them) and removes it, unless keep. A mount that will not go is
# detached (umount -l); the directory is removed only once no mount is
# left under it, so rm never reaches into the host's /dev or /sys.
release() {
	local r="$1" pid m
	for pid in $(ls /proc | grep -E '^[0-9]+$'); do
		case "$(readlink "/proc/$pid/root" 2>/dev/null)" in
		"$r"|"$r"/*) kill -9 "$pid" 2>/dev/null || true ;;
		esac
	done
	# Passes, since a point mounted twice (a bind over a bind) shows once
	# per mount.
	local pass
	for pass in 1 2 3 4 5; do
		for m in $(awk -v r="$r/" 'index($2, r) == 1 { print $2 }' /proc/self/mounts | sort -r | uniq); do
			umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		done
	done
	if [ "${2:-}" = keep ]; then
		log "kept $r (its mounts are gone)"
	elif ! awk -v r="$r/" 'index($2, r) == 1 { found = 1 } END { exit !found }' /proc/self/mounts; then
		log "removing $r (a minute or two on a busy disk)"
		rm -rf --one-file-system "$r"
		rm -f "$r.lock"
	else
		log "left $r: something is still mounted in it"
	fi
}

# Each run holds a lock on its root's lock file for its whole life; a
# root whose lock is free belongs to a run that was killed before its
# cleanup, and is released here.
for stale in /var/tmp/liken-fresh-root.*; do
	[ -d "$stale" ] || continue
	if flock -n "$stale.lock" true 2>/dev/null; then
		log "releasing $stale, left by a run that was killed"
		release "$stale"
	fi
done

root="$(mktemp -d /var/tmp/liken-fresh-root.XXXXXX)"
exec 9>"$root.lock"
flock 9
cleanup() { release "$root" "$($keep && echo keep)"; }
trap cleanup EXIT
# The EXIT trap runs on these too: hack/test.sh stops a tier it started
# with TERM.
trap 'exit 130' INT
trap 'exit 143' TERM

tar -C "$root" -xf "$tarball"
# The network's part of a fresh machine: its resolver and its CA trust.
rm -f "$root/etc/resolv.conf"
cp /etc/resolv.conf "$root/etc/resolv.conf"
if compgen -G "/usr/local/share/ca-certificates/*" >/dev/null; then
	mkdir -p "$root/usr/local/share/ca-certificates"
	cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi
printf '#!/bin/sh\n# No init runs in this root: services are not started.\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"

# bindmount SRC DST [ro]: binds SRC (and what is mounted below it) at DST
# in the root, as a slave so that nothing unmounted there reaches the host.
bindmount() {
	mkdir -p "$root$2"
	mount --rbind "$1" "$root$2"
	mount --make-rslave "$root$2"
	[ "${3:-}" != ro ] || mount -o remount,bind,ro "$root$2"
}
mount -t proc proc "$root/proc"
bindmount /sys /sys
bindmount /dev /dev

git clone -q --no-hardlinks "$repo" "$root/root/liken"
git -C "$root/root/liken" checkout -q --detach "$commit"
step "root unpacked, commit $(git rev-parse --short "$commit") cloned"

# inroot CMD: runs CMD (a shell command line) in the root's checkout as
# root's login would, with nothing of this process's environment but the
# terminal type.
inroot() {
	env -i HOME=/root USER=root LOGNAME=root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		chroot "$root" /bin/bash -c "cd /root/liken && $1"
}
# inroot_logged CMD FILE: inroot CMD with its output shown and kept in
# FILE. It runs in the background and is waited for, because bash runs a
# trap only once the foreground command ends: a TERM or INT then reaches
# the cleanup at once, which kills what runs in the root.
inroot_logged() {
	{ inroot "$1" 2>&1 | tee "$2"; } &
	wait $!
}

status=0
out="$root/root/demo.out"
# hack/demo.sh runs hack/install-deps.sh first; it is run alone first here
# so that its time is its own, and so that it overlaps a control-plane
# build still under way on the host. The demo's own run of it must then
# find everything and change nothing.
log "README's set-up in the root, step 1: hack/install-deps.sh from nothing"
if ! inroot_logged 'hack/install-deps.sh' "$out.deps"; then
	log "hack/install-deps.sh failed in the fresh root"
	status=1
fi
step "hack/install-deps.sh from nothing (Debian's packages, Go)"

if [ $status = 0 ] && [ "${LIKEN_FRESH_ROOT_BUILD_CONTROL_PLANE:-0}" != 1 ]; then
	cp_bin="$(hack/build-control-plane.sh | tail -n 1)"
	cp_dir="$(dirname "$cp_bin")"
	bindmount "$cp_dir" "/root/.cache/liken/control-plane/$(basename "$cp_dir")" ro
	step "the host's control plane (waited for, bound read-only)"
fi

if [ $status = 0 ] && [ "${LIKEN_FRESH_ROOT_BUILD_CONTROL_PLANE:-0}" != 1 ]; then
	bindmount "$(go env GOCACHE)" /root/.cache/go-build
fi
if [ $status = 0 ]; then
	log "README's command 1 in the root: hack/demo.sh"
	if ! inroot_logged 'hack/demo.sh' "$out"; then
		log "hack/demo.sh failed in the fresh root"
		status=1
	fi
	step "hack/demo.sh (Go toolchain, the demo's build and run)"
fi
# The demo's last section: a tone captured through audio-api, with its
# spectrum peak.
if [ $status = 0 ] && ! grep -q 'spectrum peak' "$out"; then
	log "hack/demo.sh ended without its capture (no 'spectrum peak' line)"
	status=1
fi
if [ $status = 0 ] && grep -qE '^install-deps(\.sh)?: (installing|adding)' "$out"; then
	log "the demo's own hack/install-deps.sh installed again what the first run had installed:"
	grep -E '^install-deps(\.sh)?:' "$out" >&2
	status=1
fi

echo "fresh-root tier: wall time of each step"
printf '%s\n' "${steps[@]}"
echo "fresh-root tier: status $status"
exit $status
