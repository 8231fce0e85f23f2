// SPDX-License-Identifier: Apache-2.0

// Package bluetooth is the Bluetooth operator's device model: pure
// functions from what bluetoothd reports (package bluez) and what the
// kernel's HID bus holds (evdev nodes per peer) to the DRA devices the
// operator publishes as bluetooth.liken.sh, and the prepare function that
// hands an allocated device to a container through CDI.
//
// Two kinds of device are published:
//
//   - a controller: one per paired remote device, connected or not, named
//     by the peer's address ("e4-17-d8-c5-67-6d"), described by attributes
//     decoded from its Class of Device, appearance and profile UUIDs, and
//     tainted while it is off the air or has no input node. Prepare
//     delivers its evdev nodes and nothing else.
//   - a media bus: one per adapter ("00-1a-7d-da-71-13-media"), exclusive,
//     stamped sound.liken.sh/supportsSound, whose prepare mounts the pod's
//     D-Bus directory and points DBUS_SYSTEM_BUS_ADDRESS at it, so that a
//     sound server can reach bluetoothd's Media1 API.
//
// A speaker does not page the host when it is switched on, so while a
// claim of the audio driver holds a paired, trusted speaker that is not
// connected, the operator connects it (Device1.Connect) at once and then
// with waits doubling from 10 s to 2 min (Reconnectable,
// DefaultReconnectFirst); it never connects an input device.
//
// The numbers decoded here (Class of Device fields, 16-bit service UUIDs,
// the appearance category of HID devices) are from the Bluetooth SIG's
// Assigned Numbers document, sections 2.6 (Appearance), 2.8 (Class of
// Device) and 3.3/3.4 (service class and GATT service UUIDs).
package bluetooth
