// SPDX-License-Identifier: Apache-2.0

// Package relayd is the Bluetooth pod's input relay daemon. It keeps, for
// each prepared claim on a controller, one virtual input device per input
// device of the controller (package inputrelay), and feeds each from the
// controller's node of the moment, found by the same HID discovery the
// operator publishes from (package hid).
//
// It runs in its own container beside the operator so that the virtual
// devices, and the consumers reading them, live through an operator
// restart: a uinput device lasts as long as the descriptor that made it.
// The operator asks for a claim's devices at prepare and lets them go at
// unprepare over a small HTTP API on a unix socket in the pod (Handler,
// Client).
//
// What each controller is (its capabilities snapshot, evdev.Capabilities)
// is recorded when it is first seen connected and kept in a state file,
// with the claims, so a claim on a controller that is asleep gets its
// devices, and a restarted daemon makes the same claims' devices again
// (at new device numbers, which the operator then writes into the claims'
// CDI specs).
package relayd
