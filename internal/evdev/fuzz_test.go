// SPDX-License-Identifier: Apache-2.0

package evdev

import (
	"encoding/json"
	"testing"
)

// FuzzParse: whatever a Secret holds, Parse either refuses it or returns
// capabilities that validate and survive another round trip unchanged.
func FuzzParse(f *testing.F) {
	seed, _ := json.Marshal(gamepad())
	f.Add(seed)
	f.Add([]byte(`{"name":"x","id":{"bus":3,"vendor":1,"product":2,"version":0},"abs":[{"code":63,"value":0,"min":-1,"max":1}]}`))
	f.Add([]byte(`{"name":"x","key":[767,766]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted what Validate refuses: %v", err)
		}
		again, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := Parse(again)
		if err != nil {
			t.Fatalf("a parsed snapshot does not parse again: %v\n%s", err, again)
		}
		if !SameDevice(c, c2) || c.Phys != c2.Phys || c.FFEffects != c2.FFEffects {
			t.Fatalf("round trip changed the snapshot:\n%+v\n%+v", c, c2)
		}
	})
}

// FuzzDecodeEvents: any bytes decode to whole records or an error, and
// what decodes encodes back to the same bytes.
func FuzzDecodeEvents(f *testing.F) {
	f.Add(AppendEvent(nil, Event{Type: EvKey, Code: 0x130, Value: 1}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		events, err := DecodeEvents(nil, b)
		if err != nil {
			return
		}
		var out []byte
		for _, e := range events {
			out = AppendEvent(out, e)
		}
		if len(out) != len(b) {
			t.Fatalf("%d bytes decoded and encoded to %d", len(b), len(out))
		}
		for i := 16; i < len(b); i += EventSize {
			if string(out[i:i+8]) != string(b[i:i+8]) {
				t.Fatalf("record %d's type, code or value changed", i/EventSize)
			}
		}
	})
}
