// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"errors"
	"slices"
	"testing"
)

// The XPS 17's HDMI PCM 7 channel map (read-write, 8 values, reading all
// 0 while no stream holds it) takes a 5.1 map and reads it back; the USB
// headset's fixed map is refused without a write; a PCM with no element
// says so.
func TestSetChannelMapRecorded(t *testing.T) {
	hdmi := xpsCard(t, 0).Open()
	w, err := SetChannelMap(hdmi, 7, 0, Playback, []string{"FL", "FR", "RL", "RR", "FC", "LFE"})
	if err != nil {
		t.Fatal(err)
	}
	if !w.Wrote || !slices.Equal(w.After, []uint32{3, 4, 5, 6, 7, 8, 0, 0}) || !slices.Equal(w.Before, make([]uint32, 8)) {
		t.Errorf("write %+v", w)
	}
	if again, err := SetChannelMap(hdmi, 7, 0, Playback, []string{"FL", "FR", "RL", "RR", "FC", "LFE"}); err != nil || again.Wrote {
		t.Errorf("the same map again: %+v, %v; want no write", again, err)
	}
	if _, err := SetChannelMap(hdmi, 7, 0, Playback, []string{"FL", "XX"}); err == nil {
		t.Error("a position with no ALSA name was taken")
	}
	usb := xpsCard(t, 1).Open()
	if w, err := SetChannelMap(usb, 0, 0, Playback, []string{"FR", "FL"}); !errors.Is(err, ErrChannelMapFixed) || w.Wrote {
		t.Errorf("a read-only map: %+v, %v", w, err)
	}
	if _, err := SetChannelMap(usb, 0, 0, Playback, []string{"FL", "FR"}); err != nil {
		t.Errorf("a read-only map that already reads as wanted: %v", err)
	}
	if _, err := SetChannelMap(hdmi, 2, 0, Playback, []string{"FL", "FR"}); !errors.Is(err, ErrNoChannelMap) {
		t.Errorf("a PCM with no channel map: %v", err)
	}
}

// A write the driver takes but does not keep (the HDA HDMI driver while
// the PCM is closed) is a mismatch naming both maps; a map its TLV does
// not offer is not written.
func TestSetChannelMapMismatch(t *testing.T) {
	id := ChannelMapElemID(3, 0, Playback)
	d := &Dump{Card: 0, Info: DumpCardInfo{ID: "HDMI", Driver: "HDA-Intel", Name: "HDA Intel"}, Controls: []DumpControl{{
		NumID: 1, Iface: "PCM", Device: 3, Name: id.Name, Type: "INTEGER", Access: "read write tlv_read", Count: 8, Max: 36,
		Values: make([]int64, 8),
		TLV:    []uint32{0, 48, 0x102, 8, 3, 4, 0x103, 24, 3, 4, 5, 6, 7, 8},
	}}}
	r, err := NewRecorded(d)
	if err != nil {
		t.Fatal(err)
	}
	c := &discarding{RecordedControl: r.Open()}
	w, err := SetChannelMap(c, 3, 0, Playback, []string{"FL", "FR", "RR", "RL", "FC", "LFE"})
	if !errors.Is(err, ErrChannelMapMismatch) || !w.Wrote || err.Error() != "PCM 3 playback channel map: the channel map reads back different: wrote FL,FR,RR,RL,FC,LFE, reads ?,?,?,?,?,?,?,?" {
		t.Errorf("%+v: %v", w, err)
	}
	if len(w.Offered) != 2 || w.Offered[1].Kind != ChannelMapPaired {
		t.Errorf("offered %+v", w.Offered)
	}
	c.writes = 0
	if _, err := SetChannelMap(c, 3, 0, Playback, []string{"FL", "FR", "FC", "LFE", "RL", "RR"}); !errors.Is(err, ErrChannelMapNotOffered) || c.writes != 0 {
		t.Errorf("a map not offered: %v, %d writes", err, c.writes)
	}
}

// discarding takes every write and keeps none, as the HDA HDMI driver
// does while no stream holds the PCM.
type discarding struct {
	*RecordedControl
	writes int
}

func (d *discarding) Write(ElemID, Value) error { d.writes++; return nil }

func TestOfferedChannelMapTakes(t *testing.T) {
	fixed := OfferedChannelMap{Kind: ChannelMapFixed, Positions: []uint32{3, 4, 7}}
	vr := OfferedChannelMap{Kind: ChannelMapVar, Positions: []uint32{3, 4, 7}}
	paired := OfferedChannelMap{Kind: ChannelMapPaired, Positions: []uint32{3, 4, 5, 6, 7}}
	for _, c := range []struct {
		o    OfferedChannelMap
		want []uint32
		ok   bool
	}{
		{fixed, []uint32{3, 4, 7}, true}, {fixed, []uint32{4, 3, 7}, false}, {fixed, []uint32{3, 4}, false},
		{vr, []uint32{7, 3, 4}, true}, {vr, []uint32{3, 3, 4}, false},
		{paired, []uint32{4, 3, 6, 5, 7}, true}, {paired, []uint32{3, 5, 4, 6, 7}, false}, {paired, []uint32{3, 4, 5, 6, 8}, false},
	} {
		if got := c.o.Takes(c.want); got != c.ok {
			t.Errorf("%+v takes %v: %v, want %v", c.o, c.want, got, c.ok)
		}
	}
}

func TestParseChannelMapTLV(t *testing.T) {
	got, err := ParseChannelMapTLV([]uint32{0, 36, 0x101, 8, 3, 4, 1, 0, 0x102, 4, 9})
	if err != nil || len(got) != 2 || got[0].Kind != ChannelMapFixed || !slices.Equal(got[1].Positions, []uint32{9}) {
		t.Errorf("%+v, %v (the unknown type 1 is skipped)", got, err)
	}
	for _, bad := range [][]uint32{{0}, {0, 16, 0x101, 8, 3}, {0, 12, 0x101, 12, 3}, {0x101, 8, 3}} {
		if _, err := ParseChannelMapTLV(bad); err == nil {
			t.Errorf("%v parsed", bad)
		}
	}
}

func FuzzParseChannelMapTLV(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 16, 0, 0, 0, 1, 1, 0, 0, 8, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		w := make([]uint32, len(b)/4)
		for i := range w {
			w[i] = uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24
		}
		maps, err := ParseChannelMapTLV(w)
		if err != nil {
			return
		}
		for _, m := range maps {
			if !m.Takes(m.Positions) {
				t.Fatalf("%+v does not take its own positions", m)
			}
		}
	})
}
