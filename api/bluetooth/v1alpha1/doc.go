// SPDX-License-Identifier: Apache-2.0

// Package v1alpha1 holds the Bluetooth operator's custom resources, group
// bluetooth.liken.sh, version v1alpha1:
//
//   - Adapter (cluster-scoped): one local radio, named by its address in
//     lowercase with dashes ("00-1a-7d-da-71-13"). It has no owner, so
//     that a reinstall of anything cannot garbage-collect the bonds under
//     it.
//   - Peripheral (cluster-scoped): one bond, named like the DRA device the
//     operator publishes for it (the peer's address, "e4-17-d8-c5-67-6d"),
//     owned by its Adapter. Deleting it unpairs the device.
//   - PairingRequest (namespaced): one pairing window on one adapter. A
//     person creates it, watches status.seen fill, and approves a device
//     by writing spec.device.
//
// The operator creates Adapters and Peripherals and owns every status; a
// person owns the specs.
//
// The CRD manifests in deploy/bluetooth/crds are generated from these
// types by hack/gen-api.sh (controller-gen); a test fails when they are
// stale.
//
// +kubebuilder:object:generate=true
// +groupName=bluetooth.liken.sh
package v1alpha1
