// SPDX-License-Identifier: Apache-2.0

// Package dra is the Dynamic Resource Allocation driver core that both liken
// operators (bluetooth.liken.sh and audio.liken.sh) stand on. It knows nothing
// about audio or Bluetooth: an operator hands it the devices it found and a
// function that turns one allocated device into container edits, and the core
// does the rest:
//
//   - registers with the kubelet and serves the DRA gRPC API through
//     k8s.io/dynamic-resource-allocation/kubeletplugin (KEP-4381), with
//     rolling-update sockets when the pod UID is known;
//   - publishes one ResourceSlice pool per node, named for the node and owned
//     by the Node, through a settle window so that a burst of hardware events
//     becomes one slice write (every write wakes every DRA-pending pod);
//   - carries device taints (KEP-5055) as part of a device, so a device whose
//     hardware went away stays published, tainted, while a claim may hold it;
//   - reports each device's health to the kubelet (KEP-4680, DRA resource
//     health): Unhealthy with the operator's Device.Problem, or with the
//     taint keys when it gave none, which the kubelet shows in the
//     allocatedResourcesStatus of the pods using the device;
//   - writes one CDI spec per prepared claim (<driver>-<claimUID>.json) with
//     the CDI library, and rebuilds it when the CDI directory was wiped;
//   - decodes this driver's opaque claim configuration strictly into the
//     operator's own parameter type;
//   - keeps prepared claims in a versioned, checksummed checkpoint file so
//     that a restarted driver answers the kubelet's repeated calls correctly;
//   - exports Prometheus metrics and logs through contextual klog.
package dra
