// SPDX-License-Identifier: Apache-2.0

package hid

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseUevent(t *testing.T) {
	root := materialize(t, "testdata/sysfs.dump")
	data, err := os.ReadFile(filepath.Join(root, "devices/virtual/misc/uhid/0005:3434:0213.000A/uevent"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := ParseUevent(data)
	if err != nil {
		t.Fatal(err)
	}
	want := Uevent{
		Bus: 0x0005, Vendor: 0x3434, Product: 0x0213,
		Name: `"Keychron K1 Pro"`, Phys: "60:e9:aa:a0:4f:2c", Uniq: "6c:93:08:62:72:16", Driver: "hid-generic",
		Vars: map[string]string{
			"DRIVER": "hid-generic", "HID_ID": "0005:00003434:00000213", "HID_NAME": `"Keychron K1 Pro"`,
			"HID_PHYS": "60:e9:aa:a0:4f:2c", "HID_UNIQ": "6c:93:08:62:72:16",
			"MODALIAS": "hid:b0005g0001v00003434p00000213",
		},
	}
	if diff := cmp.Diff(u, want); diff != "" {
		t.Errorf("got (-u +want):\n%s", diff)
	}
	// The last line may lack its newline; values may hold '='.
	u, err = ParseUevent([]byte("HID_ID=0003:0000046D:0000C31C\nHID_NAME=a=b"))
	if err != nil || u.Name != "a=b" || u.Bus != 3 || u.Driver != "" {
		t.Errorf("no final newline: %+v, %v", u, err)
	}
}

func TestNormalizeAddress(t *testing.T) {
	for in, want := range map[string]string{
		"6c:93:08:62:72:16": "6C:93:08:62:72:16",
		"E4:17:D8:C5:67:6D": "E4:17:D8:C5:67:6D",
		"aB:cD:eF:01:23:45": "AB:CD:EF:01:23:45",
	} {
		if got, err := normalizeAddress(in); err != nil || got != want {
			t.Errorf("normalizeAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "6c:93:08:62:72", "6c:93:08:62:72:16:00", "6c-93-08-62-72-16", "6c:93:08:62:72:1g", " 6c:93:08:62:72:1", "6c:93:08:62:72:16\n"} {
		if got, err := normalizeAddress(bad); err == nil {
			t.Errorf("normalizeAddress(%q) = %q, want an error", bad, got)
		}
	}
}

// FuzzParseUevent feeds arbitrary uevent files to ParseUevent: no panic, and
// what it accepts is consistent with its variables and survives being
// written back out in another order.
func FuzzParseUevent(f *testing.F) {
	data, err := os.ReadFile("testdata/sysfs.dump")
	if err != nil {
		f.Fatal(err)
	}
	// Seed with each HID uevent file of the recorded tree.
	for _, block := range strings.Split(string(data), "\n/sys/") {
		if p, content, ok := strings.Cut(block, ": "); ok && strings.HasSuffix(p, "/uevent") && strings.Contains(content, "HID_ID") {
			f.Add([]byte(content + "\n"))
		}
	}
	f.Add([]byte("HID_ID=0005:00000001:00000002\nHID_NAME=x\nHID_UNIQ=1\nHID_UNIQ=2\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := ParseUevent(b)
		if err != nil {
			return
		}
		if len(b) > maxUeventFile {
			t.Fatalf("accepted %d bytes", len(b))
		}
		if u.Name != u.Vars["HID_NAME"] || u.Phys != u.Vars["HID_PHYS"] || u.Uniq != u.Vars["HID_UNIQ"] || u.Driver != u.Vars["DRIVER"] {
			t.Fatalf("fields disagree with Vars: %+v", u)
		}
		bus, vendor, product, err := parseID(u.Vars["HID_ID"])
		if err != nil || bus != u.Bus || vendor != u.Vendor || product != u.Product {
			t.Fatalf("HID_ID %q vs %+v", u.Vars["HID_ID"], u)
		}
		var out []string
		for k, v := range u.Vars {
			if strings.Contains(k, "\n") || strings.Contains(v, "\n") || strings.Contains(k, "=") {
				t.Fatalf("variable %q=%q holds a separator", k, v)
			}
			out = append(out, k+"="+v)
		}
		again, err := ParseUevent([]byte(strings.Join(out, "\n") + "\n"))
		if err != nil || !reflect.DeepEqual(again, u) {
			t.Fatalf("rewritten file parses as %+v, %v; was %+v", again, err, u)
		}
	})
}

// FuzzParseEvdevNode feeds arbitrary eventN uevent files to
// parseEvdevNode: no panic, and a node it accepts is an evdev node below
// the /dev root, numbered as its MAJOR and MINOR say, and only with an
// evdev number.
func FuzzParseEvdevNode(f *testing.F) {
	data, err := os.ReadFile("testdata/sysfs.dump")
	if err != nil {
		f.Fatal(err)
	}
	// Seed with each evdev node's uevent file of the recorded tree.
	for _, block := range strings.Split(string(data), "\n/sys/") {
		if p, content, ok := strings.Cut(block, ": "); ok && strings.HasSuffix(p, "/uevent") && strings.Contains(content, "DEVNAME=input/event") {
			f.Add([]byte(content + "\n"))
		}
	}
	f.Add([]byte("MAJOR=8\nMINOR=0\nDEVNAME=input/event0\n"))
	f.Add([]byte("MAJOR=13\nMINOR=1023\nDEVNAME=input/event959\n"))
	f.Add([]byte("MAJOR=13\nMINOR=+65\nDEVNAME=input/event1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseEvdevNode(b, "/dev")
		if err != nil {
			return
		}
		vars, err := parseVars(b)
		if err != nil {
			t.Fatalf("accepted a file parseVars refuses: %v", err)
		}
		if n.Path != "/dev/"+vars["DEVNAME"] || !evdevNamePattern.MatchString(vars["DEVNAME"]) {
			t.Fatalf("node %v from DEVNAME %q", n, vars["DEVNAME"])
		}
		if n.Major != InputMajor || n.Minor >= inputMinors {
			t.Fatalf("accepted %v, not an evdev number", n)
		}
		for key, got := range map[string]uint32{"MAJOR": n.Major, "MINOR": n.Minor} {
			if v, err := strconv.ParseUint(vars[key], 10, 32); err != nil || v != uint64(got) {
				t.Fatalf("%s %q read as %d", key, vars[key], got)
			}
		}
	})
}
