// SPDX-License-Identifier: Apache-2.0

package mixer

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/alsa"
)

func tlvBytes(words ...uint32) []byte {
	b := make([]byte, 4*len(words))
	for i, w := range words {
		binary.NativeEndian.PutUint32(b[4*i:], w)
	}
	return b
}

// FuzzDecibelRange: any words and range give a result or an error, never
// a panic; a result's levels spell as decimals that read back.
func FuzzDecibelRange(f *testing.F) {
	f.Add(tlvBytes(1, 8, neg(-6525), 75), int64(0), int64(87))
	f.Add(tlvBytes(2, 8, neg(dbGainMute), 600), int64(0), int64(100))
	f.Add(tlvBytes(5, 8, neg(-6400), 0), int64(0), int64(64))
	f.Add(tlvBytes(3, 48, 0, 1, 1, 8, neg(-1000), 0x10000|1000, 2, 10, 1, 8, neg(-600), 100), int64(0), int64(10))
	f.Add(tlvBytes(0, 28, 0x101, 4, 3, 1, 8, neg(-6525), 75), int64(-50), int64(100))
	f.Add(tlvBytes(0, 16, 0, 8, 0, 0), int64(0), int64(1))
	f.Fuzz(func(t *testing.T, data []byte, min, max int64) {
		words := make([]uint32, len(data)/4)
		for i := range words {
			words[i] = binary.NativeEndian.Uint32(data[4*i:])
		}
		d, ok, err := DecibelRange(words, min, max)
		if err != nil {
			if ok || d != (Decibels{}) {
				t.Fatalf("error %v with ok %v, %+v", err, ok, d)
			}
			return
		}
		if !ok {
			return
		}
		for _, x := range []int64{d.Min, d.Max} {
			if s := FormatDecibels(x); hundredths(s) != x {
				t.Fatalf("level %d spelled %q reads back as %d", x, s, hundredths(s))
			}
		}
	})
}

// hundredths reads FormatDecibels' spelling back by hand, digit by digit
// (no float, so no rounding hides a wrong digit).
func hundredths(s string) int64 {
	neg := strings.HasPrefix(s, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	frac = (frac + "00")[:2]
	var u uint64
	for _, r := range whole + frac {
		u = 10*u + uint64(r-'0')
	}
	if neg {
		return -int64(u)
	}
	return int64(u)
}

// fuzzControls are one control of each kind, as Read makes them.
var fuzzControls = []Control{
	{ID: alsa.ElemID{Name: "Master Playback Volume"}, Type: alsa.TypeInteger, Channels: 2, Max: 87, Value: []int64{0, 0}},
	{ID: alsa.ElemID{Name: "Beep Playback Volume"}, Type: alsa.TypeInteger64, Channels: 1, Min: -10, Max: 10, Step: 2, Value: []int64{0}},
	{ID: alsa.ElemID{Name: "Wide"}, Type: alsa.TypeInteger64, Channels: 1, Min: -1 << 63, Max: 1<<63 - 1, Step: 3, Value: []int64{0}},
	{ID: alsa.ElemID{Name: "Front Switch"}, Type: alsa.TypeBoolean, Channels: 2, Value: []int64{0, 0}},
	{ID: alsa.ElemID{Name: "Input Source"}, Type: alsa.TypeEnumerated, Channels: 1, Items: []string{"Internal Mic", "Mic, Rear", "1"}, Value: []int64{0}},
	{ID: alsa.ElemID{Name: "Stereo Source"}, Type: alsa.TypeEnumerated, Channels: 2, Items: []string{"A", "B,C", "B", "D"}, Value: []int64{0, 0}},
}

// FuzzParse: whatever the text, Parse accepts only values the control
// takes (Write's own check passes), and an accepted value, once set,
// formats to text that parses back to the same value.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"50", "10,20", "-10", "4", "on", "off,on", "TRUE", "Internal Mic", "Mic, Rear", "B,C", "B,C,A", "A,B", "1", " 87 ", ",", "9223372036854775807", "-9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range fuzzControls {
			v, err := c.Parse(s)
			if err != nil {
				continue
			}
			if err := c.check(v); err != nil {
				t.Fatalf("%s: Parse(%q) = %v, which Write refuses: %v", c, s, v.Ints, err)
			}
			c.Value = v.Ints
			back, err := c.Parse(c.Format())
			if err != nil || !slices.Equal(back.Ints, v.Ints) {
				t.Fatalf("%s: Parse(%q) = %v formats as %q, which parses to %v, %v", c, s, v.Ints, c.Format(), back.Ints, err)
			}
		}
	})
}

// TestFormatParsesBack: every value of every channel of the fuzz
// controls' small ones (the enumerated with commas in item names among
// them) formats to text that parses back to it.
func TestFormatParsesBack(t *testing.T) {
	for _, c := range fuzzControls {
		var values []int64
		switch c.Type {
		case alsa.TypeBoolean:
			values = []int64{0, 1}
		case alsa.TypeEnumerated:
			for i := range c.Items {
				values = append(values, int64(i))
			}
		default:
			values = []int64{c.Min, c.Max}
		}
		var walk func(prefix []int64)
		walk = func(prefix []int64) {
			if len(prefix) == c.Channels {
				c.Value = prefix
				back, err := c.Parse(c.Format())
				if err != nil || !slices.Equal(back.Ints, prefix) {
					t.Errorf("%s: %v formats as %q, which parses to %v, %v", c, prefix, c.Format(), back.Ints, err)
				}
				return
			}
			for _, x := range values {
				walk(append(slices.Clone(prefix), x))
			}
		}
		walk(nil)
	}
}
