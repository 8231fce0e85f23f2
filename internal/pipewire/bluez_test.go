// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// speakerDump is a graph in pw-dump's shape with one Bluetooth speaker
// as the bluez5 plugin and WirePlumber describe it: the device (its codec
// choice in PropInfo, the codec it runs in Props, its output Route) and
// the A2DP sink node naming it by device.id, beside a client's stream
// node that claims the same address.
const speakerDump = `[
 {"id": 40, "type": "PipeWire:Interface:Device", "info": {
   "props": {"device.api": "bluez5", "api.bluez5.address": "a0:ab:51:33:b7:12", "device.name": "bluez_card.A0_AB_51_33_B7_12", "object.serial": 400},
   "params": {
     "PropInfo": [
       {"id": "latencyOffsetNsec", "type": 0},
       {"id": "bluetoothAudioCodec", "name": "Air codec", "type": {"default": 2, "alt1": 1, "alt2": 2, "alt3": 5, "alt4": 9},
        "labels": [1, "SBC", 2, "SBC-XQ", 5, "aptX", 9, "aptX-LL"]}
     ],
     "Props": [{"bluetoothAudioCodec": 2}],
     "Route": [{"index": 1, "direction": "Output", "device": 1, "name": "speaker-output",
       "props": {"mute": false, "channelVolumes": [0.5, 0.5]}}]
   }}},
 {"id": 41, "type": "PipeWire:Interface:Node", "info": {"state": "suspended", "props": {
   "node.name": "bluez_output.A0_AB_51_33_B7_12.1", "media.class": "Audio/Sink", "device.id": 40,
   "device.api": "bluez5", "api.bluez5.address": "A0:AB:51:33:B7:12", "api.bluez5.codec": "sbc_xq", "api.bluez5.profile": "a2dp-sink"}}},
 {"id": 42, "type": "PipeWire:Interface:Node", "info": {"props": {
   "node.name": "bluez_output.A0_AB_51_33_B7_12.1", "media.class": "Audio/Sink", "device.id": 99,
   "api.bluez5.address": "A0:AB:51:33:B7:12"}}}
]`

func TestSpeakerGraph(t *testing.T) {
	g, err := ParseDump([]byte(speakerDump))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Skipped) > 0 {
		t.Fatalf("skipped: %v", g.Skipped)
	}
	n, d, ok := g.SpeakerNode("A0:AB:51:33:B7:12")
	if !ok || n.ID != 41 || d.ID != 40 {
		t.Fatalf("SpeakerNode = %d, %d, %v; want node 41 of device 40", n.ID, d.ID, ok)
	}
	if d.Address != "A0:AB:51:33:B7:12" {
		t.Errorf("address %q, want upper case", d.Address)
	}
	want := []Codec{{1, "sbc"}, {2, "sbc_xq"}, {5, "aptx"}, {9, "aptx_ll"}}
	if diff := cmp.Diff(want, d.Codecs); diff != "" {
		t.Errorf("codecs (-want +got):\n%s", diff)
	}
	if d.Codec != 2 || d.CodecName(d.Codec) != "sbc_xq" || n.Props[PropBlueZCodec] != "sbc_xq" {
		t.Errorf("codec %d (%q), node's %q", d.Codec, d.CodecName(d.Codec), n.Props[PropBlueZCodec])
	}
	r, ok := d.OutputRoute()
	if !ok || r.Index != 1 || r.Device != 1 || r.Volume == nil || len(r.Volume.ChannelVolumes) != 2 {
		t.Errorf("output route %+v, %v", r, ok)
	}
	if _, _, ok := g.SpeakerNode("A0:AB:51:33:B7:13"); ok {
		t.Error("a speaker found for an address no device has")
	}
}

// TestSpeakerNodeNeedsItsDevice: a node that claims a speaker's address
// without belonging to its bluez5 device is not the speaker's node.
func TestSpeakerNodeNeedsItsDevice(t *testing.T) {
	dump := strings.Replace(speakerDump, `"device.id": 40,`, `"device.id": 99,`, 1)
	g, err := ParseDump([]byte(dump))
	if err != nil {
		t.Fatal(err)
	}
	if n, _, ok := g.SpeakerNode("A0:AB:51:33:B7:12"); ok {
		t.Fatalf("node %d taken for the speaker's", n.ID)
	}
	if _, ok := g.BlueZDevice("A0:AB:51:33:B7:12"); !ok {
		t.Fatal("the device itself is not found")
	}
}

