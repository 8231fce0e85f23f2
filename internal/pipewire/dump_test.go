// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const fixturePWDump = "../../testdata/fixtures/pwdump/voxpipe-tests-data-pw-dump.json"

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The shared fixture: a real machine's dump reduced to node props, ids
// not sorted (33 after 62), no state or params, no trailing newline.
func TestParseDumpFixture(t *testing.T) {
	g, err := ParseDump(readFile(t, fixturePWDump))
	if err != nil {
		t.Fatal(err)
	}
	if g.Objects != 14 || len(g.Nodes) != 14 || len(g.Links) != 0 {
		t.Fatalf("%d objects, %d nodes, %d links; want 14, 14, 0", g.Objects, len(g.Nodes), len(g.Links))
	}
	var ids []uint32
	for _, n := range g.Nodes {
		ids = append(ids, n.ID)
		if n.State != "" || n.Format != nil || n.Volume != nil || n.Declared != nil {
			t.Errorf("node %d: state %q format %v volume %v declared %v from a dump with none", n.ID, n.State, n.Format, n.Volume, n.Declared)
		}
	}
	if want := []uint32{29, 30, 33, 37, 50, 56, 57, 58, 59, 60, 61, 62, 95, 98}; !reflect.DeepEqual(ids, want) {
		t.Errorf("ids %v, want %v", ids, want)
	}
	var sinks []string
	for _, n := range g.NodesOfClass(MediaClassSink) {
		sinks = append(sinks, n.Name)
	}
	want := []string{
		"alsa_output.usb-Kingston_HyperX_Virtual_Surround_Sound_00000000-00.analog-stereo",
		"alsa_output.usb-Generic_USB_Audio-00.HiFi__hw_Audio_2__sink",
		"alsa_output.usb-Generic_USB_Audio-00.HiFi__hw_Audio_1__sink",
		"alsa_output.usb-Generic_USB_Audio-00.HiFi__hw_Audio__sink",
	}
	if diff := cmp.Diff(sinks, want); diff != "" {
		t.Errorf("sinks (-sinks +want):\n%s", diff)
	}
	n, ok := g.Node(33)
	if !ok || n.Name != "alsa_input.usb-046d_Brio_100_2605AP6LZZJ8-02.mono-fallback" || n.MediaClass != MediaClassSource || n.Description != "Brio 100 Mono" {
		t.Errorf("node 33: %+v", n)
	}
	if _, ok := g.Node(31); ok {
		t.Error("node 31 found in a dump without it")
	}
	if n, ok := g.NodeByName("Firefox"); !ok || n.ID != 95 || n.MediaClass != "Stream/Output/Audio" {
		t.Errorf("Firefox: %+v", n)
	}
}

