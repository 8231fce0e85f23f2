// SPDX-License-Identifier: Apache-2.0

package pciids

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// db is a database in pci.ids syntax: a comment, a vendor with a
// device and a subsystem, a vendor without the looked-up device, and the
// class section, whose lines look like devices.
const db = `# comment line
#	0001  commented device
1002  Advanced Micro Devices, Inc. [AMD/ATI]
	aab0  Cape Verde/Pitcairn HDMI Audio [Radeon HD 7700/7800 Series]
8086  Intel Corporation
	a348  Cannon Lake PCH cAVS
		1028 085c  Dell cAVS
	a3f0  Comet Lake PCH-V cAVS
10de  NVIDIA Corporation
C 04  Multimedia controller
	03  Audio device
`

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		vendor, device uint16
		want           Names
	}{
		{0x8086, 0xa348, Names{Vendor: "Intel Corporation", Device: "Cannon Lake PCH cAVS"}},
		{0x1002, 0xaab0, Names{Vendor: "Advanced Micro Devices, Inc. [AMD/ATI]", Device: "Cape Verde/Pitcairn HDMI Audio [Radeon HD 7700/7800 Series]"}},
		{0x8086, 0x085c, Names{Vendor: "Intel Corporation"}},  // a subsystem ID is not a device
		{0x10de, 0x0003, Names{Vendor: "NVIDIA Corporation"}}, // the class section is not NVIDIA's
		{0x0001, 0x0001, Names{}}, // commented out
		{0x1234, 0x5678, Names{}},
	} {
		got, err := Lookup(strings.NewReader(db), tc.vendor, tc.device)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%04x:%04x (-want +got):\n%s", tc.vendor, tc.device, diff)
		}
	}
}

func TestLookupRefusesAnOverlongLine(t *testing.T) {
	_, err := Lookup(strings.NewReader("8086  Intel\n\t"+strings.Repeat("x", 5000)+"\n"), 0x8086, 0xa348)
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err = %v, want one naming line 2", err)
	}
}

func TestDB(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pci.ids")
	if err := os.WriteFile(path, []byte(db), 0o644); err != nil {
		t.Fatal(err)
	}
	d := Open(path)
	n, ok := d.Names(0x8086, 0xa348)
	if !ok || n.Device != "Cannon Lake PCH cAVS" {
		t.Fatalf("Names = %+v, %v", n, ok)
	}
	// Cached: the file's going does not change an answer already had.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if n, ok := d.Names(0x8086, 0xa348); !ok || n.Device != "Cannon Lake PCH cAVS" {
		t.Fatalf("cached Names = %+v, %v", n, ok)
	}
	if err := d.Err(); err != nil {
		t.Fatalf("Err = %v after readable lookups", err)
	}
	if _, ok := d.Names(0x8086, 0xa3f0); ok {
		t.Fatal("a lookup in a missing file found something")
	}
	if err := d.Err(); err == nil || !strings.Contains(err.Error(), "pci.ids") {
		t.Fatalf("Err = %v, want one naming the file", err)
	}
	if err := d.Err(); err != nil {
		t.Fatalf("Err reported twice: %v", err)
	}
	var none *DB
	if _, ok := none.Names(1, 2); ok || none.Err() != nil {
		t.Fatal("a nil DB found something")
	}
}

func FuzzLookup(f *testing.F) {
	f.Add([]byte(db), uint16(0x8086), uint16(0xa348))
	f.Add([]byte("8086  \n\t  \n\tzzzz  x\n"), uint16(0x8086), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, vendor, device uint16) {
		n, err := Lookup(strings.NewReader(string(data)), vendor, device)
		if err != nil {
			return
		}
		if n.Device != "" && n.Vendor == "" {
			t.Fatalf("a device name %q without its vendor's", n.Device)
		}
		if strings.ContainsAny(n.Vendor+n.Device, "\n") {
			t.Fatalf("a name holds a newline: %+v", n)
		}
	})
}