func TestStreamFollowsDevices(t *testing.T) {
	s := NewStream()
	if _, err := s.Apply([]byte(speakerDump)); err != nil {
		t.Fatal(err)
	}
	// The codec switched: the node is rebuilt under a new id.
	g, err := s.Apply([]byte(`[{"id": 41, "info": null},
	 {"id": 43, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "bluez_output.A0_AB_51_33_B7_12.1",
	   "media.class": "Audio/Sink", "device.id": 40, "device.api": "bluez5", "api.bluez5.address": "A0:AB:51:33:B7:12", "api.bluez5.codec": "aptx"}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	n, _, ok := g.SpeakerNode("A0:AB:51:33:B7:12")
	if !ok || n.ID != 43 || n.Props[PropBlueZCodec] != "aptx" {
		t.Fatalf("after the rebuild: node %d codec %q, %v", n.ID, n.Props[PropBlueZCodec], ok)
	}
	g, _ = s.Apply([]byte(`[{"id": 40, "info": null}]`))
	if len(g.Devices) != 0 {
		t.Fatalf("a removed device is kept: %+v", g.Devices)
	}
}

func TestParseCodecsBadInput(t *testing.T) {
	for name, tc := range map[string]struct {
		entry    string
		want     []string
		problems int
	}{
		"another property": {`{"id": "volume", "type": {"default": 1}}`, nil, 0},
		"no label":         {`{"id": "bluetoothAudioCodec", "type": {"alt1": 1, "alt2": 2}, "labels": [1, "SBC"]}`, []string{"sbc"}, 1},
		"duplicate id":     {`{"id": "bluetoothAudioCodec", "type": {"alt1": 1, "alt2": 1}, "labels": [1, "SBC", 1, "AAC"]}`, []string{"sbc"}, 0},
		"duplicate name":   {`{"id": "bluetoothAudioCodec", "type": {"alt1": 1, "alt2": 3}, "labels": [1, "SBC", 3, "sbc"]}`, []string{"sbc"}, 0},
		"labels not list":  {`{"id": "bluetoothAudioCodec", "type": {"alt1": 1}, "labels": {"1": "SBC"}}`, nil, 1},
		"odd label":        {`{"id": "bluetoothAudioCodec", "type": {"alt1": 1, "alt2": 2}, "labels": [1, "S B C", 2, "AAC"]}`, []string{"aac"}, 1},
		"long label":       {`{"id": "bluetoothAudioCodec", "type": {"alt1": 1}, "labels": [1, "` + strings.Repeat("x", 10240) + `"]}`, nil, 1},
		"plain type":       {`{"id": "bluetoothAudioCodec", "type": 1, "labels": [1, "SBC"]}`, nil, 0},
	} {
		t.Run(name, func(t *testing.T) {
			codecs, _, problems := ParseCodecs(json.RawMessage(tc.entry))
			var got []string
			for _, c := range codecs {
				got = append(got, c.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" || len(problems) != tc.problems {
				t.Errorf("codecs (-want +got):\n%s\nproblems %v, want %d", diff, problems, tc.problems)
			}
		})
	}
}

// FuzzParseCodecs: whatever a device's PropInfo holds, the codec list is
// bounded, every name is spelt as a codec name and none repeats, and a
// device carrying the entry parses without failing the graph.
func FuzzParseCodecs(f *testing.F) {
	f.Add(`{"id": "bluetoothAudioCodec", "type": {"default": 2, "alt1": 1, "alt2": 2}, "labels": [1, "SBC", 2, "SBC-XQ"]}`)
	f.Add(`{"id": "bluetoothAudioCodec", "type": {"alt1": "x"}, "labels": [null, 1]}`)
	f.Add(`{"id": "bluetoothAudioCodec"}`)
	f.Fuzz(func(t *testing.T, entry string) {
		codecs, _, _ := ParseCodecs(json.RawMessage(entry))
		if len(codecs) > MaxCodecs {
			t.Fatalf("%d codecs", len(codecs))
		}
		seen := map[string]bool{}
		for _, c := range codecs {
			if !CodecNameValid(c.Name) || seen[c.Name] {
				t.Fatalf("codec %q invalid or repeated", c.Name)
			}
			seen[c.Name] = true
		}
		dump := `[{"id": 5, "type": "PipeWire:Interface:Device", "info": {"params": {"PropInfo": [` + entry + `]}}}]`
		if json.Valid([]byte(dump)) {
			if _, err := ParseDump([]byte(dump)); err != nil {
				t.Fatalf("a device's PropInfo failed the whole graph: %v", err)
			}
		}
	})
}
