// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"os"
	"reflect"
	"testing"
)

func addFile(f *testing.F, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}

// FuzzDecodeDump: any accepted dump is served without error by ReadCard,
// and encodes to a dump that reads back equal.
func FuzzDecodeDump(f *testing.F) {
	for card := range 3 {
		addFile(f, DumpPath(xpsDumps, card))
	}
	f.Add([]byte(`{"card":1,"info":{"id":"a","driver":"b","name":"c"},"controls":[{"numid":1,"iface":"PCM","device":3,"name":"ELD","type":"BYTES","access":"read","count":2,"bytes":"1000"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := DecodeDump(data)
		if err != nil {
			return
		}
		r, err := NewRecorded(d)
		if err != nil {
			t.Fatalf("validated dump not served: %v", err)
		}
		c := r.Open()
		defer c.Close()
		if _, err := ReadCard(c); err != nil {
			t.Fatalf("ReadCard of a valid dump: %v", err)
		}
		enc, err := d.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeDump(enc)
		if err != nil {
			t.Fatalf("re-encoded dump: %v", err)
		}
		again, err := back.Encode()
		if err != nil || string(again) != string(enc) {
			t.Fatalf("round trip changed the dump: %v", err)
		}
	})
}

// FuzzParseEvents: any whole number of records parses, and re-encoding
// what was parsed parses to the same events.
func FuzzParseEvents(f *testing.F) {
	f.Add(appendEvent(nil, Event{Mask: EventValue | EventInfo, ID: ELDElemID(3)}))
	f.Add(make([]byte, 72*3))
	f.Fuzz(func(t *testing.T, buf []byte) {
		evs, err := ParseEvents(buf)
		if err != nil {
			if len(buf)%ctlEventSize == 0 {
				t.Fatalf("whole records refused: %v", err)
			}
			return
		}
		if len(evs)*ctlEventSize != len(buf) {
			t.Fatalf("%d events from %d bytes", len(evs), len(buf))
		}
		var again []byte
		for _, e := range evs {
			again = appendEvent(again, e)
		}
		back, err := ParseEvents(again)
		if err != nil || !reflect.DeepEqual(back, evs) {
			t.Fatalf("re-encoded events differ: %v", err)
		}
	})
}

// FuzzParseSubstreamStatus: a status that parses is closed, or open in
// a state named in capitals with a pid that is not negative.
func FuzzParseSubstreamStatus(f *testing.F) {
	f.Add([]byte(heldStatus))
	f.Add([]byte("closed\n"))
	f.Add([]byte("state: PREPARED\nowner_pid   : 0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSubstreamStatus(data)
		if err != nil {
			return
		}
		if s.Open == (s.State == "") || s.OwnerPID < 0 || !s.Open && s.OwnerPID != 0 {
			t.Fatalf("%q parsed as %+v", data, s)
		}
	})
}
