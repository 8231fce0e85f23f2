// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/liken-sh/operators/test/fixtures"
)

func TestParseKeyFileFixtures(t *testing.T) {
	f, err := ParseKeyFile(fixtures.BlueZ(t, "8bitdo-nes30-pro.info"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range f.Groups {
		names = append(names, g.Name)
	}
	if strings.Join(names, ",") != "General,DeviceID,LinkKey" {
		t.Fatalf("groups %v", names)
	}
	if v, _ := f.Group("DeviceID").Get("Vendor"); v != "11720" { // 0x2dc8, 8BitDo
		t.Errorf("Vendor %q", v)
	}
	if v, _ := f.Group("General").Get("Services"); v != "00001124-0000-1000-8000-00805f9b34fb;00001200-0000-1000-8000-00805f9b34fb;" {
		t.Errorf("Services %q", v)
	}

	cache, err := ParseKeyFile(fixtures.BlueZ(t, "8bitdo-nes30-pro.cache"))
	if err != nil {
		t.Fatal(err)
	}
	records := cache.Group("ServiceRecords")
	if records == nil || len(records.Entries) != 2 {
		t.Fatalf("ServiceRecords %+v", records)
	}
	// Each value is one SDP record, a data element sequence: 0x35 with a
	// one-byte length, or 0x36 with a two-byte length.
	for i, want := range []int{106, 342} {
		rec, err := hex.DecodeString(records.Entries[i].Value)
		if err != nil {
			t.Fatal(err)
		}
		header := map[byte]int{0x35: 2, 0x36: 3}[rec[0]]
		declared := int(rec[1])
		if rec[0] == 0x36 {
			declared = int(rec[1])<<8 | int(rec[2])
		}
		if len(rec) != want || header+declared != want {
			t.Errorf("record %s: %d bytes, header says %d, want %d", records.Entries[i].Key, len(rec), header+declared, want)
		}
	}
	hid, _ := hex.DecodeString(records.Entries[1].Value)
	if !bytes.Contains(hid, []byte("Bluetooth Wireless Controller   ")) {
		t.Error("the HID record's padded service name is missing")
	}
}

func TestParseKeyFileSyntax(t *testing.T) {
	f, err := ParseKeyFile([]byte("# comment\r\n\n  [General]  \r\nName = Pad\\sOne\\\\x\r\n\tTrusted=true\n[LinkKey]\nKey=1\n[General]\nName=Pad Two\nAlias[de]=Kontroller\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Groups) != 2 {
		t.Fatalf("a repeated group must merge: %d groups", len(f.Groups))
	}
	g := f.Group("General")
	if v, _ := g.Get("Name"); v != "Pad Two" {
		t.Errorf("the last assignment wins: %q", v)
	}
	if v, _ := g.Get("Trusted"); v != "true" {
		t.Errorf("Trusted %q", v)
	}
	if v, _ := g.Get("Alias[de]"); v != "Kontroller" {
		t.Errorf("locale key %q", v)
	}
	g.Entries[0].Value = `Pad\sOne\\x\n`
	if s, err := g.String("Name"); err != nil || s != "Pad One\\x\n" {
		t.Errorf("unescaped %q, %v", s, err)
	}
	g.Entries[0].Value = `bad\q`
	if _, err := g.String("Name"); err == nil {
		t.Error("unknown escape accepted")
	}
}

func TestParseKeyFileRejects(t *testing.T) {
	for name, data := range map[string]string{
		"key before group":   "Name=x\n[General]\n",
		"bare word":          "[General]\nName\n",
		"empty key":          "[General]\n=x\n",
		"empty group":        "[]\n",
		"text after group":   "[General] x\n",
		"bracket in group":   "[Gen[eral]\n",
		"unclosed group":     "[General\n",
		"control in key":     "[General]\nNa\x01me=x\n",
		"bad locale":         "[General]\nName[=x\n",
		"NUL":                "[General]\nName=a\x00b\n",
		"not UTF-8":          "[General]\nName=\xff\n",
		"JSON":               `{"Key": "61D53A3E0A58BE1624EDD9B8DF7672EA"}`,
		"shell":              "#!/bin/sh\nrm -rf /\n",
		"control in group":   "[Gen\x7feral]\n",
		"second close brace": "[General]]\n",
	} {
		if _, err := ParseKeyFile([]byte(data)); err == nil {
			t.Errorf("%s: accepted %q", name, data)
		}
	}
}

func FuzzParseKeyFile(f *testing.F) {
	for _, name := range []string{"8bitdo-nes30-pro.info", "8bitdo-nes30-pro.cache", "razer-basilisk-x-hyperspeed.info"} {
		f.Add(fixtures.BlueZ(f, name))
	}
	f.Add([]byte("[General]\nName=a\\sb\n[LinkKey]\nKey=0x00\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		kf, err := ParseKeyFile(data)
		if err != nil {
			return
		}
		for _, g := range kf.Groups {
			if g.Name == "" || strings.ContainsAny(g.Name, "[]\n") {
				t.Fatalf("group name %q", g.Name)
			}
			seen := map[string]bool{}
			for _, e := range g.Entries {
				if e.Key == "" || strings.ContainsAny(e.Key, "=\n") || seen[e.Key] {
					t.Fatalf("[%s] key %q", g.Name, e.Key)
				}
				seen[e.Key] = true
				if strings.Contains(e.Value, "\n") {
					t.Fatalf("[%s] %s value holds a newline", g.Name, e.Key)
				}
				_, _ = g.String(e.Key)
			}
		}
		// ParseInfo accepts a subset of what parses.
		_, _ = ParseInfo(data)
	})
}

// BenchmarkParseKeyFileLargest parses a cache of the largest size a Secret
// can carry, made of one group of distinct short keys: the shape that
// costs the most per byte.
func BenchmarkParseKeyFileLargest(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString("[Attributes]\n")
	for i := 0; buf.Len() < MaxCacheSize-32; i++ {
		fmt.Fprintf(&buf, "0x%05x=2800:0008:1800\n", i)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseKeyFile(data); err != nil {
			b.Fatal(err)
		}
	}
}
