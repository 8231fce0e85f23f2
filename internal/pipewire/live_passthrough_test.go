// SPDX-License-Identifier: Apache-2.0

package pipewire_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/child"
	"github.com/liken-sh/operators/test/pwtest"
)

// iec61937AC3 is the start of an IEC 61937 AC-3 burst as ALSA receives it
// in 16-bit little-endian frames: Pa = 0xF872, Pb = 0x4E1F, Pc = 0x0001.
var iec61937AC3 = []byte{0x72, 0xF8, 0x1F, 0x4E, 0x01, 0x00}

// An IEC 958 AC-3 stream played to a node that takes AC-3 reaches ALSA
// as it was sent, bursts and all: passed through, not decoded or
// converted. To a node that takes PCM alone the same stream never runs
// and nothing reaches ALSA.
func TestLivePassthroughReachesALSA(t *testing.T) {
	file := filepath.Join(t.TempDir(), "alsa.raw")
	hdmi := pwtest.IEC958FileOutput(0, 3, "liken.audio.card0-pcm3")
	d := pwtest.New(t, pwtest.Options{Outputs: []pipewire.Output{hdmi}, ALSAConfig: pwtest.IEC958FileConfig(file)})
	ctx := ctxFor(t, 2*time.Minute)
	player := child.BuildCommand(t, "github.com/liken-sh/operators/test/pwtest/iec958play")
	r := d.Remote()
	g, _ := pollGraph(t, 30*time.Second, func() (*pipewire.Graph, error) { return r.Dump(ctx) }, func(g *pipewire.Graph) bool {
		_, ok := g.NodeByName(hdmi.Name)
		return ok
	})
	n, _ := g.NodeByName(hdmi.Name)

	out, err := d.Command(ctx, player, hdmi.Name, "1").CombinedOutput()
	t.Logf("to a node of PCM alone: %v\n%s", err, out)
	if err == nil {
		t.Fatal("an AC-3 stream played to a node that takes PCM alone")
	}

	if err := r.SetIEC958Codecs(ctx, n.ID, []string{pipewire.IEC958AC3}); err != nil {
		t.Fatal(err)
	}
	pollGraph(t, 30*time.Second, func() (*pipewire.Graph, error) { return r.Dump(ctx) }, func(g *pipewire.Graph) bool {
		n, _ := g.NodeByName(hdmi.Name)
		return len(n.IEC958Offered) == 2
	})
	out, err = d.Command(ctx, player, hdmi.Name, "2").CombinedOutput()
	t.Logf("to a node that takes AC-3: %v\n%s", err, out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ALSA received %d bytes, %d bursts", len(got), bytes.Count(got, iec61937AC3))
	if bytes.Count(got, iec61937AC3) == 0 {
		t.Fatalf("no IEC 61937 AC-3 preamble in what ALSA received (%d bytes)", len(got))
	}
}
