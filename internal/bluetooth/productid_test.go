// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"fmt"
	"testing"

	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/hid"
)

// The vendor and product attributes come from the pad's HID device while
// it has one and stay what it gave while the pad sleeps (its HID device
// gone), even where bluetoothd's modalias says otherwise; a pad the
// operator never saw awake takes them from the modalias; an unpaired pad
// is forgotten.
func TestVendorAndProductStayWhileThePadSleeps(t *testing.T) {
	// A modalias that disagrees with the HID device, so the test can
	// tell where a value came from.
	pad := func(connected bool) bluez.Device {
		d := nesPad(t, connected)
		d.Modalias = "usb:v054Cp09CCd0100"
		return d
	}
	awake := hid.Scan{Devices: []hid.Device{{
		Address: padAddress, Adapter: hci0Address, Vendor: 0x2DC8, Product: 0x3820, SysName: "0005:2DC8:3820.0006",
		Nodes: []hid.Node{{Path: "/dev/input/event5", Major: 13, Minor: 69}},
	}}}
	var inv Inventory
	ids := func(when string, scan hid.Scan, objs bluez.Objects, vendor, product any) {
		t.Helper()
		inv.Observe(objs)
		inv.ObserveHID(scan.Devices)
		devs, _ := inv.Devices(scan)
		got := byName(t, devs)["e4-17-d8-c5-67-6d"]
		if got.Attrs["vendor"] != vendor || got.Attrs["product"] != product {
			t.Errorf("%s: vendor %v, product %v; want %v, %v", when, got.Attrs["vendor"], got.Attrs["product"], vendor, product)
		}
	}
	objs := func(connected bool) bluez.Objects {
		return bluez.Objects{Adapters: []bluez.Adapter{adapter0}, Devices: []bluez.Device{pad(connected)}}
	}
	ids("asleep, never seen awake", hid.Scan{}, objs(false), "054c", "09cc")
	ids("awake", awake, objs(true), "2dc8", "3820")
	ids("asleep", hid.Scan{}, objs(false), "2dc8", "3820")
	// A HID device that reports no vendor (no Device ID record) changes
	// nothing.
	ids("awake with a vendorless HID device", hid.Scan{Devices: []hid.Device{{Address: padAddress, Adapter: hci0Address}}}, objs(true), "2dc8", "3820")
	// bluetoothd restarted and reports no adapter: the pad stays published
	// as departed, and so do its ids.
	ids("its adapter departed", hid.Scan{}, bluez.Objects{}, "2dc8", "3820")
	ids("its adapter back", hid.Scan{}, objs(false), "2dc8", "3820")
	// Unpaired, then paired again while asleep: the memory went with the
	// bond.
	inv.Observe(bluez.Objects{Adapters: []bluez.Adapter{adapter0}})
	inv.ObserveHID(nil)
	ids("paired again, asleep", hid.Scan{}, objs(false), "054c", "09cc")
}

func TestParseModalias(t *testing.T) {
	for in, want := range map[string]productID{
		"usb:v2DC8p3820d0100":        {0x2dc8, 0x3820},
		"bluetooth:v000Ap0001d0100":  {0x000a, 0x0001},
		"usb:v054cp09ccd0100":        {0x054c, 0x09cc},
		"usb:v0000p0000d0000":        {},
		"usb:v0000p0010d0000":        {},
		"":                           {},
		"usb:v2DC8p3820":             {},
		"usb:v2DC8p3820d0100x":       {},
		"pci:v2DC8p3820d0100":        {},
		"usb:v+DC8p3820d0100":        {},
		"usb:v2DC8q3820d0100":        {},
		"usb:v2DC8p3820d01 0":        {},
		"usb:V2DC8p3820d0100":        {},
		"bluetooth:v0x0Ap0001d0100":  {},
		"usb:v2DC8p3820d0100\x00":    {},
		"hid:b0005g0001v00002DC8p00": {},
	} {
		if got := parseModalias(in); got != want {
			t.Errorf("parseModalias(%q) = %+v, want %+v", in, got, want)
		}
	}
	if v, p := (productID{0x2dc8, 0x3820}).attributes(); v != "2dc8" || p != "3820" {
		t.Errorf("attributes %q %q, want 2dc8 3820", v, p)
	}
}

// FuzzParseModalias: bluetoothd passes on what the remote device's PnP or
// Device ID record says. Whatever the modalias, a known id is four hex
// digits each way, and spelled back into the modalias form it parses to
// itself.
func FuzzParseModalias(f *testing.F) {
	for _, s := range []string{"usb:v2DC8p3820d0100", "bluetooth:v000Ap0001d0100", "usb:v1532p0082d0001", "usb:v1D6Bp0246d0542", "", "usb:v-001p0001d0001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id := parseModalias(s)
		if !id.known() {
			if id != (productID{}) {
				t.Fatalf("%q: unknown id with a product %+v", s, id)
			}
			return
		}
		if id.vendor > 0xffff || id.product > 0xffff {
			t.Fatalf("%q: id %+v wider than 16 bits", s, id)
		}
		if v, p := id.attributes(); len(v) != 4 || len(p) != 4 {
			t.Fatalf("%q: attributes %q %q", s, v, p)
		}
		if again := parseModalias(fmt.Sprintf("usb:v%04Xp%04Xd0000", id.vendor, id.product)); again != id {
			t.Fatalf("%q: %+v spelled again parses as %+v", s, id, again)
		}
	})
}
