// SPDX-License-Identifier: Apache-2.0

// Package dbusd starts and supervises a private dbus-daemon of the system
// bus type, listening on one unix socket, and parses the only D-Bus address
// form this project serves, unix:path=/absolute/path.
//
// Two users share it. The bluetoothd image's entrypoint starts the bus that
// bluetoothd and the operator talk over, with the distribution's system bus
// configuration unmodified: its default-deny policy plus every service
// policy in /usr/share/dbus-1/system.d and /etc/dbus-1/system.d, BlueZ's
// bluetooth.conf among them. Tests start the same configuration (or an
// open one) on a socket in a temporary directory, so that a client that
// works there is known to work under BlueZ's real policy.
//
// Readiness is a completed connection (authentication and Hello), not the
// existence of the socket file: dbus-daemon binds the socket before it
// drops to its messagebus user, so a daemon that fails the drop leaves a
// socket behind, and a daemon that was killed leaves a stale one that no
// longer accepts (measured with dbus 1.14.10).
package dbusd
