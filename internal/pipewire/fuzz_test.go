// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzDeclarationRoundTrip: every output set the validator accepts is
// written and read back unchanged (after the writer's sorting and its
// default ALSA path).
func FuzzDeclarationRoundTrip(f *testing.F) {
	f.Add(0, 3, false, "liken.audio.card0-pcm3", "HDMI 0", `TV "x" {y} \ z`, "kitchen-hdmi-0", "", 0, 2, "FL,FR", false, "node.nick", "ü\n")
	f.Add(1, 0, true, "c", "", "", "", "null", 48000, 0, "", true, "", "")
	f.Add(2, 1, false, "n#1", "USB\tAudio", "\u2028", "#", "hw:2,1", 44100, 1, "MONO", false, "a.b-c_d", "[ 1 2 ]")
	f.Fuzz(func(t *testing.T, card, device int, capture bool, name, pcmID, desc, output, path string,
		rate, channels int, positions string, chmap bool, extraKey, extraValue string) {
		o := Output{Card: card, Device: device, Name: name, PCMID: pcmID, Description: desc, Output: output,
			Path: path, Rate: rate, Channels: channels, UseChannelMap: chmap}
		if capture {
			o.Direction = Capture
		}
		if positions != "" {
			o.Positions = strings.Split(positions, ",")
		}
		if extraKey != "" {
			o.Extra = map[string]string{extraKey: extraValue}
		}
		second := Output{Card: card + 1, Device: 0, Name: name + "-2"}
		if card+1 < 0 { // overflow
			return
		}
		in := []Output{o, second}
		if CheckOutputs(in) != nil {
			if _, err := MarshalDeclaration(in); err == nil {
				t.Fatal("a set CheckOutputs refuses was written")
			}
			return
		}
		data, err := MarshalDeclaration(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := ParseDeclaration(data)
		if err != nil {
			t.Fatalf("%v\n%s", err, data)
		}
		want := sortOutputs(in)
		for i := range want {
			if want[i].Path == DefaultALSAPath(want[i].Card, want[i].Device) {
				want[i].Path = ""
			}
		}
		if !reflect.DeepEqual(out, want) {
			t.Fatalf("read back\n%#v\nwant\n%#v\n%s", out, want, data)
		}
	})
}

// FuzzParseDeclaration: any text either fails with ErrNotDeclaration or
// parses to outputs that write back to text that parses to the same.
func FuzzParseDeclaration(f *testing.F) {
	good, _ := MarshalDeclaration(sampleOutputs())
	f.Add(good)
	f.Add([]byte("context.objects = []"))
	f.Add([]byte("# x\ncontext.objects: [ {\"factory\": \"adapter\", \"args\": {}} ] # y"))
	f.Fuzz(func(t *testing.T, data []byte) {
		outputs, err := ParseDeclaration(data)
		if err != nil {
			return
		}
		again, err := MarshalDeclaration(outputs)
		if err != nil {
			t.Fatalf("parsed outputs do not write: %v", err)
		}
		back, err := ParseDeclaration(again)
		if err != nil || !reflect.DeepEqual(back, sortOutputs(outputs)) {
			t.Fatalf("rewrite read back as %+v, %v; want %+v", back, err, outputs)
		}
	})
}

// FuzzParseDump: pw-dump's output, or anything else, either fails
// (wrapping ErrBadDump, with no graph) or gives a graph whose nodes and
// links are sorted with unique ids; text that is not valid JSON as a
// whole reads only with at least one element skipped.
func FuzzParseDump(f *testing.F) {
	for _, p := range []string{fixturePWDump, "testdata/pw-dump-playing.json"} {
		f.Add(readFile(f, p))
	}
	f.Add([]byte(`[{"id": 1, "type": "PipeWire:Interface:Node", "info": {"props": {"liken.audio.card": 0, "liken.audio.pcm": "3"},
		"params": {"Format": [{"rate": 48000, "channels": 2, "position": ["FL", "FR"]}], "Props": [{"volume": 0.5, "channelVolumes": [1, 0]}]}}}]`))
	f.Add([]byte(`[{"id": 1, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "n"}, "params": {"Props": [{"iec958Codecs": ["PCM", 3, "AC3"]}],
		"EnumFormat": [{"mediaSubtype": "raw"}, {"mediaSubtype": "iec958", "iec958Codec": {"default": "PCM", "alt1": "PCM", "alt2": "DTS"}}]}}}]`))
	f.Add([]byte(`[{"id": 2, "type": "PipeWire:Interface:Link", "info": {"output-node-id": 1, "input-node-id": 3, "state": "active"}}]`))
	f.Add([]byte(`[{"id": 1, "info": null}]`))
	f.Add([]byte(`[{"id": 1 2}, {"id": 2, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "x\"]"}}}, 7]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ParseDump(data)
		if err != nil {
			if g != nil {
				t.Fatal("graph returned with an error")
			}
			if !errors.Is(err, ErrBadDump) {
				t.Fatalf("error %v does not wrap ErrBadDump", err)
			}
			return
		}
		if !json.Valid(bytes.TrimSpace(data)) && len(g.Skipped) == 0 {
			t.Fatal("invalid JSON parsed with nothing skipped")
		}
		checkGraph(t, g)
	})
}

// FuzzReadStream: monitor output, or anything else, never panics, and
// every snapshot is a consistent graph.
func FuzzReadStream(f *testing.F) {
	rec := readFile(f, "testdata/pw-dump-monitor.json")
	f.Add(rec[:min(len(rec), 4000)])
	f.Add(rec[bytes.LastIndex(rec, []byte("\n[")):])
	f.Add([]byte("[{\"id\": 1, \"type\": \"PipeWire:Interface:Node\"}]\n[{\"id\": 1, \"info\": null}]\n[]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = ReadStream(bytes.NewReader(data), func(g *Graph) error {
			checkGraph(t, g)
			return nil
		})
	})
}

func checkGraph(t *testing.T, g *Graph) {
	t.Helper()
	if !slices.IsSortedFunc(g.Nodes, func(a, b Node) int { return cmpID(a.ID, b.ID) }) ||
		!slices.IsSortedFunc(g.Links, func(a, b Link) int { return cmpID(a.ID, b.ID) }) {
		t.Fatal("not sorted")
	}
	ids := map[uint32]bool{}
	for _, n := range g.Nodes {
		ids[n.ID] = true
	}
	for _, l := range g.Links {
		if ids[l.ID] {
			t.Fatalf("id %d is a node and a link", l.ID)
		}
		ids[l.ID] = true
	}
	if len(ids) != len(g.Nodes)+len(g.Links) || len(ids) > g.Objects {
		t.Fatalf("%d nodes, %d links, %d objects", len(g.Nodes), len(g.Links), g.Objects)
	}
	// The readings built on a graph hold for any graph.
	names := map[string]bool{}
	for _, n := range g.Nodes {
		names[n.Name] = true
		if c := n.VolumeChannels(); c < 1 || c > MaxChannels {
			t.Fatalf("node %d: %d volume channels", n.ID, c)
		}
		if len(n.IEC958Offered) != len(slices.Compact(slices.Sorted(slices.Values(n.IEC958Offered)))) {
			t.Fatalf("node %d: an offered IEC 958 codec named twice in %v", n.ID, n.IEC958Offered)
		}
		o := n.Observed()
		if o.Volume != nil && *o.Volume < 0 || n.Volume == nil && o != (Observed{}) {
			t.Fatalf("node %d: observed %+v from %+v", n.ID, o, n.Volume)
		}
		if n.Volume != nil && o.Stale == n.HasRun {
			t.Fatalf("node %d: stale %v with HasRun %v", n.ID, o.Stale, n.HasRun)
		}
	}
	linked := g.LinkedNodes(names)
	if !slices.IsSorted(linked) || len(slices.Compact(slices.Clone(linked))) != len(linked) {
		t.Fatalf("linked nodes %q not sorted and unique", linked)
	}
}
