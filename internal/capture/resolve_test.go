// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/captureapi"
	"github.com/liken-sh/operators/internal/pipewire"
)

// TestResolveSuspendedNode: a suspended sink that declares no channel
// count takes the one it offers (EnumFormat's default: all 64 of ALSA's
// null device), never stereo; one that neither declares nor offers one is
// a problem.
func TestResolveSuspendedNode(t *testing.T) {
	node := func(params string) string {
		return `[{"id": 29, "type": "PipeWire:Interface:Node", "info": {"state": "suspended", "props": {
			"node.name": "liken.audio.x", "media.class": "Audio/Sink", "liken.audio.card": 0, "liken.audio.pcm": 0,
			"liken.audio.output": "desk-x", "audio.rate": 44100}, "params": {` + params + `}}}]`
	}
	g, err := pipewire.ParseDump([]byte(node(`"EnumFormat": [{"mediaType": "audio", "mediaSubtype": "raw", "rate": 48000,
		"channels": {"default": 64, "min": 1, "max": 64}}]`)))
	if err != nil {
		t.Fatal(err)
	}
	tg, p := resolve(g, captureapi.Sinks, "desk-x")
	if p != nil || tg.rate != 44100 || tg.channels != 64 || !tg.monitor {
		t.Errorf("offered channels: %+v, %v", tg, p)
	}
	g, err = pipewire.ParseDump([]byte(node("")))
	if err != nil {
		t.Fatal(err)
	}
	if _, p := resolve(g, captureapi.Sinks, "desk-x"); p == nil || p.Status != 503 || !strings.Contains(p.Detail, "channel count") {
		t.Errorf("no channel count: %v", p)
	}
	g, err = pipewire.ParseDump([]byte(node(`"EnumFormat": [{"mediaType": "audio", "mediaSubtype": "raw", "rate": 48000,
		"channels": {"default": 65536, "min": 1, "max": 65536}}]`)))
	if err != nil {
		t.Fatal(err)
	}
	if _, p := resolve(g, captureapi.Sinks, "desk-x"); p == nil || p.Status != 503 || !strings.Contains(p.Detail, "65536 channels") {
		t.Errorf("past 64 channels (a WAV header's 16 bits overflow): %v", p)
	}
	if _, p := resolve(g, captureapi.Sources, "desk-x"); p == nil || p.Status != 404 {
		t.Errorf("the sink as a source: %v", p)
	}
}

// TestCheckLinks: the recorder's stream linked from the target is done
// and fine; linked from another node (WirePlumber's fallback when the
// target is not there) is a 500 wrong-target naming both; not linked yet
// is not done.
func TestCheckLinks(t *testing.T) {
	s := &session{stream: "audio-capture.1", t: target{node: pipewire.Node{ID: 30, Name: "liken.audio.x"}}}
	graph := func(from uint32) *pipewire.Graph {
		g := &pipewire.Graph{Nodes: []pipewire.Node{{ID: 30, Name: "liken.audio.x"}, {ID: 31, Name: "liken.audio.other"}, {ID: 48, Name: "audio-capture.1"}}}
		if from != 0 {
			g.Links = []pipewire.Link{{ID: 57, OutputNode: from, InputNode: 48}}
		}
		return g
	}
	if p, done := s.checkLinks(graph(30)); !done || p != nil {
		t.Errorf("linked from the target: %v, %v", done, p)
	}
	if p, done := s.checkLinks(graph(31)); !done || p == nil || p.Status != 500 || !p.OfType(captureapi.ProblemWrongTarget) ||
		!strings.Contains(p.Detail, "liken.audio.other") || !strings.Contains(p.Detail, "liken.audio.x") {
		t.Errorf("linked from another node: %v, %+v", done, p)
	}
	if _, done := s.checkLinks(graph(0)); done {
		t.Error("not linked yet, but done")
	}
}
