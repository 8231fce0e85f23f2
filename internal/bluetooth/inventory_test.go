// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/liken-sh/operators/internal/bluez"
)

// oddProperty is the problem bluez reports for a Device1 property of the
// wrong D-Bus type, which it reads as absent.
func oddProperty(d bluez.Device, property, want, got string) error {
	return &bluez.PropertyError{Path: d.Path, Interface: bluez.DeviceInterface, Property: property, Want: want, Got: got}
}

// A device published by the previous read whose Paired, Bonded or Address
// comes with the wrong D-Bus type keeps its last good values: read as
// false or "", it would vanish from the slice under a claim that holds it.
func TestInventoryKeepsLastGoodIdentityOfAnOddDevice(t *testing.T) {
	nodes := NodeMap{padAddress: {"/dev/input/event18"}}
	var inv Inventory
	inv.Observe(bluez.Objects{Adapters: []bluez.Adapter{adapter0}, Devices: []bluez.Device{nesPad(t, true), speaker(true)}})
	before, problems := inv.Devices(nodes)
	if len(problems) != 0 || len(before) != 3 {
		t.Fatalf("first read: %d devices, problems %v", len(before), problems)
	}

	// The next read has the pad's Paired and Bonded as strings and the
	// speaker's Address as a number: bluez reads them as false and "".
	pad, spk := nesPad(t, true), speaker(true)
	pad.Paired, pad.Bonded = false, false
	spk.Address = ""
	objs := bluez.Objects{
		Adapters: []bluez.Adapter{adapter0},
		Devices:  []bluez.Device{pad, spk},
		Problems: []error{oddProperty(pad, "Paired", "b", "s"), oddProperty(pad, "Bonded", "b", "s"), oddProperty(spk, "Address", "s", "u")},
	}
	inv.Observe(objs)
	after, problems := inv.Devices(nodes)
	if diff := cmp.Diff(byName(t, after), byName(t, before)); diff != "" {
		t.Errorf("devices changed with odd properties (-byName(t +after), byName(t, before)):\n%s", diff)
	}
	text := errors.Join(problems...)
	if len(problems) != 3 || text == nil {
		t.Fatalf("problems %v, want one per property kept", problems)
	}
	for _, want := range []string{string(pad.Path) + ": Paired unreadable in this read; kept true", string(pad.Path) + ": Bonded unreadable", string(spk.Path) + `: Address unreadable in this read; kept "A0:AB:51:33:B7:12"`} {
		if !strings.Contains(text.Error(), want) {
			t.Errorf("problems do not say %q:\n%v", want, text)
		}
	}
	if objs.Devices[0].Paired || objs.Devices[1].Address != "" {
		t.Error("Observe changed the caller's objects")
	}

	// Still odd a read later: the values kept are kept again.
	inv.Observe(objs)
	if again, _ := inv.Devices(nodes); !reflect.DeepEqual(byName(t, again), byName(t, before)) {
		t.Errorf("second odd read: %v", byName(t, again))
	}

	// A read without problems is taken as it is: the pad unpaired now.
	inv.Observe(bluez.Objects{Adapters: []bluez.Adapter{adapter0}, Devices: []bluez.Device{pad, speaker(true)}})
	final, problems := inv.Devices(nodes)
	if got := byName(t, final); len(got) != 2 || len(problems) != 0 {
		t.Errorf("after an unpairing read: %v, problems %v", got, problems)
	}
}

// A device the previous read did not publish has no last good values: an
// odd Paired leaves it out, as bluez read it.
func TestInventoryOddDeviceWithoutHistoryStaysOut(t *testing.T) {
	var inv Inventory
	inv.Observe(bluez.Objects{Adapters: []bluez.Adapter{adapter0}})
	pad := nesPad(t, true)
	pad.Paired, pad.Bonded = false, false
	inv.Observe(bluez.Objects{Adapters: []bluez.Adapter{adapter0}, Devices: []bluez.Device{pad}, Problems: []error{oddProperty(pad, "Paired", "b", "s")}})
	devs, _ := inv.Devices(nil)
	if got := byName(t, devs); len(got) != 1 {
		t.Errorf("published %v, want the media bus only", got)
	}
}
