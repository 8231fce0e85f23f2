// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package uinput_test

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/liken-sh/operators/internal/evdev"
	"github.com/liken-sh/operators/internal/uinput"
	"github.com/liken-sh/operators/test/vm/guest"
)

// TestVMValidateAgreesWithTheKernel: the axes evdev's Validate refuses
// because uinput would (a flat wider than the range, more than 100 touch
// slots) are refused by this kernel with EINVAL, and the widest it
// accepts (a flat as wide as the range, 100 slots, a range too wide for
// an int with any flat) are made. A snapshot that validates is one the
// relay can make devices from.
func TestVMValidateAgreesWithTheKernel(t *testing.T) {
	if err := guest.Modprobe("evdev", "uinput"); err != nil {
		t.Fatal(err)
	}
	axis := func(code uint16, a evdev.AbsInfo) evdev.Capabilities {
		return evdev.Capabilities{Name: "liken validate", ID: evdev.ID{Bus: 5, Vendor: 1, Product: 2}, Keys: []uint16{0x130}, Abs: []evdev.Axis{{Code: code, AbsInfo: a}}}
	}
	for _, c := range []struct {
		name string
		caps evdev.Capabilities
		ok   bool
	}{
		{"flat as wide as the range", axis(0, evdev.AbsInfo{Maximum: 255, Flat: 255}), true},
		{"flat wider than the range", axis(0, evdev.AbsInfo{Maximum: 255, Flat: 256}), false},
		{"a range too wide for an int", axis(0, evdev.AbsInfo{Minimum: -2147483648, Maximum: 2147483647, Flat: 2147483647}), true},
		{"100 touch slots", axis(evdev.AbsMTSlot, evdev.AbsInfo{Maximum: 99}), true},
		{"101 touch slots", axis(evdev.AbsMTSlot, evdev.AbsInfo{Maximum: 100}), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			verr := c.caps.Validate()
			kerr := uinput.SetupUnchecked(t, c.caps)
			if (verr == nil) != c.ok || (kerr == nil) != c.ok {
				t.Errorf("Validate: %v; the kernel: %v; want both to %s", verr, kerr, map[bool]string{true: "accept", false: "refuse"}[c.ok])
			}
			if kerr != nil && !errors.Is(kerr, unix.EINVAL) {
				t.Errorf("the kernel refused with %v, want EINVAL", kerr)
			}
		})
	}
}
