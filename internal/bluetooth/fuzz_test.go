// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/bluez"
)

// FuzzControllerAttributes: every string and number of a device comes
// from the remote device through bluetoothd. Whatever they hold, the
// published devices pass the API's attribute rules (checkAPIDevice), the
// device is named by its address, and connected is always present.
func FuzzControllerAttributes(f *testing.F) {
	f.Add("Living room", "Flip 5", "audio-card", "bluetooth:v000Ap0001d0100", "public", uint32(0x240414), uint16(0), "0000110b-0000-1000-8000-00805f9b34fb;00001812-0000-1000-8000-00805f9b34fb", true)
	f.Add("", "", "", "", "", uint32(0), uint16(0x03c2), "", false)
	f.Add(strings.Repeat("é", 40), "\xff\xfe", " ", strings.Repeat("x", 80), "random", uint32(0xFFFFFFFF), uint16(0xFFFF), ";;", true)
	f.Fuzz(func(t *testing.T, alias, name, icon, modalias, addressType string, class uint32, appearance uint16, uuids string, connected bool) {
		d := bluez.Device{
			Path: "/org/bluez/hci0/dev_E4_17_D8_C5_67_6D", Adapter: hci0, Address: padAddress,
			Alias: alias, Name: name, Icon: icon, Modalias: modalias, AddressType: addressType,
			Paired: true, Connected: connected, Class: class, Appearance: appearance,
			UUIDs: strings.Split(uuids, ";"),
		}
		devs, problems := Build(bluez.Objects{Adapters: []bluez.Adapter{adapter0}, Devices: []bluez.Device{d}}, NodeMap{})
		if len(problems) > 0 || len(devs) != 2 {
			t.Fatalf("devices %v, problems %v", devs, problems)
		}
		for _, dev := range devs {
			if err := checkAPIDevice(dev); err != nil {
				t.Fatal(err)
			}
		}
		pad := byName(t, devs)["e4-17-d8-c5-67-6d"]
		if pad.Attrs["connected"] != connected || pad.Attrs["address"] != padAddress {
			t.Fatalf("controller %v", pad)
		}
		if (len(pad.Taints) > 0 && pad.Taints[0] == disconnected) == connected {
			t.Fatalf("connected=%v but taints %v", connected, pad.Taints)
		}
	})
}
