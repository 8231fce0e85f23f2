// SPDX-License-Identifier: Apache-2.0

package guest

import (
	"encoding/binary"
	"testing"
)

// The offsets of struct uhid_create2_req inside the packed struct
// uhid_event, and its size, as the kernel lays them out (4376 bytes on
// every architecture: the struct is packed).
func TestEncodeCreate2Layout(t *testing.T) {
	if UHIDEventSize != 4376 {
		t.Fatalf("UHIDEventSize = %d, want 4376", UHIDEventSize)
	}
	ev, err := EncodeCreate2(UHIDSpec{
		Name: "pad", Phys: "00:aa:01:00:00:00", Uniq: "11:22:33:44:55:66",
		Bus: BusBluetooth, Vendor: 0x1d6b, Product: 0x0246, Version: 7, Descriptor: GamepadDescriptor,
	})
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	for _, c := range []struct {
		what      string
		got, want uint32
	}{
		{"type", le.Uint32(ev[0:]), 11},
		{"rd_size", uint32(le.Uint16(ev[260:])), uint32(len(GamepadDescriptor))},
		{"bus", uint32(le.Uint16(ev[262:])), 5},
		{"vendor", le.Uint32(ev[264:]), 0x1d6b},
		{"product", le.Uint32(ev[268:]), 0x0246},
		{"version", le.Uint32(ev[272:]), 7},
		{"country", le.Uint32(ev[276:]), 0},
		{"rd_data[0]", uint32(ev[280]), 0x05},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.what, c.got, c.want)
		}
	}
	if string(ev[4:7]) != "pad" || string(ev[132:149]) != "00:aa:01:00:00:00" || string(ev[196:213]) != "11:22:33:44:55:66" {
		t.Errorf("name/phys/uniq misplaced: %q %q %q", ev[4:8], ev[132:150], ev[196:214])
	}
	if _, err := EncodeCreate2(UHIDSpec{Uniq: string(make([]byte, 64)), Descriptor: GamepadDescriptor}); err == nil {
		t.Error("a 64-byte uniq (no room for its NUL) was accepted")
	}
	if _, err := EncodeCreate2(UHIDSpec{Name: "x"}); err == nil {
		t.Error("an empty report descriptor was accepted")
	}
}
