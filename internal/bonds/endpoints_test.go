// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// speakerCache is a speaker's cache file as BlueZ 5.66 writes it: its
// name, an SDP record, and two sink endpoints (SBC, and LDAC, vendor
// 0x012d codec 0x00aa) with the last stream's SEIDs.
const speakerCache = "[General]\nName=Kitchen\n\n[ServiceRecords]\n0x00010001=3508090000\n\n" +
	"[Endpoints]\n01=01:00:00:ffff0235\n02=01:ff:01:2d010000aa003c07\nLastUsed=01:01\n\n[Attributes]\n0x0001=2800\n"

func TestParseEndpoints(t *testing.T) {
	got, err := ParseEndpoints([]byte(speakerCache))
	if err != nil {
		t.Fatal(err)
	}
	want := []CachedEndpoint{
		{SEID: 1, Type: SEPSink, Codec: 0x00, Capabilities: []byte{0xff, 0xff, 0x02, 0x35}},
		{SEID: 2, Type: SEPSink, Codec: 0xff, DelayReporting: true, Capabilities: []byte{0x2d, 0x01, 0, 0, 0xaa, 0, 0x3c, 0x07}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("endpoints (-want +got):\n%s", d)
	}
	// The older form, without delay reporting; out of file order.
	got, err = ParseEndpoints([]byte("[Endpoints]\n03=01:00:ffff0235\n01=00:02:8f\n"))
	if err != nil || len(got) != 2 || got[0].SEID != 1 || got[0].Type != SEPSource || got[1].DelayReporting {
		t.Errorf("older form: %+v, %v", got, err)
	}
	if got, err := ParseEndpoints([]byte("[General]\nName=x\n")); got != nil || err != nil {
		t.Errorf("a cache without [Endpoints]: %+v, %v; want none and no error", got, err)
	}
	for _, c := range []struct{ data, want string }{
		{"[Endpoints]\n00=01:00:00:ff\n", "not a stream endpoint ID"},
		{"[Endpoints]\n3f=01:00:00:ff\n", "not a stream endpoint ID"},
		{"[Endpoints]\nsbc=01:00:00:ff\n", "not a stream endpoint ID"},
		{"[Endpoints]\n01=02:00:00:ff\n", `SEP type "02"`},
		{"[Endpoints]\n01=01:0g:00:ff\n", `codec type "0g"`},
		{"[Endpoints]\n01=01:00:02:ff\n", `delay reporting "02"`},
		{"[Endpoints]\n01=01:00:00:fff\n", "are not hex bytes"},
		{"[Endpoints]\n01=01\n", "got 1 fields"},
		{"[Endpoints]\nLastUsed=01\n", "want LL:RR"},
		{"[Endpoints]\nLastUsed=01:40\n", `"40" is not a stream endpoint ID`},
		{"Endpoints=1\n", "line 1"},
	} {
		_, err := ParseEndpoints([]byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q", c.data, err, c.want)
		}
	}
}

func TestWithoutEndpoints(t *testing.T) {
	out, removed, err := WithoutEndpoints([]byte(speakerCache))
	if err != nil || !removed {
		t.Fatalf("removed %v, %v", removed, err)
	}
	want := "[General]\nName=Kitchen\n\n[ServiceRecords]\n0x00010001=3508090000\n\n[Attributes]\n0x0001=2800\n"
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	again, removed, err := WithoutEndpoints(out)
	if err != nil || removed || !bytes.Equal(again, out) {
		t.Errorf("a file without [Endpoints] came back changed (%v, %v)", removed, err)
	}
	if _, _, err := WithoutEndpoints([]byte("[Endpoints]\n\x00\n")); err == nil {
		t.Error("a file ParseKeyFile refuses was edited")
	}
}

// FuzzParseEndpoints: a cache file comes from the tree bluetoothd wrote
// or from a bond Secret anyone with write access in the namespace made.
// ParseEndpoints either refuses it or returns endpoints in SEID order
// within AVDTP's range, and WithoutEndpoints of an accepted file keeps
// every other group and leaves no endpoint.
func FuzzParseEndpoints(f *testing.F) {
	f.Add([]byte(speakerCache))
	f.Add([]byte("[Endpoints]\n03=01:00:ffff0235\n01=00:02:8f\n"))
	f.Add([]byte("[Endpoints]\nLastUsed=01:02\n[Endpoints]\n02=01:00:00:\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		eps, err := ParseEndpoints(data)
		if err != nil {
			return
		}
		for i, e := range eps {
			if e.SEID == 0 || e.SEID > maxSEID || e.Type > SEPSink || (i > 0 && e.SEID <= eps[i-1].SEID) {
				t.Fatalf("endpoint %d out of range or order: %+v", i, e)
			}
		}
		out, removed, err := WithoutEndpoints(data)
		if err != nil {
			t.Fatalf("WithoutEndpoints refuses a file ParseEndpoints read: %v", err)
		}
		before, _ := ParseKeyFile(data)
		after, err := ParseKeyFile(out)
		if err != nil {
			t.Fatalf("the file without [Endpoints] does not parse: %v\n%q", err, out)
		}
		if after.Group(EndpointsGroup) != nil || removed != (before.Group(EndpointsGroup) != nil) {
			t.Fatalf("[Endpoints] still there, or removed reported %v wrongly:\n%q", removed, out)
		}
		for _, g := range before.Groups {
			if g.Name != EndpointsGroup && after.Group(g.Name) == nil {
				t.Fatalf("group [%s] was lost", g.Name)
			}
		}
	})
}
