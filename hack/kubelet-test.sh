#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The kubelet tier: both bases run as pods on a real kubelet and containerd
# on this machine (test/kubelettier). Builds or reuses the control plane
# (hack/build-control-plane.sh), kubelet and containerd
# (hack/build-kubelet.sh) and the images (hack/build-images.sh), runs the
# tier's tests, and then checks that the host is as it was: a run that did
# not restore it (killed, or its restore failed) is cleaned up here and
# fails. Arguments go to go test, e.g. -run 'TestTier/Bluetooth'.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/env.sh
[ "${LIKEN_SKIP_DEPS:-0}" = 1 ] || hack/install-deps.sh
# Assigned, then exported: export would hide a failed build's status.
[ -n "${LIKEN_CONTROL_PLANE_BIN:-}" ] || LIKEN_CONTROL_PLANE_BIN="$(hack/build-control-plane.sh | tail -n 1)"
[ -n "${LIKEN_NODE_BIN:-}" ] || LIKEN_NODE_BIN="$(hack/build-kubelet.sh | tail -n 1)"
export LIKEN_CONTROL_PLANE_BIN LIKEN_NODE_BIN
export LIKEN_IMAGES="${LIKEN_IMAGES:-$PWD/_output/images}"
# The node is amd64: it imports the amd64 tarballs alone. hack/test.sh
# builds them beforehand (LIKEN_IMAGES_BUILT=1) from the same checkout.
if [ "${LIKEN_IMAGES_BUILT:-0}" != 1 ]; then
	PLATFORMS=linux/amd64 LIKEN_SKIP_DEPS=1 hack/build-images.sh "$LIKEN_IMAGES" >/dev/null
fi
began=$(date +%s)
status=0
# One package at a time: each changes the host and checks it after.
go test -trimpath -tags kubelettier -count=1 -p 1 -timeout 20m -v ./test/node/ ./test/kubelettier/ "$@" || status=$?
go run -trimpath ./test/node/cmd/node-restore "$LIKEN_NODE_BIN" || status=1
echo "kubelet tier: $(( $(date +%s) - began )) s (status $status)"
exit $status
