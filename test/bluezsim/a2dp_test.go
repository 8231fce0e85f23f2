// SPDX-License-Identifier: Apache-2.0

package bluezsim

import (
	"slices"
	"strings"
	"testing"
)

// Every codec's capabilities, with one option taken from each field, is
// a configuration ParseConfiguration reads back; a capability element
// (several options in a field) is not a configuration.
func TestParseConfiguration(t *testing.T) {
	for _, tc := range []struct {
		codec  Codec
		config []byte
		want   Configuration
	}{
		{SBC, []byte{0x21, 0x15, 2, 53}, Configuration{Codec: SBC, RateHz: 44100, Channels: 2, ChannelMode: "joint", Blocks: 16, Subbands: 8, Allocation: "loudness", MinBitpool: 2, MaxBitpool: 53}},
		{SBC, []byte{0x88, 0x8a, 2, 32}, Configuration{Codec: SBC, RateHz: 16000, Channels: 1, ChannelMode: "mono", Blocks: 4, Subbands: 4, Allocation: "snr", MinBitpool: 2, MaxBitpool: 32}},
		{AptX, []byte{0x4f, 0, 0, 0, 1, 0, 0x12}, Configuration{Codec: AptX, RateHz: 48000, Channels: 2, ChannelMode: "stereo"}},
		{AptXHD, []byte{0xd7, 0, 0, 0, 0x24, 0, 0x22, 0, 0, 0, 0}, Configuration{Codec: AptXHD, RateHz: 44100, Channels: 2, ChannelMode: "stereo"}},
		{LDAC, []byte{0x2d, 1, 0, 0, 0xaa, 0, 0x04, 0x01}, Configuration{Codec: LDAC, RateHz: 96000, Channels: 2, ChannelMode: "stereo"}},
	} {
		typ, caps, err := tc.codec.Capabilities()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseConfiguration(typ, tc.config)
		if err != nil {
			t.Errorf("%s % x: %v", tc.codec, tc.config, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s % x = %+v, want %+v", tc.codec, tc.config, got, tc.want)
		}
		if len(caps) != len(tc.config) {
			t.Errorf("%s: capabilities of %d bytes, configuration of %d", tc.codec, len(caps), len(tc.config))
		}
		if _, err := ParseConfiguration(typ, caps); err == nil {
			t.Errorf("%s: the capability element % x parses as a configuration", tc.codec, caps)
		}
	}
	for _, bad := range []struct {
		typ  byte
		b    []byte
		want string
	}{
		{0, []byte{0x21, 0x15, 2}, "want 4"},
		{0, []byte{0x21, 0x15, 60, 53}, "bitpool"},
		{0, []byte{0x31, 0x15, 2, 53}, "sampling frequency"},
		{0xff, []byte{1, 2, 3}, "at least 6"},
		{0xff, []byte{0x4f, 0, 0, 0, 2, 0, 0x12}, "is not aptX"},
		{0x02, []byte{0x80, 1, 0x8c, 0x84, 0xe2, 0}, "codec type 0x02"},
	} {
		if _, err := ParseConfiguration(bad.typ, bad.b); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseConfiguration(%#x, % x) = %v, want an error with %q", bad.typ, bad.b, err, bad.want)
		}
	}
	if _, _, err := Codec("aac").Capabilities(); err == nil || !strings.Contains(err.Error(), `"aac"`) {
		t.Errorf("unknown codec: %v", err)
	}
}

// ParseConfiguration reads what a sound server wrote into a transport:
// it never panics, and what it accepts is a whole configuration.
func FuzzParseConfiguration(f *testing.F) {
	for _, c := range []Codec{SBC, AptX, AptXHD, LDAC} {
		typ, caps, _ := c.Capabilities()
		f.Add(typ, caps)
	}
	f.Add(byte(0), []byte{0x21, 0x15, 2, 53})
	f.Add(byte(0xff), []byte{0x2d, 1, 0, 0, 0xaa, 0, 0x04, 0x01})
	f.Fuzz(func(t *testing.T, typ byte, b []byte) {
		c, err := ParseConfiguration(typ, b)
		if err != nil {
			return
		}
		if !slices.Contains([]Codec{SBC, AptX, AptXHD, LDAC}, c.Codec) || c.RateHz < 16000 || c.RateHz > 192000 ||
			(c.Channels != 1 && c.Channels != 2) || c.ChannelMode == "" {
			t.Fatalf("% x parsed as %+v", b, c)
		}
		if c.Codec == SBC && (c.Blocks == 0 || c.Subbands == 0 || c.Allocation == "" || c.MinBitpool > c.MaxBitpool) {
			t.Fatalf("% x parsed as %+v", b, c)
		}
	})
}
