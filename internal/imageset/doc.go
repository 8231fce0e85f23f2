// SPDX-License-Identifier: Apache-2.0

// Package imageset declares the four images deploy/*/operator.yaml runs, one spec each:
// audio-operator (the operator binary with PipeWire, WirePlumber and the
// tools its modes run), bluetoothd (our entrypoint with dbus-daemon and
// BlueZ), and bluetooth-operator and bluetooth-bondfetch (static Go
// binaries and nothing else). Names, binary paths and mount points are
// the ones deploy/*/operator.yaml uses; package ocibuild builds them.
package imageset