// A dump recorded here while a tone played: states, formats, volumes,
// links and our private properties as pw-dump prints them (numbers).
func TestParseDumpRecordedPlaying(t *testing.T) {
	g, err := ParseDump(readFile(t, "testdata/pw-dump-playing.json"))
	if err != nil {
		t.Fatal(err)
	}
	if g.Objects != 61 {
		t.Errorf("%d objects, want 61", g.Objects)
	}
	sink, ok := g.NodeByName("liken.audio.card0-pcm3")
	if !ok {
		t.Fatal("card0-pcm3 missing")
	}
	if sink.ID != 30 || sink.State != NodeStateRunning || sink.MediaClass != MediaClassSink {
		t.Errorf("card0-pcm3: id %d state %q class %q", sink.ID, sink.State, sink.MediaClass)
	}
	if want := (Declared{Card: 0, PCM: 3, PCMID: "HDMI 0", Output: "kitchen-pci-0000-00-1f-3-hdmi-0"}); sink.Declared == nil || *sink.Declared != want {
		t.Errorf("declared %+v, want %+v", sink.Declared, want)
	}
	if sink.Props[PropCard] != "0" || sink.Props[PropALSAPath] != "null" || sink.Props["node.driver"] != "true" {
		t.Errorf("props as text: card %q path %q driver %q", sink.Props[PropCard], sink.Props[PropALSAPath], sink.Props["node.driver"])
	}
	if want := (&Format{MediaSubtype: "raw", SampleFormat: "F32P", Rate: 48000, Channels: 2, Positions: []string{"FL", "FR"}}); !reflect.DeepEqual(sink.Format, want) {
		t.Errorf("format %+v, want %+v", sink.Format, want)
	}
	if v := sink.Volume; v == nil || v.Volume == nil || *v.Volume != 1 || v.Mute == nil || *v.Mute || !reflect.DeepEqual(v.ChannelVolumes, []float64{1, 1}) {
		t.Errorf("volume %+v", sink.Volume)
	}
	play, ok := g.NodeByName("pw-play")
	if !ok || play.ID != 58 || play.Declared != nil || play.Format == nil || play.Format.SampleFormat != "S16LE" {
		t.Errorf("pw-play: %+v", play)
	}
	links := g.LinksOf(sink.ID)
	if len(links) != 2 {
		t.Fatalf("links of card0-pcm3: %+v", links)
	}
	for _, l := range links {
		if l.OutputNode != 58 || l.InputNode != 30 || l.State != "active" || l.OutputPort == 0 || l.InputPort == 0 {
			t.Errorf("link %+v, want pw-play (58) to card0-pcm3 (30), active", l)
		}
	}
	if ls := g.LinksOf(31); len(ls) != 2 || ls[0].ID != 55 || ls[0].InputNode != 50 {
		t.Errorf("links of card1-pcm0 %+v, want 55 and 56 to pw-record (50)", ls)
	}
}

func TestParseDumpRefuses(t *testing.T) {
	cases := map[string]struct{ text, want string }{
		"empty":        {"", "empty"},
		"blank":        {" \n\t", "empty"},
		"null":         {"null", "not a JSON array"},
		"object":       {`{"id": 1}`, "not a JSON array"},
		"open":         {"[", "unexpected end"},
		"open element": {`[{"id": 1`, "unexpected end"},
		"open string":  {`[{"id": "1]`, "unexpected end"},
		"trailing":     {"[] []", "invalid character"},
		"garbage":      {"[}", "invalid character"},
		"empty slot":   {`[{"id": 1, "type": "x"},,]`, "invalid character"},
		"bad nesting":  {`[{"id": 1], {"id": 2}]`, "invalid character"},
	}
	for name, c := range cases {
		g, err := ParseDump([]byte(c.text))
		if err == nil || !errors.Is(err, ErrBadDump) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrBadDump with %q", name, err, c.want)
		}
		if g != nil {
			t.Errorf("%s: a graph came back with the error", name)
		}
	}
}

