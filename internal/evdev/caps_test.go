// SPDX-License-Identifier: Apache-2.0

package evdev

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// gamepad is a DualShock-4-like pad's main input device as the kernel's
// hid-sony driver registers it.
func gamepad() Capabilities {
	return Capabilities{
		Name: "Wireless Controller",
		ID:   ID{Bus: 5, Vendor: 0x054c, Product: 0x09cc, Version: 0x8100},
		Phys: "04:4a:69:66:92:27", Uniq: "a0:ab:51:33:b7:12",
		Keys: []uint16{0x130, 0x131, 0x133, 0x134, 0x136, 0x137, 0x13a, 0x13b, 0x13c},
		Abs: []Axis{
			{Code: 0x00, AbsInfo: AbsInfo{Value: 128, Maximum: 255}},
			{Code: 0x01, AbsInfo: AbsInfo{Value: 128, Maximum: 255}},
			{Code: 0x10, AbsInfo: AbsInfo{Minimum: -1, Maximum: 1}},
		},
		ForceFeedback: []uint16{FFRumble, FFPeriodic, 0x58, 0x59, 0x5a, FFGain},
		FFEffects:     16,
	}
}

func TestParseRoundTrip(t *testing.T) {
	want := gamepad()
	data, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse(%s): %v", data, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if !SameDevice(want, got) {
		t.Error("SameDevice of a round trip is false")
	}
	if types := got.Types(); !slicesEqual(types, []uint16{EvSyn, EvKey, EvAbs, EvFF}) {
		t.Errorf("Types() = %v", types)
	}
	if !got.Has(EvKey, 0x130) || got.Has(EvKey, 0x132) || !got.Has(EvAbs, 0x10) || got.Has(EvAbs, 0x02) || got.Has(EvRel, 0) {
		t.Error("Has answers wrong")
	}
}

func slicesEqual(a, b []uint16) bool { return cmp.Equal(a, b) }

func TestParseRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Capabilities)
		want string
	}{
		{"no name", func(c *Capabilities) { c.Name = "" }, "name"},
		{"long name", func(c *Capabilities) { c.Name = strings.Repeat("x", 80) }, "name"},
		{"NUL in name", func(c *Capabilities) { c.Name = "a\x00b" }, "name"},
		{"key above KEY_MAX", func(c *Capabilities) { c.Keys = append(c.Keys, 0x300) }, "key: code 0x300"},
		{"unsorted keys", func(c *Capabilities) { c.Keys = []uint16{0x131, 0x130} }, "ascending"},
		{"duplicate axis", func(c *Capabilities) { c.Abs = append(c.Abs, c.Abs[2]) }, "abs: code 0x10 after 0x10"},
		{"min above max", func(c *Capabilities) { c.Abs[0].Minimum = 300 }, "min 300 is above max 255"},
		{"value out of range", func(c *Capabilities) { c.Abs[0].Value = 256 }, "outside"},
		{"effects without ff", func(c *Capabilities) { c.ForceFeedback = nil }, "ffEffects"},
		{"prop above max", func(c *Capabilities) { c.Properties = []uint16{0x20} }, "props"},
		{"flat wider than the range", func(c *Capabilities) { c.Abs[0].Flat = 256 }, "abs 0x0: flat 256 is wider than the range 0..255"},
		{"101 touch slots", func(c *Capabilities) {
			c.Abs = append(c.Abs, Axis{Code: AbsMTSlot, AbsInfo: AbsInfo{Maximum: 100}})
		}, "max 100 is more than the 100 touch slots"},
	} {
		t.Run(c.name, func(t *testing.T) {
			caps := gamepad()
			c.edit(&caps)
			data, err := json.Marshal(caps)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(data)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse = %v, want an error about %q", err, c.want)
			}
		})
	}
	for _, bad := range []string{`{"name":"x","extra":1}`, `{"name":"x"} {}`, `[]`, ``} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func TestSameDevice(t *testing.T) {
	a := gamepad()
	b := gamepad()
	b.ID.Version, b.Uniq, b.Abs[0].Value = 0x8200, "", 3
	if !SameDevice(a, b) {
		t.Error("a firmware version, uniq or current value made the device another")
	}
	b.Name = "Wireless Controller Touchpad"
	if SameDevice(a, b) {
		t.Error("another name is the same device")
	}
	b = gamepad()
	b.Abs[1].Maximum = 1023
	if SameDevice(a, b) {
		t.Error("another axis range is the same device")
	}
}

func TestEvents(t *testing.T) {
	in := []Event{
		{Time: time.Unix(1700000000, 123456000), Type: EvKey, Code: 0x130, Value: 1},
		{Time: time.Unix(1700000000, 123456000), Type: EvAbs, Code: 0, Value: -7},
		{Type: EvSyn, Code: SynReport},
	}
	var b []byte
	for _, e := range in {
		b = AppendEvent(b, e)
	}
	if len(b) != 3*EventSize {
		t.Fatalf("%d bytes, want %d", len(b), 3*EventSize)
	}
	out, err := DecodeEvents(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	in[2].Time = time.Unix(0, 0)
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := DecodeEvents(nil, b[:EventSize+1]); err == nil {
		t.Error("a partial record decoded")
	}
}

func TestBits(t *testing.T) {
	if got := Bits([]byte{0b101, 0, 0x80}, 0x17); !cmp.Equal(got, []uint16{0, 2, 23}) {
		t.Errorf("Bits = %v", got)
	}
	if got := Bits([]byte{0xff}, 3); !cmp.Equal(got, []uint16{0, 1, 2, 3}) {
		t.Errorf("Bits with a limit = %v", got)
	}
}
