// SPDX-License-Identifier: Apache-2.0

package fakesys

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/liken-sh/operators/internal/hid"
)

// The tree must be what hid.Discover finds on a real kernel.
func TestBluetoothHIDIsDiscovered(t *testing.T) {
	root := t.TempDir()
	if _, err := BluetoothHID(root, "0005:2DC8:3820.0001", "8Bitdo NES30 Pro", "E4:17:D8:C5:67:6D", "00:1A:7D:DA:71:13", 7); err != nil {
		t.Fatal(err)
	}
	scan, err := hid.Discover(root, "/dev")
	if err != nil {
		t.Fatal(err)
	}
	if len(scan.Devices) != 1 || len(scan.Skipped) != 0 {
		t.Fatalf("scan %+v", scan)
	}
	d := scan.Devices[0]
	if d.Address != "E4:17:D8:C5:67:6D" || d.Adapter != "00:1A:7D:DA:71:13" || len(d.Nodes) != 1 || d.Nodes[0] != (hid.Node{Path: "/dev/input/event7", Major: 13, Minor: 71}) {
		t.Fatalf("device %+v", d)
	}
	if _, err := BluetoothHID(root, "0003:046D:C52B.0002", "usb", "x", "y", 3); err == nil {
		t.Fatal("a USB HID name was accepted")
	}
}

// A USB HID device is on the HID bus but not Bluetooth: discovery leaves
// it out, and its node is not counted for anyone. RemoveHID takes a
// device away as the kernel does.
func TestUSBHIDAndRemoveHID(t *testing.T) {
	root := t.TempDir()
	pad, err := BluetoothHID(root, "0005:2DC8:3820.0001", "8Bitdo NES30 Pro", "E4:17:D8:C5:67:6D", "00:1A:7D:DA:71:13", 7)
	if err != nil {
		t.Fatal(err)
	}
	kbd, err := USBHID(root, "0003:046D:C31C.0002", "Logitech USB Keyboard", 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(kbd, "input/input8/event8/uevent")); err != nil {
		t.Fatal(err)
	}
	scan, err := hid.Discover(root, "/dev")
	if err != nil || len(scan.Devices) != 1 || len(scan.Skipped) != 0 || scan.Devices[0].SysName != "0005:2DC8:3820.0001" {
		t.Fatalf("scan %+v, %v: want the pad alone", scan, err)
	}
	if err := RemoveHID(root, pad); err != nil {
		t.Fatal(err)
	}
	if scan, err = hid.Discover(root, "/dev"); err != nil || len(scan.Devices) != 0 {
		t.Fatalf("after the pad's removal: %+v, %v", scan, err)
	}
	if _, err := USBHID(root, "0005:2DC8:3820.0003", "pad", 3, 9); err == nil {
		t.Error("a Bluetooth HID name was accepted as USB")
	}
}
