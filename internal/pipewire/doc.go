// SPDX-License-Identifier: Apache-2.0

// Package pipewire is the audio operator's side of PipeWire and
// WirePlumber: what it declares to them and how it reads back what they
// hold.
//
// Declaring. Every PCM device the pod's claim delivered becomes one
// adapter object in PipeWire's context.objects, written by the declare
// init container as the drop-in 60-liken-outputs.conf before PipeWire
// starts (PipeWire builds context.objects while it loads its
// configuration and never reads a fragment that arrives later). Output
// models one such object; WriteDeclaration writes the file atomically and
// ReadDeclaration parses it back, so that the operator can tell whether
// the PCM set or a layout changed since PipeWire loaded it. The
// WirePlumber fragments (the Bluetooth monitor, the default volume) and
// the configuration the image bakes (the main-embedded profile without
// the udev-based monitors, access for clients in other PID namespaces)
// are generated here too, so the image build and the tests use the same
// text.
//
// Reading. ParseDump turns one pw-dump into a Graph: nodes with their
// properties, state, negotiated format and volume, and the links between
// them. Stream applies the batches of `pw-dump -m` (monitor mode) to a
// running graph, and Monitor runs that command as a child and delivers a
// snapshot after every batch. A dump that is truncated or not pw-dump's
// shape is a failed read; no partial graph is ever returned.
//
// Writing. SetVolume sets a node's software volume and mute with
// `pw-cli set-param`, and Node.Observed reads them back in a Sink's
// units, saying when PipeWire's reading may lag the write (volume.go
// states what PipeWire shows and when). Graph.LinkedNodes tells whether
// any stream still uses a published node.
//
// Facts measured with PipeWire 1.4.2 and WirePlumber 0.5.8 (Debian
// bookworm-backports) on this project's test machines are stated where
// they are used.
package pipewire
