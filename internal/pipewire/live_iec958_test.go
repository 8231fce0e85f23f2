// SPDX-License-Identifier: Apache-2.0

package pipewire_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/pwtest"
)

// sameSet reports whether a and b hold the same names, in any order.
func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// The IEC 958 codecs of a real PipeWire's ALSA sink, on an ALSA PCM named
// like ALSA's hdmi PCMs (pwtest.IEC958FileOutput) beside one on the null
// device: only the first takes them; a write is shown at once, on a node
// that never ran, with PCM added; EnumFormat offers what the PCM can
// carry; writing nothing takes them away again.
func TestLiveIEC958Codecs(t *testing.T) {
	hdmi := pwtest.IEC958FileOutput(0, 3, "liken.audio.card0-pcm3")
	null := pwtest.NullOutput(0, 7, "liken.audio.card0-pcm7")
	d := pwtest.New(t, pwtest.Options{Outputs: pwtest.LikeHardware([]pipewire.Output{hdmi, null}),
		ALSAConfig: pwtest.IEC958FileConfig(filepath.Join(t.TempDir(), "alsa.raw"))})
	ctx := ctxFor(t, 2*time.Minute)
	r := d.Remote()
	dump := func() (*pipewire.Graph, error) { return r.Dump(ctx) }
	codecsAre := func(name string, codecs, offered []string) func(*pipewire.Graph) bool {
		return func(g *pipewire.Graph) bool {
			n, ok := g.NodeByName(name)
			return ok && sameSet(n.IEC958Codecs, codecs) && sameSet(n.IEC958Offered, offered) && n.IEC958Codecs != nil
		}
	}
	g, _ := pollGraph(t, 30*time.Second, dump, codecsAre(hdmi.Name, []string{"PCM"}, []string{"PCM"}))
	hdmiNode, _ := g.NodeByName(hdmi.Name)
	nullNode, ok := g.NodeByName(null.Name)
	if !ok || nullNode.IEC958Codecs != nil || nullNode.IEC958Offered != nil {
		t.Fatalf("the null device's node takes IEC 958: %+v", nullNode)
	}

	// Every codec the claims may name, on a node that has never run. The
	// node's audio.rate of 48 kHz keeps E-AC-3 out of what it offers.
	asked := []string{pipewire.IEC958AC3, pipewire.IEC958EAC3, pipewire.IEC958DTS, pipewire.IEC958DTSHD, pipewire.IEC958TrueHD}
	start := time.Now()
	if err := r.SetIEC958Codecs(ctx, hdmiNode.ID, asked); err != nil {
		t.Fatal(err)
	}
	wrote := time.Since(start)
	_, took := pollGraph(t, 30*time.Second, dump, codecsAre(hdmi.Name, append([]string{"PCM"}, asked...),
		[]string{"PCM", "AC3", "DTS", "DTS-HD", "TrueHD"}))
	t.Logf("pw-cli wrote the IEC 958 codecs in %v; pw-dump showed them %v later", wrote, took)

	// A shorter list replaces the longer one; nil leaves PCM alone.
	if err := r.SetIEC958Codecs(ctx, hdmiNode.ID, []string{pipewire.IEC958AC3}); err != nil {
		t.Fatal(err)
	}
	pollGraph(t, 30*time.Second, dump, codecsAre(hdmi.Name, []string{"PCM", "AC3"}, []string{"PCM", "AC3"}))
	if err := r.SetIEC958Codecs(ctx, hdmiNode.ID, nil); err != nil {
		t.Fatal(err)
	}
	pollGraph(t, 30*time.Second, dump, codecsAre(hdmi.Name, []string{"PCM"}, []string{"PCM"}))

	// The null node takes the write without an error and ignores it.
	if err := r.SetIEC958Codecs(ctx, nullNode.ID, []string{pipewire.IEC958AC3}); err != nil {
		t.Fatal(err)
	}
	g, err := r.Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := g.NodeByName(null.Name); n.IEC958Codecs != nil || n.IEC958Offered != nil {
		t.Fatalf("the null node took IEC 958 codecs: %v offered %v", n.IEC958Codecs, n.IEC958Offered)
	}
	if err := r.SetIEC958Codecs(ctx, 4000, []string{pipewire.IEC958AC3}); !errors.Is(err, pipewire.ErrNoSuchObject) {
		t.Fatalf("a write to no node: %v, want ErrNoSuchObject", err)
	}
	if err := r.SetIEC958Codecs(ctx, hdmiNode.ID, []string{"ac3"}); err == nil || !strings.Contains(err.Error(), "not one of PipeWire's") {
		t.Fatalf("a lower-case name: %v", err)
	}
}
