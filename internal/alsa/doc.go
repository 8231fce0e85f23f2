// SPDX-License-Identifier: Apache-2.0

// Package alsa reads sound cards through the ALSA control interface, the
// /dev/snd/controlC<N> node, without alsa-lib: what the audio operator's
// declare mode and its operator loop need to know about each PCM device.
//
// The pieces:
//
//   - [Control] is one handle on a card's control interface: card info,
//     the element list, element info, read, write and TLV read, PCM
//     enumeration and PCM info, and change events. [HWControl] drives the
//     kernel with ioctls through x/sys/unix (layouts and numbers from
//     include/uapi/sound/asound.h, abi.go); [Recorded] serves a card from a
//     [Dump] (JSON) and changes it the way hardware changes, with the
//     events the kernel would send. [Opener] picks one: [DevOpener] for
//     /dev/snd, [DumpDir] for a directory of dumps.
//   - [ScanDevSnd] lists the control and PCM nodes a container was given;
//     [ReadCard] reads everything about a card's PCMs: PCM ids, each HDMI/DP
//     output's ELD (parsed by package eld), channel maps, jacks.
//   - [ReadCardIdentity] places a card in sysfs (PCI function or USB
//     device, driver) for names that survive reboots; [ConnectionType]
//     classifies an output; [ChooseLayout] picks its channel layout.
//
// Package alsatest turns what people post about real cards into dumps
// and holds the real-kernel checks the VM tier runs.
//
// Card and PCM numbers are this boot's; the stable identity of an output
// is its card's [CardIdentity] and its PCM's id.
package alsa
