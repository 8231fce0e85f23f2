#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what the demo and the tests need on a Debian 12 (bookworm)
# machine: Go when it is missing or too old, and the Debian packages in
# hack/apt-packages. PipeWire 1.4 and WirePlumber 0.5 exist only in
# bookworm-backports, so that source is added first; a package whose
# installed version is older than the minimum hack/apt-packages names (a
# desktop's PipeWire 0.3.65) is upgraded from there, and the script fails if
# it is still too old afterwards. Safe to run again: when everything is
# installed and new enough it changes nothing and does not touch the network.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh

log() { echo "install-deps: $*" >&2; }
# asroot CMD...: runs CMD as root, through sudo when this is not root.
# Asked only when something is to be installed: a machine that has
# everything needs neither root nor sudo.
asroot() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		log "installing needs root: run as root, or install sudo ($*)"
		exit 1
	fi
}

. /etc/os-release
codename="${VERSION_CODENAME:-bookworm}"
backports=/etc/apt/sources.list.d/liken-backports.sources
# apt's own view of the configured suites: a commented-out line, a file
# apt ignores (*.disabled) or a stanza with "Enabled: no" does not count.
has_backports() {
	apt-get indextargets --no-release-info --format '$(RELEASE)' 2>/dev/null | grep -qx "${codename}-backports"
}
if [ "${ID:-}" = debian ] && [ ! -f "$backports" ] && ! has_backports; then
	log "adding ${codename}-backports"
	asroot tee "$backports" >/dev/null <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: ${codename}-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi

# Each line of hack/apt-packages is "package", "package@backports" or
# "package@backports>=minimum" (a Debian version, compared with
# dpkg --compare-versions).
# installed_version prints the installed version of package $1, or nothing
# when it is not installed. dpkg-query exits 1 for a package this machine
# has never known; that is an answer ("not installed"), not a failure, so
# it must not end the script under set -e and pipefail.
installed_version() {
	local status
	status="$(dpkg-query -W -f='${Status}\t${Version}' "$1" 2>/dev/null)" || return 0
	case "$status" in "install ok installed"$'\t'*) printf '%s\n' "${status#*$'\t'}" ;; esac
}
missing=()
backported=()
minimums=()
while read -r line; do
	line="${line%%#*}"; line="${line// /}"
	[ -n "$line" ] || continue
	min=""
	case "$line" in *">="*) min="${line#*>=}"; line="${line%%>=*}" ;; esac
	pkg="${line%@*}"
	[ -z "$min" ] || minimums+=("$pkg=$min")
	have="$(installed_version "$pkg")"
	if [ -z "$have" ]; then
		if [ "$line" != "$pkg" ]; then backported+=("$pkg"); else missing+=("$pkg"); fi
	elif [ -n "$min" ] && dpkg --compare-versions "$have" lt "$min"; then
		log "$pkg $have is older than $min: upgrading it from ${codename}-backports"
		backported+=("$pkg")
	fi
done < hack/apt-packages

# Go 1.21 or newer fetches the toolchain go.mod asks for from the module
# proxy by itself (GOTOOLCHAIN=auto); older ones, like Debian 12's own 1.19,
# cannot even read go.mod, so a newer Go comes from backports.
need_go=false
# GOTOOLCHAIN=local: the version of this go binary itself, never of the
# toolchain go.mod would make it fetch first.
go_minor() { GOTOOLCHAIN=local "$1" env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p'; }
gobin="$(command -v go || true)"
if [ -z "$gobin" ] && [ -x /usr/local/go/bin/go ]; then gobin=/usr/local/go/bin/go; fi
if [ -z "$gobin" ] || [ "$(go_minor "$gobin")" -lt 21 ] 2>/dev/null || [ -z "$(go_minor "$gobin")" ]; then
	need_go=true
	backported+=(golang-go)
fi

if [ ${#missing[@]} -gt 0 ] || [ ${#backported[@]} -gt 0 ]; then
	with_progress "reading Debian's package lists (apt-get update)" asroot apt-get update -qq
	if [ ${#missing[@]} -gt 0 ]; then
		with_progress "installing ${missing[*]}" \
			asroot env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	fi
	if [ ${#backported[@]} -gt 0 ]; then
		with_progress "installing from ${codename}-backports: ${backported[*]}" \
			asroot env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -t "${codename}-backports" "${backported[@]}" >/dev/null
	fi
fi
if $need_go; then
	# Debian's Go is older than go.mod asks for; with GOTOOLCHAIN=auto it
	# fetches the required toolchain from the Go module proxy on first use.
	log "Go from ${codename}-backports installed; the toolchain go.mod names comes from the module proxy on first use (GOTOOLCHAIN=auto)"
fi

# apt may have kept an old version (no backports source, a pin, a hold):
# the tests would then fail far from the cause, so stop here instead.
too_old=()
for entry in "${minimums[@]}"; do
	pkg="${entry%%=*}"; min="${entry#*=}"
	have="$(installed_version "$pkg")"
	if [ -z "$have" ] || dpkg --compare-versions "$have" lt "$min"; then
		too_old+=("$pkg ${have:-not installed} (need $min or newer)")
	fi
done
if [ ${#too_old[@]} -gt 0 ]; then
	for t in "${too_old[@]}"; do log "still too old: $t"; done
	log "install these from ${codename}-backports (apt-get install -t ${codename}-backports ...) and check apt-mark showhold and /etc/apt/preferences.d"
	exit 1
fi
