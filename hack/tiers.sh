#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The two tiers that need this host's root and a built node: the VM tier
# (hack/vm-test.sh), then the kubelet tier (hack/kubelet-test.sh; with
# LIKEN_IMAGES_BUILT=1 it takes the images hack/test.sh built beside its
# earlier phases), each with its wall time. Both run even when the first
# fails; exits 1 when either did.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
began=$SECONDS
echo "-- VM tier: the kernel-facing tests on a real kernel under qemu"
hack/vm-test.sh || status=1
echo "-- VM tier took $(( SECONDS - began )) s"
began=$SECONDS
echo "-- kubelet tier: both bases as pods on a real kubelet and containerd"
LIKEN_SKIP_DEPS=1 hack/kubelet-test.sh || status=1
echo "-- kubelet tier took $(( SECONDS - began )) s"
exit $status
