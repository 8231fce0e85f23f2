// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package hid

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/liken-sh/operators/test/vm/guest"
)

// The VM tier's test (test/vm): a Bluetooth gamepad made through uhid on a
// real kernel is where Discover looks, and Discover finds it, with its
// address, its adapter and its evdev node, and nothing else: not a USB
// HID device beside it, and not the gamepad once it is gone.
func TestVMDiscoverUHIDGamepad(t *testing.T) {
	if err := guest.Modprobe("uhid", "hid-generic", "evdev"); err != nil {
		t.Fatal(err)
	}
	const uniq, address, adapter = "a4:c1:38:0e:5f:21", "A4:C1:38:0E:5F:21", "00:AA:01:00:00:00"
	pad, err := guest.CreateUHID(guest.UHIDSpec{
		Name: "liken vm gamepad", Phys: strings.ToLower(adapter), Uniq: uniq,
		Bus: guest.BusBluetooth, Vendor: 0x1d6b, Product: 0x0246, Descriptor: guest.GamepadDescriptor,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if pad != nil {
			pad.Destroy()
		}
	}()
	usb, err := guest.CreateUHID(guest.UHIDSpec{
		Name: "liken vm usb pad", Uniq: "11:22:33:44:55:66",
		Bus: guest.BusUSB, Vendor: 0x1d6b, Product: 0x0104, Descriptor: guest.GamepadDescriptor,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer usb.Destroy()

	// The evdev node is made by hid-input after the driver started the
	// device; without udev, devtmpfs makes /dev/input/eventN itself.
	var events []string
	if !guest.WaitFor(30*time.Second, func() bool {
		events = guest.Glob("/sys/bus/hid/devices/0005:1D6B:0246.*/input/input*/event*")
		return len(events) == 1 && guest.Exists(filepath.Join("/dev/input", filepath.Base(events[0])))
	}) {
		t.Fatalf("no evdev node for the gamepad: %q", events)
	}
	node := filepath.Join("/dev/input", filepath.Base(events[0]))
	entry := filepath.Dir(filepath.Dir(filepath.Dir(events[0])))
	raw, err := os.ReadFile(filepath.Join(entry, "uevent"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s/uevent:\n%s", entry, raw)

	scan, err := Discover(DefaultSysRoot, DefaultDevRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range scan.Skipped {
		t.Errorf("skipped: %v", p)
	}
	if len(scan.Devices) != 1 {
		t.Fatalf("Discover found %d devices, want only the Bluetooth gamepad: %+v", len(scan.Devices), scan.Devices)
	}
	d := scan.Devices[0]
	t.Logf("found %+v", d)
	if d.Address != address || d.Adapter != adapter || d.Name != "liken vm gamepad" || d.Vendor != 0x1d6b || d.Product != 0x0246 {
		t.Errorf("found %+v, want address %s, adapter %s, 1d6b:0246", d, address, adapter)
	}
	if d.SysName != filepath.Base(entry) || !strings.HasPrefix(d.DevPath, "/devices/virtual/misc/uhid/") {
		t.Errorf("found %s at %s, want %s below /devices/virtual/misc/uhid", d.SysName, d.DevPath, filepath.Base(entry))
	}
	if len(d.Nodes) != 1 || d.Nodes[0].Path != node {
		t.Fatalf("evdev nodes %v, want [%s]", d.Nodes, node)
	}
	if got := scan.EventNodes(address, adapter); len(got) != 1 || got[0] != node {
		t.Errorf("Scan.EventNodes(%s, %s) = %q, want [%s]", address, adapter, got, node)
	}
	// An evdev node: a character device of the input major (13).
	var st syscall.Stat_t
	if err := syscall.Stat(node, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFCHR || st.Rdev>>8&0xfff != 13 {
		t.Errorf("%s: mode %o rdev %#x (%v), want a character device of major 13", node, st.Mode, st.Rdev, err)
	}
	// The number Discover read from sysfs is the node's own.
	if major, minor := unix.Major(st.Rdev), unix.Minor(st.Rdev); d.Nodes[0].Major != major || d.Nodes[0].Minor != minor {
		t.Errorf("Discover numbers %s as %d:%d, the node is %d:%d", node, d.Nodes[0].Major, d.Nodes[0].Minor, major, minor)
	}

	if err := pad.Destroy(); err != nil {
		t.Fatal(err)
	}
	pad = nil
	scan, err = Discover(DefaultSysRoot, DefaultDevRoot)
	if err != nil || len(scan.Devices) != 0 {
		t.Errorf("after the gamepad's removal Discover found %+v (%v), want nothing", scan.Devices, err)
	}
}
