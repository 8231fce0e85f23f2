// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/captureapi"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/fixtures"
)

// FuzzConfigFromEnv: the container's environment is the manifest's
// (deploy/audio/operator.yaml) and whoever edits it. Whatever it holds,
// an accepted Config has a tap count from 1 to MaxTaps and absolute
// directories, and a refusal names the variable at fault.
func FuzzConfigFromEnv(f *testing.F) {
	f.Add(":9201", "4", "/var/run/audio-capture-tls", "/var/run/audio.liken.sh", "")
	f.Add("", "", "", "", "/run/user/0")
	f.Add("", " 65 ", "relative", "run", "")
	f.Add("", "-1", "", "", "")
	f.Fuzz(func(t *testing.T, address, taps, tlsDir, pwDir, xdgDir string) {
		env := map[string]string{EnvAddress: address, EnvTaps: taps, EnvTLSDir: tlsDir,
			EnvPipeWireDir: pwDir, EnvXDGDir: xdgDir, EnvNamespace: "liken-system"}
		c, err := ConfigFromEnv(func(k string) string { return env[k] })
		if err != nil {
			if !strings.Contains(err.Error(), "CAPTURE_") && !strings.Contains(err.Error(), "DIR") {
				t.Fatalf("error names no variable: %v", err)
			}
			return
		}
		if c.Taps < 1 || c.Taps > MaxTaps || !strings.HasPrefix(c.TLSDir, "/") || !strings.HasPrefix(c.Remote.RuntimeDir, "/") || c.Address == "" {
			t.Fatalf("accepted %+v", c)
		}
	})
}

// FuzzResolve: the node a tap records comes from pw-dump, whose
// properties anyone on PipeWire's socket may set. Whatever the dump
// holds, a resolved target has a positive rate and channel count, and
// its positions, when given, are one per channel.
func FuzzResolve(f *testing.F) {
	// A real machine's dump (testdata/fixtures/README.md): its nodes are
	// not this project's, so nothing resolves, but every node parses.
	f.Add(fixtures.Read(f, "pwdump", "voxpipe-tests-data-pw-dump.json"), "alsa_output.usb-Kingston_HyperX_Virtual_Surround_Sound_00000000-00.analog-stereo", false)
	f.Add([]byte(`[{"id": 29, "type": "PipeWire:Interface:Node", "info": {"state": "suspended", "props": {
		"node.name": "liken.audio.x", "media.class": "Audio/Sink", "liken.audio.card": 0, "liken.audio.pcm": 0,
		"liken.audio.output": "desk-x", "audio.rate": 44100}, "params": {"EnumFormat": [{"mediaType": "audio",
		"mediaSubtype": "raw", "rate": 48000, "channels": {"default": 64, "min": 1, "max": 64}}]}}}]`), "desk-x", false)
	f.Add([]byte(`[{"id": 30, "type": "PipeWire:Interface:Node", "info": {"state": "running", "props": {
		"node.name": "liken.audio.y", "media.class": "Audio/Source", "liken.audio.card": 1, "liken.audio.pcm": 0,
		"liken.audio.output": "mic", "audio.channels": "-2", "audio.position": "[FL,FR]"}, "params": {"Format": [{"mediaType": "audio",
		"mediaSubtype": "raw", "format": "S16LE", "rate": 48000, "channels": 2, "position": ["FL", "FR"]}]}}}]`), "mic", true)
	f.Fuzz(func(t *testing.T, dump []byte, name string, source bool) {
		g, err := pipewire.ParseDump(dump)
		if err != nil {
			return
		}
		res := captureapi.Sinks
		if source {
			res = captureapi.Sources
		}
		tg, p := resolve(g, res, name)
		if p != nil {
			if p.Status < 400 || p.Detail == "" {
				t.Fatalf("problem %+v", p)
			}
			return
		}
		if tg.rate <= 0 || tg.channels <= 0 || tg.channels > maxChannels || (tg.position != nil && len(tg.position) != tg.channels) {
			t.Fatalf("resolved rate %d, %d channels, positions %q", tg.rate, tg.channels, tg.position)
		}
	})
}
