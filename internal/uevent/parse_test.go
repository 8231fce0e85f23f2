// SPDX-License-Identifier: Apache-2.0

package uevent

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// loadDatagrams reads a testdata/*.uevents file: blocks separated by blank
// lines, each a header line and variable lines, '#' lines are comments. It
// returns each block as the kernel's wire form: NUL after every line.
func loadDatagrams(t testing.TB, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	var cur []byte
	flush := func() {
		if cur != nil {
			out = append(out, cur)
			cur = nil
		}
	}
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
		case line == "":
			flush()
		default:
			cur = append(append(cur, line...), 0)
		}
	}
	flush()
	if len(out) == 0 {
		t.Fatalf("%s holds no datagram", path)
	}
	return out
}

func TestParseRecordedKernelDatagrams(t *testing.T) {
	for _, tc := range []struct {
		file string
		want Event
	}{
		{"recorded-lo-add.bin", Event{
			Action: "add", DevPath: "/devices/virtual/net/lo", Subsystem: "net", Seqnum: 1016,
			Env: map[string]string{"ACTION": "add", "DEVPATH": "/devices/virtual/net/lo", "SUBSYSTEM": "net",
				"SYNTH_UUID": "0", "INTERFACE": "lo", "IFINDEX": "1", "SEQNUM": "1016"},
		}},
		{"recorded-lo-change-synth.bin", Event{
			Action: "change", DevPath: "/devices/virtual/net/lo", Subsystem: "net", Seqnum: 1017,
			Env: map[string]string{"ACTION": "change", "DEVPATH": "/devices/virtual/net/lo", "SUBSYSTEM": "net",
				"SYNTH_UUID": "0b5e3f4c-86a1-4e35-9d1d-2f7c1a6e0a11", "SYNTH_ARG_LIKEN": "recorded",
				"INTERFACE": "lo", "IFINDEX": "1", "SEQNUM": "1017"},
		}},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if diff := cmp.Diff(got, tc.want); diff != "" {
			t.Errorf("got (-got +tc.want):\n%s", diff)
		}
	}
}

func TestParseHIDDatagrams(t *testing.T) {
	dgs := loadDatagrams(t, "testdata/hid-uhid-mouse3600.uevents")
	if len(dgs) != 16 {
		t.Fatalf("%d datagrams, want 16", len(dgs))
	}
	var events []Event
	for i, b := range dgs {
		ev, err := Parse(b)
		if err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
		events = append(events, ev)
	}
	// The HID device's own add: bus, names and addresses as the kernel
	// printed them, byte for byte.
	add := events[0]
	if add.Action != "add" || add.Subsystem != "hid" || add.Seqnum != 4301 ||
		add.DevPath != "/devices/virtual/misc/uhid/0005:045E:0916.0004" {
		t.Errorf("first event %+v", add)
	}
	for k, v := range map[string]string{
		"HID_ID": "0005:0000045E:00000916", "HID_NAME": "BluetoothMouse3600",
		"HID_PHYS": "80:19:34:4D:31:44", "HID_UNIQ": "C8:3F:26:10:20:30",
	} {
		if add.Env[k] != v {
			t.Errorf("add %s = %q, want %q", k, add.Env[k], v)
		}
	}
	// The input core quotes NAME; the parser keeps values verbatim.
	if got := events[1].Env["NAME"]; got != `"BluetoothMouse3600 Mouse"` {
		t.Errorf("input NAME = %q", got)
	}
	if got := events[3].Env["DEVNAME"]; got != "input/event4" {
		t.Errorf("event4 DEVNAME = %q", got)
	}
	if events[7].Action != "bind" || events[7].Env["DRIVER"] != "hid-generic" {
		t.Errorf("bind event %+v", events[7])
	}
	last := events[len(events)-1]
	if last.Action != "remove" || last.Subsystem != "hid" || last.Env["HID_UNIQ"] != "C8:3F:26:10:20:30" {
		t.Errorf("last event %+v", last)
	}
	for i := 1; i < len(events); i++ {
		if events[i].Seqnum != events[i-1].Seqnum+1 {
			t.Errorf("seqnum %d after %d", events[i].Seqnum, events[i-1].Seqnum)
		}
	}

	// The other recorded sequences parse whole.
	for _, f := range []string{"hid-uhid-mxanywhere2-ortho.uevents", "hid-hidp-8bitdo.uevents", "input-lis3lv02d.uevents", "usb-hid-keyboard.uevents"} {
		for i, b := range loadDatagrams(t, filepath.Join("testdata", f)) {
			if _, err := Parse(b); err != nil {
				t.Errorf("%s datagram %d: %v", f, i, err)
			}
		}
	}
	lis := loadDatagrams(t, "testdata/input-lis3lv02d.uevents")
	ev, _ := Parse(lis[0])
	if ev.Env["NAME"] != `"ST LIS3LV02DL Accelerometer"` || ev.Env["MODALIAS"] != "input:b0019v0000p0000e0000-e0,3,kra0,1,2,mlsfw" {
		t.Errorf("lis3lv02d input: %+v", ev.Env)
	}
}

