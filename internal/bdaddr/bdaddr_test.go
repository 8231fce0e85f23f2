// SPDX-License-Identifier: Apache-2.0

package bdaddr

import (
	"errors"
	"testing"
)

func TestParseBothSpellings(t *testing.T) {
	want := Address{0xE4, 0x17, 0xD8, 0xC5, 0x67, 0x6D}
	for _, s := range []string{"E4:17:D8:C5:67:6D", "e4:17:d8:c5:67:6d", "e4-17-d8-c5-67-6d", "E4-17-d8-C5-67-6d"} {
		got, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if got != want {
			t.Errorf("Parse(%q) = %v, want %v", s, got, want)
		}
	}
	if got := want.String(); got != "E4:17:D8:C5:67:6D" {
		t.Errorf("String() = %q", got)
	}
	if got := want.Key(); got != "e4-17-d8-c5-67-6d" {
		t.Errorf("Key() = %q", got)
	}
}

func TestParseRejects(t *testing.T) {
	for _, s := range []string{
		"", "E4:17:D8:C5:67", "E4:17:D8:C5:67:6D:00", "E4:17-D8:C5:67:6D", "E4.17.D8.C5.67.6D",
		"E4:17:D8:C5:67:6G", "+4:17:D8:C5:67:6D", " E4:17:D8:C5:67:6", "E417D8C5676D",
		"../../etc/passwd", "E4:17:D8:C5:67:6D\x00",
	} {
		if a, err := Parse(s); err == nil || !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) = %v, %v; want an ErrSyntax error", s, a, err)
		}
	}
}

func TestKernelOrder(t *testing.T) {
	// struct hci_dev_info.bdaddr as the kernel copies it: least
	// significant octet first.
	a := FromKernel([6]byte{0x6D, 0x67, 0xC5, 0xD8, 0x17, 0xE4})
	if a.String() != "E4:17:D8:C5:67:6D" {
		t.Fatalf("FromKernel = %s", a)
	}
	if a.Kernel() != [6]byte{0x6D, 0x67, 0xC5, 0xD8, 0x17, 0xE4} {
		t.Fatalf("Kernel() = % x", a.Kernel())
	}
	if a.IsZero() || !(Address{}).IsZero() {
		t.Fatal("IsZero wrong")
	}
	if a.IsBroadcast() || (Address{}).IsBroadcast() || !MustParse("ff-ff-ff-ff-ff-ff").IsBroadcast() {
		t.Fatal("IsBroadcast wrong")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"E4:17:D8:C5:67:6D", "e4-17-d8-c5-67-6d", "00:00:00:00:00:00", "zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		if err != nil {
			return
		}
		// Whatever parses prints back to a form that parses to the same
		// value, in both spellings.
		for _, out := range []string{a.String(), a.Key()} {
			b, err := Parse(out)
			if err != nil || b != a {
				t.Fatalf("%q -> %v -> %q -> %v, %v", s, a, out, b, err)
			}
		}
	})
}
