// SPDX-License-Identifier: Apache-2.0

// Package imageset declares the seven images the repository ships, one
// spec each: the five deploy/*/ runs — audio-operator (the light
// entrypoint and audio-driver with PipeWire, WirePlumber and the tools
// its modes run; audio-api runs from it too), bluetoothd (our entrypoint
// with dbus-daemon and BlueZ), bluetooth-operator, bluetooth-bondfetch
// and liken-inventory (static Go binaries, the inventory with the PCI ID
// database) — and the two kubectl plugins' -cli images. Names, binary
// paths and mount points are the ones deploy/ uses; package ocibuild
// builds them, for linux/amd64 and linux/arm64.
package imageset
