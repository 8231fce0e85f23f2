// SPDX-License-Identifier: Apache-2.0

package bluez

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/godbus/dbus/v5"
)

// managedObjectsReply is the wire form (D-Bus specification, "Message
// Protocol") of a GetManagedObjects method return carrying objs.
func managedObjectsReply(tb testing.TB, order binary.ByteOrder, objs managedObjects) []byte {
	tb.Helper()
	msg := &dbus.Message{Type: dbus.TypeMethodReply, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldReplySerial: dbus.MakeVariant(uint32(1)),
		dbus.FieldSignature:   dbus.MakeVariant(dbus.SignatureOf(objs)),
	}, Body: []any{objs}}
	var b bytes.Buffer
	if err := msg.EncodeTo(&b, order); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// FuzzDecodeObjects: GetManagedObjects' reply is whatever owns
// org.bluez on the bus. Whatever bytes arrive, decoding the message
// (godbus), storing it as the reply shape (as ManagedObjects does) and
// reading it into Objects never panics; every object carrying Adapter1
// or Device1 comes out once, and each property of another type is one
// *PropertyError, never a value.
func FuzzDecodeObjects(f *testing.F) {
	dev := "/org/bluez/hci0/dev_E4_17_D8_C5_67_6D"
	f.Add(managedObjectsReply(f, binary.LittleEndian, managedObjects{
		"/org/bluez/hci0": {AdapterInterface: {
			"Address": dbus.MakeVariant("00:1A:7D:DA:71:13"), "Powered": dbus.MakeVariant(true),
			"Connectable": dbus.MakeVariant(false), "DiscoverableTimeout": dbus.MakeVariant(uint32(180)),
			"Modalias": dbus.MakeVariant("usb:v1D6Bp0246d0548"),
		}},
		dbus.ObjectPath(dev): {
			DeviceInterface: {
				"Address": dbus.MakeVariant("E4:17:D8:C5:67:6D"), "Name": dbus.MakeVariant("8Bitdo NES30 Pro"),
				"Class": dbus.MakeVariant(uint32(0x002508)), "Paired": dbus.MakeVariant(true),
				"UUIDs":   dbus.MakeVariant([]string{"00001124-0000-1000-8000-00805f9b34fb", "00001200-0000-1000-8000-00805f9b34fb"}),
				"Adapter": dbus.MakeVariant(dbus.ObjectPath("/org/bluez/hci0")), "RSSI": dbus.MakeVariant(int16(-60)),
				"Modalias": dbus.MakeVariant("usb:v2DC8p3820d0100"),
			},
			BatteryInterface: {"Percentage": dbus.MakeVariant(uint8(80))},
		},
	}))
	// Every property of the wrong type, big-endian.
	f.Add(managedObjectsReply(f, binary.BigEndian, managedObjects{
		dbus.ObjectPath(dev): {
			DeviceInterface: {"Address": dbus.MakeVariant(uint32(1)), "Class": dbus.MakeVariant("0x2508"),
				"UUIDs": dbus.MakeVariant([]int32{1}), "RSSI": dbus.MakeVariant(int32(-60))},
			BatteryInterface: {"Percentage": dbus.MakeVariant(int32(200))},
		},
		"/org/bluez": {"org.bluez.AgentManager1": {}},
	}))
	f.Fuzz(func(t *testing.T, data []byte) {
		msg, err := dbus.DecodeMessage(bytes.NewReader(data))
		if err != nil || len(msg.Body) == 0 {
			return
		}
		var reply managedObjects
		if dbus.Store(msg.Body, &reply) != nil {
			return
		}
		objs := decodeObjects(reply)
		adapters, devices, props := 0, 0, 0
		for _, ifaces := range reply {
			if p, ok := ifaces[AdapterInterface]; ok {
				adapters++
				props += len(p)
			}
			if p, ok := ifaces[DeviceInterface]; ok {
				devices++
				props += len(p)
				if _, ok := ifaces[BatteryInterface]; ok {
					props++
				}
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
