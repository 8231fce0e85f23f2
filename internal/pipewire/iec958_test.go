// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIEC958Literal(t *testing.T) {
	for _, tc := range []struct {
		codecs []string
		want   string
	}{
		{nil, `{ iec958Codecs: [ "PCM" ] }`},
		{[]string{IEC958PCM, IEC958AC3, IEC958DTSHD}, `{ iec958Codecs: [ "PCM", "AC3", "DTS-HD" ] }`},
		{[]string{IEC958TrueHD}, `{ iec958Codecs: [ "TrueHD" ] }`},
	} {
		got, err := IEC958Literal(tc.codecs)
		if err != nil || got != tc.want {
			t.Errorf("IEC958Literal(%v) = %q, %v; want %q", tc.codecs, got, err, tc.want)
		}
	}
	for codecs, want := range map[string]string{
		"ac3":           `"ac3" is not one of PipeWire's`,
		"AC3 } { x: 1":  `"AC3 } { x: 1" is not one of PipeWire's`,
		"AC3,DTS,AC3":   "AC3 is named twice",
		"PCM,EAC3,EAC3": "EAC3 is named twice",
	} {
		if _, err := IEC958Literal(strings.Split(codecs, ",")); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("IEC958Literal(%s): %v, want %q", codecs, err, want)
		}
	}
}

// TestParseIEC958: what a node's Props and EnumFormat say of IEC 958, in
// pw-dump's shapes (a choice of names, a single name) and with values of
// other types left out.
func TestParseIEC958(t *testing.T) {
	g, err := ParseDump([]byte(`[
	{"id": 40, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "hdmi"}, "params": {
		"Props": [{"volume": 1.0}, {"device": "hdmi:0", "iec958Codecs": ["PCM", "DTS", 7, "AC3"]}],
		"EnumFormat": [{"mediaSubtype": "raw", "rate": 48000},
			{"mediaSubtype": "iec958", "iec958Codec": {"default": "PCM", "alt1": "PCM", "alt2": "DTS", "alt3": "AC3"}, "rate": 48000}]}}},
	{"id": 41, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "one"}, "params": {
		"Props": [{"iec958Codecs": []}], "EnumFormat": [{"mediaSubtype": "iec958", "iec958Codec": "PCM"}]}}},
	{"id": 42, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "analog"}, "params": {
		"Props": [{"device": "hw:0,0"}], "EnumFormat": [{"mediaSubtype": "raw"}]}}}
	]`))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][2][]string{
		"hdmi":   {{"PCM", "DTS", "AC3"}, {"PCM", "DTS", "AC3"}},
		"one":    {{}, {"PCM"}},
		"analog": {nil, nil},
	} {
		n, _ := g.NodeByName(name)
		if diff := cmp.Diff(want, [2][]string{n.IEC958Codecs, n.IEC958Offered}); diff != "" {
			t.Errorf("%s: [codecs offered] (-want +got):\n%s", name, diff)
		}
	}
}