func TestParseWithoutFinalNUL(t *testing.T) {
	b, _ := os.ReadFile("testdata/recorded-lo-add.bin")
	ev, err := Parse(bytes.TrimSuffix(b, []byte{0}))
	if err != nil || ev.Seqnum != 1016 {
		t.Fatalf("Parse without final NUL = %+v, %v", ev, err)
	}
}

func TestParseRejects(t *testing.T) {
	good := "add@/devices/virtual/net/lo\x00ACTION=add\x00DEVPATH=/devices/virtual/net/lo\x00SUBSYSTEM=net\x00SEQNUM=7\x00"
	many := "add@/d\x00ACTION=add\x00DEVPATH=/d\x00SUBSYSTEM=x\x00SEQNUM=1\x00"
	for i := 0; i < MaxVars; i++ {
		many += "K" + strings.Repeat("x", i) + "=v\x00"
	}
	for _, tc := range []struct {
		name, in, reason string
	}{
		{"empty", "", "empty datagram"},
		{"too big", good + "X=" + strings.Repeat("a", MaxDatagramSize) + "\x00", "exceeds the 8192-byte limit"},
		{"no NUL", "add@/devices/virtual/net/lo", "not NUL-terminated"},
		{"no at", "add/devices\x00ACTION=add\x00", "no '@'"},
		{"empty action", "@/d\x00", "empty action"},
		{"upper action", "ADD@/d\x00", "not a lowercase word"},
		{"relative devpath", "add@devices/x\x00", "does not start with '/'"},
		{"empty devpath", "add@\x00", "does not start with '/'"},
		{"empty variable", strings.Replace(good, "\x00SUBSYSTEM", "\x00\x00SUBSYSTEM", 1), "empty variable"},
		{"no equals", good + "JUNK\x00", `"JUNK" has no '='`},
		{"empty key", good + "=v\x00", "empty key"},
		{"duplicate", good + "SUBSYSTEM=hid\x00", `"SUBSYSTEM" repeated`},
		{"too many", many, "more than 64 variables"},
		{"no seqnum", "add@/d\x00ACTION=add\x00DEVPATH=/d\x00SUBSYSTEM=x\x00", "SEQNUM missing"},
		{"no subsystem", "add@/d\x00ACTION=add\x00DEVPATH=/d\x00SEQNUM=1\x00", "SUBSYSTEM missing"},
		{"empty subsystem", "add@/d\x00ACTION=add\x00DEVPATH=/d\x00SUBSYSTEM=\x00SEQNUM=1\x00", "SUBSYSTEM is empty"},
		{"action mismatch", "add@/d\x00ACTION=remove\x00DEVPATH=/d\x00SUBSYSTEM=x\x00SEQNUM=1\x00", "disagrees with header action"},
		{"devpath mismatch", "add@/d\x00ACTION=add\x00DEVPATH=/e\x00SUBSYSTEM=x\x00SEQNUM=1\x00", "disagrees with header devpath"},
		{"bad seqnum", "add@/d\x00ACTION=add\x00DEVPATH=/d\x00SUBSYSTEM=x\x00SEQNUM=-1\x00", "not a decimal uint64"},
		{"huge seqnum", "add@/d\x00ACTION=add\x00DEVPATH=/d\x00SUBSYSTEM=x\x00SEQNUM=18446744073709551616\x00", "not a decimal uint64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := Parse([]byte(tc.in))
			if err == nil {
				t.Fatalf("Parse accepted %q as %+v", tc.in, ev)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrMalformed) {
				t.Errorf("error %v (%T) is not a *ParseError wrapping ErrMalformed", err, err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q does not say %q", err, tc.reason)
			}
		})
	}
	if _, err := Parse([]byte(good)); err != nil {
		t.Errorf("the control datagram fails: %v", err)
	}
}

