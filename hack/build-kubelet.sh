#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the node half of a local cluster, a kubelet and containerd (with
# its runc shim and ctr), from the Go module proxy and caches them outside
# the repository beside the control plane.
#
# The kubelet lives in k8s.io/kubernetes, which cannot be `go install`ed
# (see hack/build-control-plane.sh). It is built in a wrapper module that
# starts from the control plane's own go.mod and go.sum, so every package
# the two share (client-go, apimachinery, the API types ...) comes out of
# the Go build cache the control-plane build filled: same module versions,
# same -trimpath flags, same ldflags. containerd is an ordinary module and
# is installed at its tagged version; Debian's containerd (1.6) has no CDI.
#
# Prints the directory holding the binaries on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
. hack/env.sh

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
CONTAINERD_VERSION="${CONTAINERD_VERSION:-v2.4.2}"
CACHE="${LIKEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/liken}"
OUT="$CACHE/node/$K8S_VERSION-containerd$CONTAINERD_VERSION"
BINS=(kubelet containerd containerd-shim-runc-v2 ctr)

have_all() {
	for b in "${BINS[@]}"; do [ -x "$OUT/bin/$b" ] || return 1; done
}
if have_all; then
	echo "$OUT/bin"
	exit 0
fi

mkdir -p "$OUT/bin" "$OUT/k8s"
# Two test runs may call this at once; the second waits and then finds
# everything built.
if command -v flock >/dev/null; then
	exec 9>"$OUT/.lock"
	flock 9
	if have_all; then
		echo "$OUT/bin"
		exit 0
	fi
fi
log() { echo "build-kubelet: $*" >&2; }

# containerd first: it shares little with Kubernetes' module graph, so it
# need not wait for the control plane. The tags leave out the snapshotters
# that need C libraries or kernel features the tier does not use (the tier
# runs overlayfs).
cd "$OUT"
for b in containerd containerd-shim-runc-v2 ctr; do
	[ -x "$OUT/bin/$b" ] && continue
	GOFLAGS= GOBIN="$OUT/bin.tmp" with_progress "building $b $CONTAINERD_VERSION (containerd's three take about 10 minutes on 2 cores; later runs reuse them)" go install -trimpath -tags no_btrfs,no_devmapper,no_zfs \
		-ldflags="-s -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" \
		"github.com/containerd/containerd/v2/cmd/$b@$CONTAINERD_VERSION"
	mv "$OUT/bin.tmp/$b" "$OUT/bin/$b"
done
rm -rf "$OUT/bin.tmp"

if [ ! -x "$OUT/bin/kubelet" ]; then
	# Waits for a control-plane build under way, and warms the build cache
	# the kubelet reuses when none has run yet.
	cp_bin="$("$REPO/hack/build-control-plane.sh" | tail -n 1)"
	wrapper="$(dirname "$cp_bin")/k8s"
	[ -f "$wrapper/go.sum" ] || { log "no control-plane wrapper module in $wrapper"; exit 1; }
	cd "$OUT/k8s"
	if ! grep -q '^module liken.sh/node' go.mod 2>/dev/null; then
		sed 's/^module .*/module liken.sh\/node/' "$wrapper/go.mod" >go.mod
		cp "$wrapper/go.sum" go.sum
		cat >tools.go <<'GO'
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/kubelet"
GO
		GOFLAGS=-mod=mod with_progress "downloading the kubelet's modules" go mod tidy
	fi
	minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
	LDF="-s -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
	GOFLAGS=-mod=mod with_progress "building kubelet $K8S_VERSION (a few minutes with the control plane's build cache)" go build -trimpath -ldflags="$LDF" -o "$OUT/bin/kubelet.tmp" k8s.io/kubernetes/cmd/kubelet
	mv "$OUT/bin/kubelet.tmp" "$OUT/bin/kubelet"
fi
have_all
echo "$OUT/bin"
