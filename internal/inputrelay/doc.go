// SPDX-License-Identifier: Apache-2.0

// Package inputrelay keeps a stable input device in front of a Bluetooth
// controller whose own input devices come and go.
//
// A classic HID controller's evdev node lasts one connection: when the
// controller sleeps, BlueZ's HIDP session ends (net/bluetooth/hidp/core.c,
// hidp_session_remove, then hid_destroy_device) and the node is freed;
// when it wakes, a new node gets the lowest free minor. Over HID over GATT
// (uhid) the same happens on BlueZ 5.77 and later for anything that is not
// a keyboard. A program that opened the old node reads ENODEV, and a
// container cannot be given the new one. A Relay is a virtual device
// (package uinput) with the controller's identity and capabilities, which
// lives as long as the claim that delivered it: the controller's node of
// the moment is attached to it, its events are copied in, and the virtual
// device's force-feedback, LED and sound requests are passed back.
//
// When the controller goes, the relay releases every key that was down,
// returns every axis to its resting value and lifts every touch, so a
// game never sees a button stuck down through a nap; then it is silent
// until the controller is back. Force feedback uploaded while the
// controller is connected is kept and uploaded again to its next node on
// first play; an upload while it is away fails with ENODEV, and a play
// while it is away is dropped, never queued.
package inputrelay
