// Package images declares the four images the seeds run, one spec each:
// audio-operator (the operator binary with PipeWire, WirePlumber and the
// tools its modes run), bluetoothd (our entrypoint with dbus-daemon and
// BlueZ), and bluetooth-operator and bluetooth-bondfetch (static Go
// binaries and nothing else). Names, binary paths and mount points are
// the ones deploy/*/operator.yaml uses; package image builds them.
package images
