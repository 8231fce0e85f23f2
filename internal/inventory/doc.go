// SPDX-License-Identifier: Apache-2.0

// Package inventory is the liken.sh DRA driver for clusters whose nodes do
// not run liken's own operating system. It publishes, under liken's names
// and attributes, the two kinds of raw hardware the bluetooth.liken.sh and
// audio.liken.sh operators claim:
//
//   - every sound controller: the PCI function, USB interface or board
//     (platform) device whose sysfs subtree holds an ALSA card, with
//     subsystem "sound" and sound.liken.sh/supportsSound true. A claim on
//     it delivers the card's /dev/snd nodes, the timer and sequencer nodes
//     a sound server opens, and the /dev/input/event* nodes ALSA registers
//     for the card's jacks;
//   - every USB interface bound to btusb, with driver "btusb" and no
//     subsystem. A claim on it delivers the adapter's usbfs node,
//     /dev/uinput, /dev/uhid where the kernel has it, and the 32 legacy
//     evdev nodes by number (13:64..13:95), which the container runtime
//     creates with mknod whether or not a device is registered there yet.
//
// Device names are the bus and the address, lowercase, with dashes for the
// punctuation (pci-0000-00-1f-3, usb-1-8-1-0, platform-snd-aloop-0), cut
// to a DNS label. An attribute the hardware does not state is absent,
// never empty.
//
// Discovery reads sysfs under a configurable root and rescans after kernel
// uevents of the sound, usb, bluetooth, misc and input subsystems settle;
// network devices' uevents wake nothing. Everything is published through
// the driver core in internal/dra.
package inventory
