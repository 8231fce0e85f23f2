// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"reflect"
	"testing"
)

func TestClassDecoding(t *testing.T) {
	tests := []struct {
		class    Class
		major    string
		minor    string
		services []string
	}{
		{0x002508, "peripheral", "gamepad", nil},  // 8BitDo NES30 Pro, DualSense
		{0x002504, "peripheral", "joystick", nil}, // Wii Remote
		{0x002540, "peripheral", "keyboard", nil}, // keyboard, no device type
		{0x002580, "peripheral", "pointing-device", nil},
		{0x0025C0, "peripheral", "keyboard-pointing", nil},
		{0x00254C, "peripheral", "remote-control", nil}, // keyboard bits, but a remote control first
		{0x002528, "peripheral", "", nil},               // device type 0xA is reserved
		{0x240414, "audio-video", "loudspeaker", []string{"serviceRendering", "serviceAudio"}},
		{0x2c0418, "audio-video", "headphones", []string{"serviceRendering", "serviceCapturing", "serviceAudio"}},
		{0x200404, "audio-video", "wearable-headset", []string{"serviceAudio"}},
		{0x000448, "audio-video", "gaming", nil},
		{0x00040C, "audio-video", "", nil}, // 0x03 is reserved
		{0x5A020C, "phone", "smartphone", []string{"serviceNetworking", "serviceCapturing", "serviceObjectTransfer", "serviceTelephony"}},
		{0x00010C, "computer", "laptop", nil},
		{0x000100, "computer", "", nil},
		{0x000680, "imaging", "printer", nil},
		{0x0006C0, "imaging", "scanner+printer", nil},
		{0x000704, "wearable", "wristwatch", nil},
		{0x000810, "toy", "controller", nil},
		{0x00093C, "health", "personal-mobility", nil},
		{0x000340, "lan-access-point", "", nil}, // a load factor, not a kind
		{0x001F00, "uncategorized", "", nil},
		{0x000000 | 0x0A00, "", "", nil},                                                // major 0x0A is reserved
		{0x002000 | 0x002508, "peripheral", "gamepad", nil},                             // limited discoverable is no service
		{0x004000 | 0x000414, "audio-video", "loudspeaker", []string{"serviceLEAudio"}}, // LE audio
		{0xFF6508, "peripheral", "gamepad", []string{"serviceLEAudio", "servicePositioning", "serviceNetworking", "serviceRendering", "serviceCapturing", "serviceObjectTransfer", "serviceAudio", "serviceTelephony", "serviceInformation"}},
		{0x002509, "", "", nil},  // format type 01: not format #1
		{0x1002508, "", "", nil}, // more than 24 bits
		{0, "", "", nil},
	}
	for _, tt := range tests {
		if got := tt.class.Major(); got != tt.major {
			t.Errorf("%#06x: Major() = %q, want %q", uint32(tt.class), got, tt.major)
		}
		if got := tt.class.Minor(); got != tt.minor {
			t.Errorf("%#06x: Minor() = %q, want %q", uint32(tt.class), got, tt.minor)
		}
		if got := tt.class.Services(); !reflect.DeepEqual(got, tt.services) {
			t.Errorf("%#06x: Services() = %v, want %v", uint32(tt.class), got, tt.services)
		}
	}
}

// FuzzClass: Class of Device comes from the air through BlueZ. Decoding
// never panics, an invalid class decodes to nothing, and every name it
// gives is a non-empty lowercase token or a known flag.
func FuzzClass(f *testing.F) {
	for _, c := range []uint32{0x002508, 0x2c0418, 0x0006F0, 0xFFFFFFFF, 0x3} {
		f.Add(c)
	}
	known := map[string]bool{}
	for _, s := range serviceBits {
		known[s.name] = true
	}
	f.Fuzz(func(t *testing.T, raw uint32) {
		c := Class(raw)
		major, minor, services := c.Major(), c.Minor(), c.Services()
		if !c.Valid() && (major != "" || minor != "" || services != nil) {
			t.Fatalf("%#x is invalid but decodes to %q %q %v", raw, major, minor, services)
		}
		if minor != "" && major == "" {
			t.Fatalf("%#x: minor %q without a major", raw, minor)
		}
		for _, s := range services {
			if !known[s] {
				t.Fatalf("%#x: unknown service %q", raw, s)
			}
		}
		for _, s := range []string{major, minor} {
			if s != "" && !tokenPattern.MatchString(s) {
				t.Fatalf("%#x: name %q is not a lowercase token", raw, s)
			}
		}
	})
}
