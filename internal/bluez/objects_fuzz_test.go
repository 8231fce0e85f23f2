// SPDX-License-Identifier: Apache-2.0

package bluez

import (
	"errors"
	"testing"

	"github.com/godbus/dbus/v5"
)

// fuzzObjects builds a GetManagedObjects reply from data, three bytes
// and a value at a time: which object, which interface, which property,
// and the value's D-Bus type. dbus-daemon relays only well-formed
// messages and godbus's Store checks the reply's signature, so what can
// reach decodeObjects is any tree of that shape with variants of any
// type. godbus's wire decoder is the library's to fuzz, not this
// project's (it also sizes a slice by an array's length field before
// reading it, so mutated messages spend the run in allocation).
func fuzzObjects(data []byte) managedObjects {
	paths := []dbus.ObjectPath{"/org/bluez/hci0", "/org/bluez/hci0/dev_E4_17_D8_C5_67_6D", "/org/bluez/hci1/dev_00_1A_7D_DA_71_13", "/"}
	ifaces := []string{AdapterInterface, DeviceInterface, BatteryInterface, "org.bluez.Input1"}
	props := []string{"Address", "AddressType", "Alias", "Name", "Powered", "Connectable", "Discovering", "Discoverable",
		"Pairable", "DiscoverableTimeout", "PairableTimeout", "Modalias", "Adapter", "Paired", "Bonded", "Connected",
		"Trusted", "Class", "Appearance", "Icon", "UUIDs", "LegacyPairing", "RSSI", "Percentage"}
	out := managedObjects{}
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	text := func() string {
		n := min(int(next())%32, len(data))
		s := string(data[:n])
		data = data[n:]
		return s
	}
	for len(data) > 0 {
		p, i, name := paths[int(next())%len(paths)], ifaces[int(next())%len(ifaces)], props[int(next())%len(props)]
		var v any
		switch next() % 12 {
		case 0:
			v = text()
		case 1:
			v = next()%2 == 1
		case 2:
			v = next()
		case 3:
			v = uint16(next())<<8 | uint16(next())
		case 4:
			v = int16(uint16(next())<<8 | uint16(next()))
		case 5:
			v = uint32(next())<<24 | uint32(next())<<16 | uint32(next())<<8 | uint32(next())
		case 6:
			v = int32(next())
		case 7:
			v = []string{text(), text()}
		case 8:
			v = dbus.ObjectPath("/" + text())
		case 9:
			v = []byte(text())
		case 10:
			v = dbus.MakeVariant(text())
		default:
			v = map[string]dbus.Variant{text(): dbus.MakeVariant(next())}
		}
		if out[p] == nil {
			out[p] = map[string]map[string]dbus.Variant{}
		}
		if out[p][i] == nil {
			out[p][i] = map[string]dbus.Variant{}
		}
		out[p][i][name] = dbus.MakeVariant(v)
	}
	return out
}

// FuzzDecodeObjects: GetManagedObjects' reply is whatever owns org.bluez
// on the bus. Whatever it holds, reading it into Objects never panics;
// every object carrying Adapter1 or Device1 comes out once, and each
// property of another type is one *PropertyError, never a value.
func FuzzDecodeObjects(f *testing.F) {
	// The 8Bitdo pad's device (its address, Class 0x002508) and adapter,
	// every property of the type BlueZ gives it.
	f.Add([]byte("\x00\x00\x00\x00\x1100:1A:7D:DA:71:13\x00\x00\x04\x01\x01\x01\x01\x17\x00\x11E4:17:D8:C5:67:6D" +
		"\x01\x01\x11\x05\x00\x00\x25\x08\x01\x01\x0d\x01\x01\x01\x01\x14\x07\x24" + "00001124-0000-1000-8000-00805f9b34fb\x00" +
		"\x01\x02\x17\x02\x50\x01\x01\x16\x04\xff\xc4\x01\x01\x0c\x08\x0eorg/bluez/hci0"))
	// Every property of the wrong type.
	f.Add([]byte("\x01\x01\x00\x05\x00\x00\x00\x01\x01\x01\x11\x00\x060x2508\x01\x01\x14\x09\x02ab\x01\x01\x16\x06\x3c\x01\x02\x17\x06\xc8\x00\x00\x04\x0a\x03yes"))
	f.Fuzz(func(t *testing.T, data []byte) {
		reply := fuzzObjects(data)
		objs := decodeObjects(reply)
		adapters, devices, props := 0, 0, 0
		for _, ifaces := range reply {
			if p, ok := ifaces[AdapterInterface]; ok {
				adapters++
				props += len(p)
			}
			if p, ok := ifaces[DeviceInterface]; ok {
				devices++
				props += len(p) + len(ifaces[BatteryInterface])
			}
		}
		if len(objs.Adapters) != adapters || len(objs.Devices) != devices {
			t.Fatalf("%d adapters and %d devices from a reply of %d and %d", len(objs.Adapters), len(objs.Devices), adapters, devices)
		}
		if len(objs.Problems) > props {
			t.Fatalf("%d problems from %d properties", len(objs.Problems), props)
		}
		for _, p := range objs.Problems {
			var pe *PropertyError
			if !errors.As(p, &pe) || pe.Want == pe.Got {
				t.Fatalf("problem %v", p)
			}
		}
	})
}
