// SPDX-License-Identifier: Apache-2.0

package mixer

import (
	"strings"
	"testing"
)

// neg is a signed level as a TLV word holds it.
func neg(x int32) uint32 { return uint32(x) }

func TestDecibelRange(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tlv      []uint32
		min, max int64
		want     Decibels
		ok       bool
	}{
		// The recorded TGL card's volumes (amixer: dBscale-min=-65.25dB,
		// step=0.75dB over 0..87; 0.00dB step 10.00dB over 0..3).
		{"scale", []uint32{1, 8, neg(-6525), 75}, 0, 87, Decibels{Min: -6525, Max: 0}, true},
		{"scale positive", []uint32{1, 8, 0, 1000}, 0, 3, Decibels{Min: 0, Max: 3000}, true},
		// snd-dummy's: -45 dB step 0.3 dB over -50..100.
		{"scale over a negative range", []uint32{1, 8, neg(-4500), 30}, -50, 100, Decibels{Min: -4500, Max: 0}, true},
		{"scale with mute", []uint32{1, 8, neg(-9000), 0x10000 | 300}, 0, 30, Decibels{Min: -9000, Max: 0, MuteAtMin: true}, true},
		{"scale of one value", []uint32{1, 8, neg(-600), 50}, 4, 4, Decibels{Min: -600, Max: -600}, true},
		{"linear", []uint32{2, 8, neg(-4800), 0}, 0, 255, Decibels{Min: -4800, Max: 0}, true},
		// From silence over 0..100: one step up is 1/100 of full scale,
		// -40 dB below the top.
		{"linear from mute", []uint32{2, 8, neg(dbGainMute), 600}, 0, 100, Decibels{Min: -3400, Max: 600, MuteAtMin: true}, true},
		{"linear from mute, one value", []uint32{2, 8, neg(dbGainMute), 0}, 7, 7, Decibels{Min: 0, Max: 0, MuteAtMin: true}, true},
		// The recorded Razer's mic (alsactl: dbmin -3000, dbmax 500).
		{"minmax", []uint32{4, 8, neg(-3000), 500}, 0, 35, Decibels{Min: -3000, Max: 500}, true},
		{"minmax mute", []uint32{5, 8, neg(-6400), 0}, 0, 64, Decibels{Min: -6400, Max: 0, MuteAtMin: true}, true},
		{"range", []uint32{3, 48,
			0, 1, 1, 8, neg(-1000), 0x10000 | 1000, // 0..1: mute, then -10 dB
			2, 10, 1, 8, neg(-600), 100, // 2..10: -6 dB up to +2 dB
		}, 0, 10, Decibels{Min: -1000, Max: 200, MuteAtMin: true}, true},
		// The control stops at 6: the second item is cut there, a third
		// past it is not read.
		{"range cut at max", []uint32{3, 72,
			0, 1, 1, 8, neg(-1000), 100,
			2, 10, 1, 8, neg(-600), 100,
			11, 20, 1, 8, 5000, 100,
		}, 0, 6, Decibels{Min: -1000, Max: -200}, true},
		{"range nesting a container", []uint32{3, 32,
			0, 4, 0, 16, 4, 8, neg(-400), 0,
		}, 0, 4, Decibels{Min: -400, Max: 0}, true},
		{"range outside the control", []uint32{3, 24, 50, 60, 1, 8, 0, 100}, 0, 10, Decibels{}, false},
		{"container", []uint32{0, 28, 0x101, 4, 3, 1, 8, neg(-6525), 75}, 0, 87, Decibels{Min: -6525, Max: 0}, true},
		{"container without dB", []uint32{0, 12, 0x101, 4, 3}, 0, 87, Decibels{}, false},
		{"empty container", []uint32{0, 0}, 0, 87, Decibels{}, false},
		{"trailing words", []uint32{1, 8, neg(-6525), 75, 99, 99}, 0, 87, Decibels{Min: -6525, Max: 0}, true},
	} {
		got, ok, err := DecibelRange(tc.tlv, tc.min, tc.max)
		if err != nil || ok != tc.ok || got != tc.want {
			t.Errorf("%s: DecibelRange(%v, %d, %d) = %+v, %v, %v; want %+v, %v", tc.name, tc.tlv, tc.min, tc.max, got, ok, err, tc.want, tc.ok)
		}
	}
}

func TestDecibelRangeRefuses(t *testing.T) {
	deep := []uint32{1, 8, 0, 1}
	for range 10 {
		deep = append([]uint32{0, uint32(4 * len(deep))}, deep...)
	}
	for _, tc := range []struct {
		name     string
		tlv      []uint32
		min, max int64
		want     string
	}{
		{"no words", nil, 0, 1, "header needs 2 words, 0 left"},
		{"half a header", []uint32{1}, 0, 1, "header needs 2 words, 1 left"},
		{"length past the end", []uint32{1, 12, 0, 1}, 0, 1, "length 12 bytes runs past the end (8 bytes left)"},
		{"length past the end of 4 GiB", []uint32{1, 0xfffffffc}, 0, 1, "runs past the end"},
		{"length not whole words", []uint32{1, 6, 0, 1}, 0, 1, "length 6 bytes is not whole 32-bit words"},
		{"scale too short", []uint32{1, 4, 0}, 0, 1, "TLV type 1: payload of 1 words, want at least 2"},
		{"minmax too short", []uint32{4, 0}, 0, 1, "TLV type 4: payload of 0 words"},
		{"unknown type", []uint32{0x101, 8, 3, 4}, 0, 1, "TLV type 257 is not a dB type"},
		{"empty range", nil, 5, 4, "raw values 5..4: the range is empty"},
		{"range item without TLV", []uint32{3, 8, 0, 1}, 0, 1, "DB_RANGE item 0: a TLV header needs 2 words, 0 left"},
		{"range item of one word", []uint32{3, 4, 0}, 0, 1, "DB_RANGE item 0: 1 words"},
		{"range item upside down", []uint32{3, 24, 5, 2, 1, 8, 0, 1}, 0, 10, "DB_RANGE item 0: raw range 5..2 is empty"},
		{"range item of unknown type", []uint32{3, 24, 0, 10, 9, 8, 0, 1}, 0, 10, "DB_RANGE item 0: TLV type 9 is not a dB type"},
		{"range item overrunning", []uint32{3, 24, 0, 10, 1, 16, 0, 1}, 0, 10, "DB_RANGE item 0: TLV type 1: length 16 bytes runs past the end"},
		{"nested too deep", deep, 0, 1, "nested deeper than 8 levels"},
		{"container holding a bad TLV", []uint32{0, 12, 1, 8, 0}, 0, 1, "in container: TLV type 1: length 8 bytes runs past the end"},
		{"scale too wide", []uint32{1, 8, 0, 1}, -1 << 62, 1 << 62, "too wide"},
	} {
		_, ok, err := DecibelRange(tc.tlv, tc.min, tc.max)
		if err == nil || ok || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: DecibelRange(%v) = ok %v, error %v; want an error with %q", tc.name, tc.tlv, ok, err, tc.want)
		}
	}
}

func TestFormatDecibels(t *testing.T) {
	for in, want := range map[int64]string{
		-6525: "-65.25", -6550: "-65.5", 0: "0", 3000: "30", -5: "-0.05", 75: "0.75",
		-9999999: "-99999.99", -1 << 63: "-92233720368547758.08",
	} {
		if got := FormatDecibels(in); got != want {
			t.Errorf("FormatDecibels(%d) = %q, want %q", in, got, want)
		}
	}
}
