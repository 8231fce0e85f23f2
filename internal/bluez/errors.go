// SPDX-License-Identifier: Apache-2.0

package bluez

import "errors"

// The ways the client stops or fails to start. Each is wrapped with detail;
// test with errors.Is.
var (
	// ErrNoBus: the bus socket did not appear, or did not accept a
	// connection, within the wait bound.
	ErrNoBus = errors.New("the D-Bus system bus did not come up")
	// ErrNoBlueZ: the bus is up but nobody took the name org.bluez within
	// the wait bound (bluetoothd did not start, or exited at start).
	ErrNoBlueZ = errors.New("bluetoothd did not take org.bluez on the bus")
	// ErrBlueZGone: org.bluez lost the owner this client started with,
	// i.e. bluetoothd left the bus. Its object tree is gone with it; the
	// operator exits 1 so the kubelet restarts it beside the new daemon.
	ErrBlueZGone = errors.New("bluetoothd left the bus")
	// ErrConnectionLost: the connection to the bus daemon closed under the
	// client (dbus-daemon exited or the socket broke).
	ErrConnectionLost = errors.New("the connection to the D-Bus system bus was lost")
	// ErrClosed: Close was called.
	ErrClosed = errors.New("bluez client closed")
)
