// SPDX-License-Identifier: Apache-2.0

// Package bluez holds the VM tier's Bluetooth tests (build tag vmtier):
// the bluetoothd image's entrypoint starting dbus-daemon and a real
// bluetoothd over btvirt's virtual controllers, a pairing between two of
// them, and the bond bluetoothd writes carried through the operator's bond
// store into a fresh tree that a restarted bluetoothd loads, and the
// operator pairing a HID gamepad through a PairingRequest that then
// reconnects on its own after the pod's restart. They run only inside the
// guest that package vm boots.
package bluez
