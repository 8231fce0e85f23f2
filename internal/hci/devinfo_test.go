// SPDX-License-Identifier: Apache-2.0

package hci

import (
	"encoding/binary"
	"testing"
)

// devInfoHci3 is struct hci_dev_info as the kernel fills it for an adapter
// that is up: dev_id 3, name "hci3", bdaddr 5C:F3:70:8B:1A:2E stored least
// significant octet first, flags HCI_UP|HCI_RUNNING|HCI_PSCAN (bits 0, 2,
// 3), type 0x01 (USB, primary), then features, packet types, MTUs and
// counters, which this package ignores. Integers are little-endian, as on
// the amd64 and arm64 machines this runs on.
var devInfoHci3 = []byte{
	0x03, 0x00, // dev_id
	'h', 'c', 'i', '3', 0, 0, 0, 0, // name
	0x2E, 0x1A, 0x8B, 0x70, 0xF3, 0x5C, // bdaddr
	0x0d, 0x00, 0x00, 0x00, // flags
	0x01,                                           // type
	0xbf, 0xfe, 0xcf, 0xfe, 0xdb, 0xff, 0x7b, 0x87, // features
	0, 0, 0, // padding
	0x18, 0xcc, 0x00, 0x00, // pkt_type
	0x0f, 0x00, 0x00, 0x00, // link_policy
	0x00, 0x00, 0x00, 0x80, // link_mode
	0xfd, 0x03, 0x08, 0x00, 0x40, 0x00, 0x08, 0x00, // acl_mtu 1021, acl_pkts 8, sco_mtu 64, sco_pkts 8
	// struct hci_dev_stats: ten u32 counters.
	0, 0, 0, 0, 0, 0, 0, 0, 0x2a, 0, 0, 0, 0x55, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0x04, 0, 0, 0x9a, 0x01, 0, 0,
}

func TestParseDevInfo(t *testing.T) {
	if len(devInfoHci3) != DevInfoSize {
		t.Fatalf("fixture is %d bytes, the kernel's structure %d", len(devInfoHci3), DevInfoSize)
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Fatal("the fixture is little-endian; this test needs a little-endian host")
	}
	d, err := ParseDevInfo(devInfoHci3)
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != 3 || d.Name != "hci3" || d.Address.String() != "5C:F3:70:8B:1A:2E" {
		t.Fatalf("got id %d name %q address %s", d.ID, d.Name, d.Address)
	}
	if !d.Up() || d.Bus() != 1 || d.Flags != 0x0d {
		t.Fatalf("flags %#x bus %d up %v", d.Flags, d.Bus(), d.Up())
	}
	if !d.PageScan() || d.InquiryScan() {
		t.Errorf("flags %#x: page scan %v, inquiry scan %v; want on, off", d.Flags, d.PageScan(), d.InquiryScan())
	}
	if off := (DevInfo{Flags: 0x15}); off.PageScan() || !off.InquiryScan() {
		t.Errorf("flags 0x15: page scan %v, inquiry scan %v; want off, on", off.PageScan(), off.InquiryScan())
	}
	// The reference's 96-byte buffer and our 128-byte one parse the same.
	long := append(append([]byte{}, devInfoHci3...), make([]byte, 36)...)
	if d2, err := ParseDevInfo(long); err != nil || d2 != d {
		t.Fatalf("long buffer: %+v, %v", d2, err)
	}
}

func TestParseDevInfoRejects(t *testing.T) {
	if _, err := ParseDevInfo(devInfoHci3[:DevInfoSize-1]); err == nil {
		t.Error("short buffer accepted")
	}
	bad := append([]byte{}, devInfoHci3...)
	bad[4] = '\n'
	if _, err := ParseDevInfo(bad); err == nil {
		t.Error("unprintable name accepted")
	}
}

func FuzzParseDevInfo(f *testing.F) {
	f.Add(devInfoHci3)
	f.Add(make([]byte, DevInfoSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDevInfo(b)
		if err != nil {
			return
		}
		if len(d.Name) > 8 {
			t.Fatalf("name %q longer than the field", d.Name)
		}
		if d.Address.Kernel() != [6]byte(b[10:16]) {
			t.Fatalf("address %s does not round-trip to % x", d.Address, b[10:16])
		}
	})
}
