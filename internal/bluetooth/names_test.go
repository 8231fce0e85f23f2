// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/bdaddr"
)

func TestDeviceNames(t *testing.T) {
	peer, _ := bdaddr.Parse("E4:17:D8:C5:67:6D")
	if got := ControllerName(peer); got != "e4-17-d8-c5-67-6d" {
		t.Errorf("ControllerName = %q", got)
	}
	if got := MediaBusName(peer); got != "e4-17-d8-c5-67-6d-media" {
		t.Errorf("MediaBusName = %q", got)
	}
	for name, want := range map[string]bool{"e4-17-d8-c5-67-6d": false, "e4-17-d8-c5-67-6d-media": true} {
		addr, bus, err := ParseDeviceName(name)
		if err != nil || addr != peer || bus != want {
			t.Errorf("ParseDeviceName(%q) = %v, %v, %v", name, addr, bus, err)
		}
	}
	for _, name := range []string{
		"", "E4-17-D8-C5-67-6D", "e4:17:d8:c5:67:6d", "e4-17-d8-c5-67-6d-Media", "e4-17-d8-c5-67-6d-media-media",
		"e4-17-d8-c5-67", "card0", "-media",
	} {
		if _, _, err := ParseDeviceName(name); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("ParseDeviceName(%q): err = %v, want one quoting the name", name, err)
		}
	}
}

// FuzzParseDeviceName: device names come back from the API server in
// allocation results. A name that parses is exactly the name this driver
// would publish for that address.
func FuzzParseDeviceName(f *testing.F) {
	for _, s := range []string{"e4-17-d8-c5-67-6d", "00-1a-7d-da-71-13-media", "E4:17:D8:C5:67:6D", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		addr, bus, err := ParseDeviceName(name)
		if err != nil {
			return
		}
		want := ControllerName(addr)
		if bus {
			want = MediaBusName(addr)
		}
		if want != name {
			t.Fatalf("ParseDeviceName(%q) = %s, %v: that publishes as %q", name, addr, bus, want)
		}
	})
}
