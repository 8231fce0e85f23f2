// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var tokenPattern = regexp.MustCompile(`^[a-z]+(-[a-z]+)*(\+[a-z]+(-[a-z]+)*)*$`)

func TestUUID16(t *testing.T) {
	good := map[string]uint16{
		"00001124-0000-1000-8000-00805f9b34fb": 0x1124,
		"0000110B-0000-1000-8000-00805F9B34FB": 0x110B,
		"0000ffff-0000-1000-8000-00805f9b34fb": 0xFFFF,
	}
	for in, want := range good {
		if got, ok := UUID16(in); !ok || got != want {
			t.Errorf("UUID16(%q) = %#x, %v; want %#x", in, got, ok, want)
		}
	}
	for _, in := range []string{
		"",
		"00001800",                             // the bare prefix in the Razer bond file
		"1124",                                 // a short form is not what BlueZ reports
		"00011124-0000-1000-8000-00805f9b34fb", // 32-bit range
		"00001124-0000-1000-8000-00805f9b34fc", // outside the base range
		"0000+124-0000-1000-8000-00805f9b34fb",
		"0000 124-0000-1000-8000-00805f9b34fb",
		"0000x124-0000-1000-8000-00805f9b34fb",
		"00001124-0000-1000-8000-00805f9b34fb ",
		"a1b2c3d4-1111-2222-3333-444455556666", // a vendor UUID
	} {
		if got, ok := UUID16(in); ok {
			t.Errorf("UUID16(%q) = %#x, want no 16-bit form", in, got)
		}
	}
}

func TestProfiles(t *testing.T) {
	full := func(n uint16) string { return fmt.Sprintf("%08x-0000-1000-8000-00805f9b34fb", n) }
	got := Profiles([]string{
		full(0x110B), full(0x110A), full(0x110C), full(0x110E), full(0x110F), full(0x111E), full(0x111F),
		full(0x1108), full(0x1112), full(0x1124), full(0x1812), full(0x180F), full(0x1101), full(0x1200),
		"not a uuid",
	})
	want := []string{"audioSink", "audioSource", "avrcpController", "avrcpTarget", "battery", "handsfree", "headset", "input", "serialPort"}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Profiles = (-got +want):\n%s", diff)
	}
	// The audio-gateway roles (a phone) are not the hands-free and headset
	// roles (a headset).
	if got := Profiles([]string{full(0x111F), full(0x1112)}); got != nil {
		t.Errorf("audio gateway UUIDs gave %v", got)
	}
}

// FuzzUUID16: UUIDs come from remote devices' SDP records and GATT
// services. An accepted string is exactly the base-range UUID of the
// number returned.
func FuzzUUID16(f *testing.F) {
	for _, s := range []string{"00001124-0000-1000-8000-00805f9b34fb", "00001800", "0000110B-0000-1000-8000-00805F9B34FB", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := UUID16(s)
		if !ok {
			return
		}
		if want := fmt.Sprintf("0000%04x-0000-1000-8000-00805f9b34fb", n); strings.ToLower(s) != want {
			t.Fatalf("UUID16(%q) = %#x, but that number's UUID is %s", s, n, want)
		}
	})
}
