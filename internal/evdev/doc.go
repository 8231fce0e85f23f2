// SPDX-License-Identifier: Apache-2.0

// Package evdev reads the kernel's input devices through their event
// nodes (/dev/input/eventN): an input device's identity and capabilities
// (the EVIOCG* ioctls of include/uapi/linux/input.h) and its stream of
// struct input_event records.
//
// Capabilities is the snapshot the Bluetooth operator keeps with a
// controller's bond, so that a virtual device standing for the controller
// (package uinput) can be made while the controller itself is asleep. Its
// JSON form is outside data (it is read back from a Secret), so Parse
// checks every code against the kernel's limits before anything uses it.
//
// Why not a library: the Go evdev packages read and clone devices but do
// not round-trip absinfo, properties and force-feedback counts through a
// stored form, and the relay needs exact control of the descriptor (a
// non-blocking read in Go's poller that an ENODEV ends); the ioctls are a
// few lines each.
package evdev