// One element that cannot be read is left out with its reason, and every
// other object of the dump is read.
func TestParseDumpSkips(t *testing.T) {
	node := func(info string) string {
		return `{"id": 1, "type": "PipeWire:Interface:Node", "info": ` + info + `}`
	}
	good := `{"id": 40, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "kept", "object.serial": 77}}}`
	cases := map[string]struct{ elem, want string }{
		"number element":    {"1", "object 0: not a JSON object"},
		"null element":      {"null", "object 0: not a JSON object"},
		"no id":             {`{"type": "x"}`, "object 0: no id"},
		"negative id":       {`{"id": -1, "type": "x"}`, "cannot unmarshal number -1"},
		"big id":            {`{"id": 4294967296, "type": "x"}`, "cannot unmarshal number 4294967296"},
		"float id":          {`{"id": 1.5, "type": "x"}`, "cannot unmarshal number 1.5"},
		"string id":         {`{"id": "1", "type": "x"}`, "cannot unmarshal string"},
		"no type":           {`{"id": 1, "info": {}}`, "id 1 has no type"},
		"removal":           {`{"id": 1, "info": null}`, "is a removal"},
		"info string":       {node(`"x"`), "info is not an object"},
		"props array":       {node(`{"props": []}`), "cannot unmarshal array"},
		"state number":      {node(`{"state": 3}`), "cannot unmarshal number"},
		"params object":     {node(`{"params": {"Format": {}}}`), "cannot unmarshal object"},
		"link node":         {`{"id": 2, "type": "PipeWire:Interface:Link", "info": {"output-node-id": "a"}}`, "link 2"},
		"invalid utf8 text": {"\"\xff\"", "not a JSON object"},
		"no value":          {`{"id": 1, "type": }`, "object 0"},
		"oversize":          {`{"id": 1, "type": "PipeWire:Interface:Node", "info": {"props": {"x": "` + strings.Repeat("a", MaxObjectBytes) + `"}}}`, "past the bound"},
	}
	for name, c := range cases {
		g, err := ParseDump([]byte("[" + c.elem + ", " + good + "]"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(g.Skipped) != 1 || !strings.Contains(g.Skipped[0].Error(), c.want) {
			t.Errorf("%s: skipped %v, want one with %q", name, g.Skipped, c.want)
		}
		if n, ok := g.NodeByName("kept"); !ok || n.Serial != 77 {
			t.Errorf("%s: the good node was not kept whole: %+v", name, g.Nodes)
		}
	}
	g, err := ParseDump([]byte(`[{"id": 1, "type": "x"}, {"id": 1, "type": "y"}]`))
	if err != nil || len(g.Skipped) != 1 || !strings.Contains(g.Skipped[0].Error(), "id 1 appears twice") || g.Objects != 1 {
		t.Errorf("duplicate: %+v, %v", g, err)
	}
}

// A dump longer than MaxBatchBytes is refused without being held whole.
func TestParseDumpBounded(t *testing.T) {
	elem := `{"id": 1, "type": "PipeWire:Interface:Port", "info": {"props": {"x": "` + strings.Repeat("a", 1<<19) + `"}}}`
	var b strings.Builder
	b.WriteString("[")
	for i := 0; b.Len() <= MaxBatchBytes; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(elem)
	}
	b.WriteString("]")
	if _, err := ParseDump([]byte(b.String())); !errors.Is(err, ErrBadDump) || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a %d-byte dump: %v", b.Len(), err)
	}
}

// Every proper prefix of a real dump is a failed read: a dump cut short
// never yields a graph with part of the objects.
func TestParseDumpTruncated(t *testing.T) {
	data := readFile(t, "testdata/pw-dump-playing.json")
	end := len(strings.TrimRight(string(data), " \n"))
	for n := 0; n < end; n += 97 {
		if g, err := ParseDump(data[:n]); err == nil {
			t.Fatalf("a dump cut at %d of %d bytes read as %d objects", n, len(data), g.Objects)
		}
	}
	if _, err := ParseDump(data[:end-1]); err == nil {
		t.Error("a dump missing its closing bracket was read")
	}
}

