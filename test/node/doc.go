// SPDX-License-Identifier: Apache-2.0

// Package node runs a real Kubernetes node on this machine for the kubelet
// tier: containerd (with runc and CDI) and a kubelet joined to a
// [harness.Cluster], both children of the test that can never outlive it.
//
// A kubelet changes the host it runs on: sysctls, iptables chains, mounts
// (pod volumes, network namespaces, container root filesystems), cgroups,
// the CNI bridge and directories such as /var/lib/kubelet. [Start] records
// the host first ([Snapshot], saved to [HostRecord]) and [Node.Stop] puts
// it all back and checks that it did ([Host.Diff]); a run killed before
// its cleanup is cleaned up by the next [Start] ([Recover]).
//
// What this machine needs, measured: restrict_oom_score_adj in containerd
// and --oom-score-adj=0 for the kubelet (no CAP_SYS_RESOURCE here), cgroup
// v1 through cgroupfs, and every image imported ([Node.Import]) because
// nothing can be pulled.
package node
