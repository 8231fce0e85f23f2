// SPDX-License-Identifier: Apache-2.0

// Package kubelet stands in for the DRA side of a kubelet in end-to-end
// tests. It finds a DRA driver through the plugin registration directory
// the way the kubelet's plugin watcher does, registers it, and calls the
// driver's NodePrepareResources and NodeUnprepareResources (DRA gRPC v1)
// with the same request shape the kubelet sends. It runs no pods and keeps
// no claim cache: each call sends exactly the claims it is given.
package kubelet
