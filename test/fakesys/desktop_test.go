// SPDX-License-Identifier: Apache-2.0

package fakesys

import (
	"slices"
	"testing"

	"github.com/liken-sh/operators/internal/inventory"
)

// A renumbered adapter is found by the inventory driver at its new usbfs
// node, with the kernel's minor for it, and at no other.
func TestRenumberDesktopAdapter(t *testing.T) {
	d, err := LayOutDesktop(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	name, minor, err := RenumberDesktopAdapter(d.Sys, 9)
	if err != nil {
		t.Fatal(err)
	}
	if name != "bus/usb/001/009" || minor != 8 {
		t.Fatalf("RenumberDesktopAdapter(9) = %s, minor %d; want bus/usb/001/009, minor 8", name, minor)
	}
	scan, err := inventory.Discover(d.Sys, nil)
	if err != nil {
		t.Fatal(err)
	}
	adapter, ok := scan.Lookup("usb-1-8-1-0")
	if !ok {
		t.Fatal("the renumbered desktop has no adapter usb-1-8-1-0")
	}
	nodes, err := inventory.Nodes(d.Sys, d.Dev, adapter)
	if err != nil {
		t.Fatal(err)
	}
	var usbfs []inventory.Node
	for _, n := range nodes {
		if n.Major == 189 {
			usbfs = append(usbfs, n)
		}
	}
	want := []inventory.Node{{Name: "bus/usb/001/009", Major: 189, Minor: 8}}
	if !slices.Equal(usbfs, want) {
		t.Errorf("the adapter's usbfs nodes are %v, want %v", usbfs, want)
	}
	for _, bad := range []int{3, 129} {
		if _, _, err := RenumberDesktopAdapter(d.Sys, bad); err == nil {
			t.Errorf("RenumberDesktopAdapter(%d) was accepted", bad)
		}
	}
}
