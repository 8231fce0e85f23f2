// SPDX-License-Identifier: Apache-2.0

// Package bluez is the operator's client of bluetoothd over D-Bus: it waits
// for the private system bus and for org.bluez to be owned, reads BlueZ's
// object tree into typed Adapter and Device values, follows BlueZ's change
// signals as a stream, tells a departed bluetoothd apart from a lost bus, and
// switches an adapter's page scan on.
//
// The interfaces and properties are those of BlueZ's documented D-Bus API
// (BlueZ doc/org.bluez.Adapter.rst, doc/org.bluez.Device.rst) and of the
// D-Bus specification's ObjectManager and Properties interfaces. The
// connection is always private (godbus Connect, never the shared
// SystemBus), because the operator closes it on exit and a shared one must
// not be closed.
package bluez