// libudevMessage is the head of a libudev "monitor" datagram as udev sends it
// on group 2: the "libudev" magic string, then a binary header (magic
// 0xfeedcafe in network order, header size, property offsets, filter hashes).
func libudevMessage() []byte {
	b := []byte("libudev\x00")
	b = append(b, 0xfe, 0xed, 0xca, 0xfe) // magic
	b = append(b, 40, 0, 0, 0)            // header size
	b = append(b, 40, 0, 0, 0, 30, 0, 0, 0)
	b = append(b, make([]byte, 16)...)
	return append(b, "ACTION=add\x00SEQNUM=1\x00SUBSYSTEM=hid\x00DEVPATH=/d\x00"...)
}

func TestParseRejectsLibudev(t *testing.T) {
	_, err := Parse(libudevMessage())
	if !errors.Is(err, ErrLibudev) {
		t.Fatalf("Parse(libudev) = %v, want ErrLibudev", err)
	}
	if errors.Is(err, ErrMalformed) {
		t.Errorf("libudev error should be distinct from ErrMalformed")
	}
}

// FuzzParse feeds arbitrary datagrams to Parse. It must not panic, and what
// it accepts must be self-consistent and survive a re-encoding.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"recorded-lo-add.bin", "recorded-lo-change-synth.bin"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, b := range loadDatagrams(f, "testdata/hid-uhid-mouse3600.uevents")[:4] {
		f.Add(b)
	}
	f.Add(libudevMessage())
	f.Add([]byte("add@/d\x00ACTION=add\x00DEVPATH=/d\x00SUBSYSTEM=x\x00SEQNUM=1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrLibudev) {
				t.Fatalf("error %v is neither ErrMalformed nor ErrLibudev", err)
			}
			return
		}
		if len(b) > MaxDatagramSize || len(ev.Env) > MaxVars {
			t.Fatalf("accepted %d bytes with %d variables", len(b), len(ev.Env))
		}
		if ev.Env["ACTION"] != ev.Action || ev.Env["DEVPATH"] != ev.DevPath ||
			ev.Env["SUBSYSTEM"] != ev.Subsystem || ev.Subsystem == "" || !strings.HasPrefix(ev.DevPath, "/") {
			t.Fatalf("inconsistent event %+v", ev)
		}
		// Re-encode in a different variable order: the same event.
		re := []byte(ev.Action + "@" + ev.DevPath + "\x00")
		keys := make([]string, 0, len(ev.Env))
		for k := range ev.Env {
			keys = append(keys, k)
		}
		for i := len(keys) - 1; i >= 0; i-- {
			re = append(append(re, keys[i]+"="+ev.Env[keys[i]]...), 0)
		}
		if len(re) > MaxDatagramSize {
			return
		}
		again, err := Parse(re)
		if err != nil || !reflect.DeepEqual(again, ev) {
			t.Fatalf("re-encoded event differs: %+v, %v; was %+v", again, err, ev)
		}
	})
}

func BenchmarkParseHIDAdd(b *testing.B) {
	dg := loadDatagrams(b, "testdata/hid-uhid-mouse3600.uevents")[1] // the input device, the longest
	b.SetBytes(int64(len(dg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(dg); err != nil {
			b.Fatal(err)
		}
	}
}
