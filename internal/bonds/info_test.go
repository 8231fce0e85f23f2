// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/liken-sh/operators/test/fixtures"
)

func TestParseInfoClassicGamepad(t *testing.T) {
	info, err := ParseInfo(fixtures.BlueZ(t, "8bitdo-nes30-pro.info"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "8Bitdo NES30 Pro" || strings.Join(info.Technologies, ",") != "BR/EDR" || info.AddressType != "" {
		t.Fatalf("general: %+v", info)
	}
	if strings.Join(info.Keys(), ",") != "LinkKey" || !info.Bonded() {
		t.Fatalf("keys %v", info.Keys())
	}
	want, _ := hex.DecodeString("61D53A3E0A58BE1624EDD9B8DF7672EA")
	// Type 0 is a legacy combination key, from a PIN of length 0.
	if !bytes.Equal(info.LinkKey.Key[:], want) || info.LinkKey.Type != 0 || info.LinkKey.PINLength != 0 {
		t.Fatalf("link key %+v", info.LinkKey)
	}
}

func TestParseInfoLEMouseDedupesTheRenamedGroup(t *testing.T) {
	data := fixtures.BlueZ(t, "razer-basilisk-x-hyperspeed.info")
	info, err := ParseInfo(data)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "Basilisk X HyperSpeed" || info.AddressType != "static" || strings.Join(info.Technologies, ",") != "LE" {
		t.Fatalf("general: %+v", info)
	}
	// Three keys, not four: [PeripheralLongTermKey] and [SlaveLongTermKey]
	// are one key under two names.
	if got := strings.Join(info.Keys(), ","); got != "LongTermKey,PeripheralLongTermKey,IdentityResolvingKey" {
		t.Fatalf("keys %s", got)
	}
	p := info.PeripheralLongTermKey
	if hex.EncodeToString(p.Key[:]) != "414c87970dbae282734d2bdcc1157c30" || p.EDiv != 27023 || p.Rand != 15138338010761522440 || p.EncSize != 16 || p.Authenticated != 0 {
		t.Fatalf("peripheral LTK %+v", p)
	}
	c := info.LongTermKey
	if hex.EncodeToString(c.Key[:]) != "d23fedc5f5806af8a37d41d81ee4da5c" || c.EDiv != 17209 || c.Rand != 189227263063048024 {
		t.Fatalf("central LTK %+v", c)
	}
	if hex.EncodeToString(info.IdentityResolvingKey[:]) != "8ec94951919f694c8dbfd5e0bea21536" {
		t.Fatalf("IRK %x", info.IdentityResolvingKey)
	}

	// A file from before the rename holds only the old group.
	old := bytes.Replace(data, []byte("[PeripheralLongTermKey]\nKey=414C87970DBAE282734D2BDCC1157C30\nAuthenticated=0\nEncSize=16\nEDiv=27023\nRand=15138338010761522440\n\n"), nil, 1)
	if len(old) == len(data) {
		t.Fatal("fixture changed: could not remove [PeripheralLongTermKey]")
	}
	info, err = ParseInfo(old)
	if err != nil || info.PeripheralLongTermKey == nil || info.PeripheralLongTermKey.EDiv != 27023 {
		t.Fatalf("old name alone: %+v, %v", info, err)
	}

	// When the two disagree, BlueZ loads the new one.
	split := bytes.Replace(data, []byte("[SlaveLongTermKey]\nKey=414C"), []byte("[SlaveLongTermKey]\nKey=FFFF"), 1)
	info, err = ParseInfo(split)
	if err != nil || info.PeripheralLongTermKey.Key[0] != 0x41 {
		t.Fatalf("new name wins: %+v, %v", info.PeripheralLongTermKey, err)
	}
}

func TestParseInfoRejects(t *testing.T) {
	base := string(fixtures.BlueZ(t, "8bitdo-nes30-pro.info"))
	for name, data := range map[string]string{
		"empty":              "",
		"comments only":      "# nothing\n",
		"short key":          strings.Replace(base, "Key=61D53A3E0A58BE1624EDD9B8DF7672EA", "Key=61D53A", 1),
		"non-hex key":        strings.Replace(base, "Key=61D53A3E0A58BE1624EDD9B8DF7672EA", "Key=ZZD53A3E0A58BE1624EDD9B8DF7672EA", 1),
		"no key":             strings.Replace(base, "Key=61D53A3E0A58BE1624EDD9B8DF7672EA\n", "", 1),
		"type not a number":  strings.Replace(base, "Type=0", "Type=zero", 1),
		"type out of range":  strings.Replace(base, "Type=0", "Type=256", 1),
		"EDiv out of range":  "[LongTermKey]\nKey=D23FEDC5F5806AF8A37D41D81EE4DA5C\nEDiv=70000\n",
		"corrupt legacy LTK": "[PeripheralLongTermKey]\nKey=D23FEDC5F5806AF8A37D41D81EE4DA5C\n[SlaveLongTermKey]\nKey=nope\n",
		"bad IRK":            "[IdentityResolvingKey]\nKey=8EC9\n",
		"bad escape in name": "[General]\nName=a\\q\n",
		"binary":             "\x7fELF\x02\x01\x01",
	} {
		if _, err := ParseInfo([]byte(data)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A device remembered without a bond parses, and says so.
	info, err := ParseInfo([]byte("[General]\nName=Neighbour\nTrusted=false\n"))
	if err != nil || info.Bonded() || len(info.Keys()) != 0 {
		t.Fatalf("general only: %+v, %v", info, err)
	}
	// BlueZ's "0x" spelling of a key.
	info, err = ParseInfo([]byte("[LinkKey]\nKey=0x61D53A3E0A58BE1624EDD9B8DF7672EA\nType=4\nPINLength=0\n"))
	if err != nil || info.LinkKey.Type != 4 || info.LinkKey.Key[0] != 0x61 {
		t.Fatalf("0x key: %+v, %v", info, err)
	}
}
