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
