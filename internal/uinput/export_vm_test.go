// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package uinput

// The VM tier's tests are in package uinput_test, since the guest helpers
// they use make devices through this package; this file lends them what
// they need of its inside.

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/liken-sh/operators/internal/evdev"
)

// SetupUnchecked runs the kernel's part of Create on caps without
// Validate first, and says whether the kernel made the device.
func SetupUnchecked(t *testing.T, caps evdev.Capabilities) error {
	t.Helper()
	fd, err := unix.Open(DefaultPath, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := &Device{f: os.NewFile(uintptr(fd), DefaultPath), caps: caps}
	err = d.setup()
	d.Close()
	return err
}
