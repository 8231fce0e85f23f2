#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds etcd, kube-apiserver, kube-scheduler, kube-controller-manager and
# kubectl from the Go module proxy and caches them outside the repository.
#
# k8s.io/kubernetes cannot be `go install`ed: its go.mod replaces every
# staging module with a local directory the module zip leaves out. A small
# wrapper module requires it and points each staging module at its published
# release instead. Every build here uses the same -trimpath flags so that the
# Go build cache is shared between them (and with later rebuilds).
#
# Prints the directory holding the binaries on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
STAGING_VERSION="v0${K8S_VERSION#v1}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
CACHE="${LIKEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/liken}"
OUT="$CACHE/control-plane/$K8S_VERSION-etcd$ETCD_VERSION"
BINS=(etcd kube-apiserver kube-scheduler kube-controller-manager kubectl)

have_all() {
	for b in "${BINS[@]}"; do [ -x "$OUT/bin/$b" ] || return 1; done
}
if have_all; then
	echo "$OUT/bin"
	exit 0
fi

mkdir -p "$OUT/bin" "$OUT/k8s" "$OUT/etcd"
# Test packages run in parallel and each may call this script. Two builds
# in the same wrapper modules would overwrite each other's go.mod and
# outputs, so the second waits for the first and then finds everything.
if command -v flock >/dev/null; then
	exec 9>"$OUT/.lock"
	flock 9
	if have_all; then
		echo "$OUT/bin"
		exit 0
	fi
fi
export GOFLAGS=-mod=mod
minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
LDF="-s -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"


cd "$OUT/k8s"
if [ ! -f go.sum ]; then
	with_progress "resolving k8s.io/kubernetes@$K8S_VERSION through the Go module proxy" \
		go mod download -json "k8s.io/kubernetes@$K8S_VERSION" >/dev/null
	upstream="$(go env GOMODCACHE)/k8s.io/kubernetes@$K8S_VERSION/go.mod"
	{
		echo "module liken.sh/controlplane"
		echo
		echo "go 1.26.0"
		echo
		echo "godebug default=go1.26"
		echo
		echo "require k8s.io/kubernetes $K8S_VERSION"
		echo
		echo "replace ("
		sed -n '/^replace (/,/^)/p' "$upstream" | grep "=>" | awk -v v="$STAGING_VERSION" '{print "\t"$1" => "$1" "v}'
		echo ")"
	} >go.mod
	cat >tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
	with_progress "downloading the control plane's modules" go mod tidy
fi
# One go build for the four: their shared packages compile once and the
# links overlap the compiles still under way, where four builds in a row
# would each end on a single-threaded link.
todo=()
for b in kube-apiserver kube-scheduler kube-controller-manager kubectl; do
	[ -x "$OUT/bin/$b" ] || todo+=("k8s.io/kubernetes/cmd/$b")
done
if [ ${#todo[@]} -gt 0 ]; then
	rm -rf "$OUT/bin.tmp"
	mkdir -p "$OUT/bin.tmp"
	with_progress "building ${todo[*]##*/} $K8S_VERSION (cold, about 15 to 20 minutes on 2 cores; later runs reuse them)" \
		go build -trimpath -ldflags="$LDF" -o "$OUT/bin.tmp/" "${todo[@]}"
	mv "$OUT"/bin.tmp/* "$OUT/bin/"
	rmdir "$OUT/bin.tmp"
fi

cd "$OUT/etcd"
if [ ! -x "$OUT/bin/etcd" ]; then
	# Checked by the tool line, not by go.mod alone: an interrupted run
	# leaves a go.mod without it.
	if ! grep -q "^tool go.etcd.io/etcd/server/v3" go.mod 2>/dev/null; then
		[ -f go.mod ] || go mod init liken.sh/etcdbin >/dev/null 2>&1
		with_progress "resolving etcd $ETCD_VERSION" go get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
	fi
	with_progress "building etcd $ETCD_VERSION" go build -trimpath -ldflags=-s -o "$OUT/bin/etcd.tmp" go.etcd.io/etcd/server/v3
	mv "$OUT/bin/etcd.tmp" "$OUT/bin/etcd"
fi
have_all
echo "$OUT/bin"