func TestParseDumpTolerates(t *testing.T) {
	text := `[
	 {"id": 7, "type": "PipeWire:Interface:Node"},
	 {"id": 3, "type": "PipeWire:Interface:Node", "info": null},
	 {"id": 5, "type": "PipeWire:Interface:Node", "info": {"props": null, "params": null, "state": null, "error": null}},
	 {"id": 9, "type": "PipeWire:Interface:Node", "info": {"state": "error", "error": "can't open", "props": {
	   "node.name": "n", "liken.audio.card": "2", "liken.audio.pcm": 0, "b": false, "x": null, "o": {"a": [1, 2]}, "f": 1.500000},
	   "params": {"Format": [{"rate": {"default": 48000}, "channels": "two", "position": 5}], "Props": [{"params": []}, {"mute": true}]}}},
	 {"id": 4, "type": "PipeWire:Interface:Metadata", "props": {"metadata.name": "default"}, "metadata": []},
	 {"id": 6, "type": "PipeWire:Interface:Link", "info": {"output-node-id": 9, "input-node-id": 7}}
	]`
	g, err := ParseDump([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if g.Objects != 6 || len(g.Nodes) != 4 || len(g.Links) != 1 {
		t.Fatalf("%d objects, %d nodes, %d links", g.Objects, len(g.Nodes), len(g.Links))
	}
	n, _ := g.Node(9)
	if n.State != NodeStateError || n.Error != "can't open" || n.Name != "n" {
		t.Errorf("node 9: %+v", n)
	}
	want := map[string]string{"node.name": "n", "liken.audio.card": "2", "liken.audio.pcm": "0", "b": "false", "o": `{"a":[1,2]}`, "f": "1.500000"}
	if diff := cmp.Diff(n.Props, want); diff != "" {
		t.Errorf("props (-n.Props +want):\n%s", diff)
	}
	if n.Declared == nil || n.Declared.Card != 2 || n.Declared.PCM != 0 {
		t.Errorf("declared %+v", n.Declared)
	}
	if n.Format == nil || n.Format.Rate != 0 || n.Format.Channels != 0 || n.Format.Positions != nil {
		t.Errorf("format with odd fields: %+v", n.Format)
	}
	if n.Volume == nil || n.Volume.Mute == nil || !*n.Volume.Mute || n.Volume.Volume != nil {
		t.Errorf("volume from the second Props entry: %+v", n.Volume)
	}
	if l := g.Links[0]; l.OutputNode != 9 || l.InputNode != 7 || l.State != "" {
		t.Errorf("link %+v", l)
	}
	empty, err := ParseDump([]byte("[]"))
	if err != nil || empty.Objects != 0 {
		t.Errorf("[]: %+v, %v", empty, err)
	}
}

func TestGraphDeclaredNode(t *testing.T) {
	g, err := ParseDump(readFile(t, "testdata/pw-dump-playing.json"))
	if err != nil {
		t.Fatal(err)
	}
	n, ok := g.DeclaredNode(PCM{Card: 1, Device: 0})
	if !ok || n.Name != "liken.audio.card1-pcm0" || !g.Linked(n.ID) {
		t.Errorf("card 1 PCM 0: %+v %v, want liken.audio.card1-pcm0, linked", n.Name, ok)
	}
	if _, ok := g.DeclaredNode(PCM{Card: 1, Device: 0, Direction: Capture}); ok {
		t.Error("a capture node found where only sinks are declared")
	}
	if _, ok := g.DeclaredNode(PCM{Card: 0, Device: 7}); ok {
		t.Error("card 0 PCM 7 found")
	}
	if d, _ := g.NodeByName("Dummy-Driver"); g.Linked(d.ID) {
		t.Error("Dummy-Driver linked")
	}
	// Two nodes claiming one PCM: the name that sorts first, whatever
	// the ids.
	two, err := ParseDump([]byte(`[
	 {"id": 5, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "z", "media.class": "Audio/Sink", "liken.audio.card": 0, "liken.audio.pcm": 3}}},
	 {"id": 9, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "b", "media.class": "Audio/Sink", "liken.audio.card": 0, "liken.audio.pcm": 3}}},
	 {"id": 7, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "a", "media.class": "Audio/Source", "liken.audio.card": 0, "liken.audio.pcm": 3}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := two.DeclaredNode(PCM{Card: 0, Device: 3}); n.ID != 9 {
		t.Errorf("tie: node %d (%s), want 9 (b)", n.ID, n.Name)
	}
	if n, _ := two.DeclaredNode(PCM{Card: 0, Device: 3, Direction: Capture}); n.ID != 7 {
		t.Errorf("capture: node %d, want 7", n.ID)
	}
}

func BenchmarkParseDump(b *testing.B) {
	data := readFile(b, "testdata/pw-dump-playing.json")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseDump(data); err != nil {
			b.Fatal(err)
		}
	}
}

// One monitor batch (a node's state change, printed whole) applied to a
// graph the size of the recorded one, snapshot included.
func BenchmarkStreamBatch(b *testing.B) {
	s := NewStream()
	if _, err := s.Apply(readFile(b, "testdata/pw-dump-playing.json")); err != nil {
		b.Fatal(err)
	}
	batch := []byte(`[{"id": 30, "type": "PipeWire:Interface:Node", "info": {"state": "idle", "props": {"node.name": "liken.audio.card0-pcm3", "media.class": "Audio/Sink", "liken.audio.card": 0, "liken.audio.pcm": 3}}}]`)
	for b.Loop() {
		if _, err := s.Apply(batch); err != nil {
			b.Fatal(err)
		}
	}
}
