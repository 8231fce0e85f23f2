// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"errors"
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/alsa/eld"
)

func TestDecodeDumpRejects(t *testing.T) {
	base := `{"card": 0, "info": {"id": "PCH", "driver": "HDA-Intel", "name": "HDA Intel PCH"}, %s}`
	for _, tc := range []struct {
		name, body, says string
	}{
		{"unknown field", `"pcm": []`, `unknown field "pcm"`},
		{"PCM stream", `"pcms": [{"device": 0, "stream": "both", "id": "x", "subdevices": 1}]`, `unknown PCM stream "both"`},
		{"PCM twice", `"pcms": [{"device": 3, "stream": "playback", "id": "a", "subdevices": 1}, {"device": 3, "stream": "playback", "id": "b", "subdevices": 1}]`, "PCM 3 playback appears twice"},
		{"no subdevice", `"pcms": [{"device": 3, "stream": "playback", "id": "a", "subdevices": 0}]`, "0 subdevices"},
		{"long PCM id", `"pcms": [{"device": 3, "stream": "playback", "id": "` + strings.Repeat("x", 64) + `", "subdevices": 1}]`, "more than 63"},
		{"numid 0", `"controls": [{"numid": 0, "iface": "MIXER", "name": "A", "type": "BOOLEAN", "access": "read", "count": 1, "values": [1]}]`, "numid 0"},
		{"numid twice", `"controls": [{"numid": 1, "iface": "MIXER", "name": "A", "type": "BOOLEAN", "access": "read", "count": 0}, {"numid": 1, "iface": "MIXER", "name": "B", "type": "BOOLEAN", "access": "read", "count": 0}]`, "numid 1 is used"},
		{"same id twice", `"controls": [{"numid": 1, "iface": "MIXER", "name": "A", "type": "BOOLEAN", "access": "read", "count": 0}, {"numid": 2, "iface": "MIXER", "name": "A", "type": "BOOLEAN", "access": "read", "count": 0}]`, "two elements are"},
		{"name too long", `"controls": [{"numid": 1, "iface": "MIXER", "name": "` + strings.Repeat("n", 44) + `", "type": "BOOLEAN", "access": "read", "count": 0}]`, "more than 43"},
		{"bad iface", `"controls": [{"numid": 1, "iface": "SOUND", "name": "A", "type": "BOOLEAN", "access": "read", "count": 0}]`, "unknown element interface"},
		{"boolean 2", `"controls": [{"numid": 1, "iface": "MIXER", "name": "A", "type": "BOOLEAN", "access": "read", "count": 1, "values": [2]}]`, "BOOLEAN value 2"},
		{"values count", `"controls": [{"numid": 1, "iface": "MIXER", "name": "A", "type": "INTEGER", "access": "read", "count": 2, "max": 5, "values": [1]}]`, "1 values for count 2"},
		{"out of range", `"controls": [{"numid": 1, "iface": "MIXER", "name": "A", "type": "INTEGER", "access": "read", "count": 1, "max": 5, "values": [6]}]`, "value 6 outside 0..5"},
		{"ELD bytes vs count", `"controls": [{"numid": 1, "iface": "PCM", "name": "ELD", "type": "BYTES", "access": "read volatile", "count": 4, "bytes": "1000"}]`, "2 bytes for a BYTES element that holds 4"},
		{"not hex", `"controls": [{"numid": 1, "iface": "PCM", "name": "ELD", "type": "BYTES", "access": "read", "count": 1, "bytes": "zz"}]`, "bytes:"},
		{"BYTES too long", `"controls": [{"numid": 1, "iface": "PCM", "name": "ELD", "type": "BYTES", "access": "read", "count": 513}]`, "count 513"},
		{"enum item", `"controls": [{"numid": 1, "iface": "MIXER", "name": "A", "type": "ENUMERATED", "access": "read", "count": 1, "items": ["x"], "values": [1]}]`, "item 1 of 1"},
		{"TLV without access", `"controls": [{"numid": 1, "iface": "MIXER", "name": "A", "type": "INTEGER", "access": "read", "count": 0, "tlv": [1, 8, 0, 0]}]`, "tlv_read"},
		{"TLV length", `"controls": [{"numid": 1, "iface": "MIXER", "name": "A", "type": "INTEGER", "access": "read tlv_read", "count": 0, "tlv": [1, 12, 0, 0]}]`, "says length 12"},
		{"access word", `"controls": [{"numid": 1, "iface": "MIXER", "name": "A", "type": "INTEGER", "access": "rw", "count": 0}]`, `access word "rw"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeDump([]byte(strings.Replace(base, "%s", tc.body, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("DecodeDump: %v; want an error saying %q", err, tc.says)
			}
		})
	}
	if _, err := DecodeDump([]byte(`{"card": 0, "info": {"id": "A", "driver": "B", "name": "C"}} {}`)); err == nil {
		t.Error("trailing data accepted")
	}
}

// TestCorruptELDKeepsTheCard: a corrupt block on one output is that
// output's error; the card and every other output read as before.
func TestCorruptELDKeepsTheCard(t *testing.T) {
	r := xpsCard(t, 0)
	if err := r.SetELD(6, []byte{0x18, 0, 0, 0, 0x1f}); err != nil {
		t.Fatal(err)
	}
	c := r.Open()
	defer c.Close()
	card, err := ReadCard(c)
	if err != nil {
		t.Fatal(err)
	}
	if p := card.PCM(6, Playback); !p.HasELD || p.ELD.Valid() || !errors.Is(p.ELD.Err, eld.ErrInvalid) ||
		!strings.Contains(p.ELD.Err.Error(), "ELD of PCM 6") || len(p.ELD.Raw) != 5 {
		t.Errorf("PCM 6: %+v", p.ELD)
	}
	if p := card.PCM(7, Playback); !p.ELD.Valid() {
		t.Errorf("PCM 7 lost its monitor: %+v", p.ELD)
	}
	if ConnectionType(*card.PCM(6, Playback), card.Info, CardIdentity{}) != "" {
		t.Error("a corrupt ELD published a connection type")
	}
}
