// SPDX-License-Identifier: Apache-2.0

package fakesys

import (
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
