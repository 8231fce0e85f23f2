// SPDX-License-Identifier: Apache-2.0

// Package kubelettier is the kubelet tier (hack/kubelet-test.sh): both
// deploy bases as pods on a real kubelet and containerd on this machine,
// from the images hack/build-images.sh builds, with an overlay only where
// the machine lacks hardware.
package kubelettier
