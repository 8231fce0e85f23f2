// SPDX-License-Identifier: Apache-2.0

// Package harness runs a real Kubernetes control plane for end-to-end tests:
// etcd, kube-apiserver, kube-scheduler and kube-controller-manager, each a
// child process of the test with its own free ports, certificates and
// working directory, so several clusters can run side by side.
//
// There is no kubelet and no container runtime. Pods are bound to nodes by
// the real scheduler, and ResourceClaims are allocated by it, but no
// container ever runs. [Cluster.AddNode] and [Cluster.PublishLikenDevices]
// stand in for what a kubelet and liken's own liken.sh driver would publish
// for a node; package test/e2e/kubelet stands in for the kubelet's DRA side.
//
// The binaries come from hack/build-control-plane.sh (see [Start]). A cold
// build takes about 15 to 20 minutes on two cores, longer than go test's default
// timeout, so the first run needs -timeout 30m. Always build tests with
// -trimpath: the control-plane build uses it, and the Go build cache is only
// shared between builds with the same flags. Without it every test binary
// recompiles client-go and friends, which takes minutes.
package harness
