// SPDX-License-Identifier: Apache-2.0

package bluez

import (
	"errors"
	"testing"

	"github.com/godbus/dbus/v5"
)

// DisplayName is the alias a person set, else the device's own name; the
// alias BlueZ makes up from the address counts as none.
func TestDisplayName(t *testing.T) {
	for _, tc := range []struct {
		d    Device
		want string
	}{
		{Device{Address: "E4:17:D8:C5:67:6D", Name: "Wireless Controller", Alias: "Player 2"}, "Player 2"},
		{Device{Address: "E4:17:D8:C5:67:6D", Name: "Wireless Controller", Alias: "Wireless Controller"}, "Wireless Controller"},
		{Device{Address: "E4:17:D8:C5:67:6D", Name: "Wireless Controller", Alias: "E4-17-D8-C5-67-6D"}, "Wireless Controller"},
		{Device{Address: "E4:17:D8:C5:67:6D", Alias: "e4-17-d8-c5-67-6d"}, ""},
		{Device{Address: "E4:17:D8:C5:67:6D", Name: "Wireless Controller"}, "Wireless Controller"},
	} {
		if got := tc.d.DisplayName(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.d, got, tc.want)
		}
	}
}

// Battery1.Percentage is a byte (BlueZ doc/org.bluez.Battery.rst); one of
// another type is read as no battery, with a problem, never as 0 %.
func TestBatteryPercentage(t *testing.T) {
	const pad = dbus.ObjectPath("/org/bluez/hci0/dev_E4_17_D8_C5_67_6D")
	for _, tc := range []struct {
		name     string
		battery  map[string]dbus.Variant // nil: no Battery1
		pct      uint8
		has      bool
		problems int
	}{
		{"no Battery1", nil, 0, false, 0},
		{"a byte", map[string]dbus.Variant{"Percentage": dbus.MakeVariant(byte(40))}, 40, true, 0},
		{"empty", map[string]dbus.Variant{"Percentage": dbus.MakeVariant(byte(0))}, 0, true, 0},
		{"no Percentage", map[string]dbus.Variant{"Source": dbus.MakeVariant("GATT Battery Service")}, 0, false, 0},
		{"a uint32", map[string]dbus.Variant{"Percentage": dbus.MakeVariant(uint32(40))}, 0, false, 1},
		{"a string", map[string]dbus.Variant{"Percentage": dbus.MakeVariant("40")}, 0, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ifaces := map[string]map[string]dbus.Variant{
				DeviceInterface: {"Address": dbus.MakeVariant("E4:17:D8:C5:67:6D")},
			}
			if tc.battery != nil {
				ifaces[BatteryInterface] = tc.battery
			}
			objs := decodeObjects(managedObjects{pad: ifaces})
			if len(objs.Devices) != 1 {
				t.Fatalf("devices: %+v", objs.Devices)
			}
			d := objs.Devices[0]
			if d.Battery != tc.pct || d.HasBattery != tc.has {
				t.Errorf("battery %d%% (has %v), want %d%% (has %v)", d.Battery, d.HasBattery, tc.pct, tc.has)
			}
			if len(objs.Problems) != tc.problems {
				t.Fatalf("problems %v, want %d", objs.Problems, tc.problems)
			}
			for _, p := range objs.Problems {
				var pe *PropertyError
				if !errors.As(p, &pe) || pe.Interface != BatteryInterface || pe.Property != "Percentage" || pe.Want != "y" {
					t.Errorf("problem %v, want Battery1.Percentage wanting \"y\"", p)
				}
			}
		})
	}
}
