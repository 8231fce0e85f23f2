// SPDX-License-Identifier: Apache-2.0

// Package uinput makes virtual input devices through /dev/uinput
// (drivers/input/misc/uinput.c; Documentation/input/uinput.rst): a device
// with the identity and capabilities of an evdev.Capabilities snapshot,
// into which a process writes events that readers of the device's own
// event node receive as if hardware had sent them, and from which it
// reads what those readers send back: force-feedback uploads, erasures
// and plays, and LED and sound changes.
//
// It is the kernel half of the Bluetooth operator's input relay; see
// package inputrelay.
package uinput
