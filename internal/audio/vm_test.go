// SPDX-License-Identifier: Apache-2.0

//go:build vmtier

package audio

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/vm/guest"
)

// The VM tier's test (test/vm): declare against the real /dev/snd of a
// kernel with three cards writes a declaration for exactly the PCM nodes
// there, playback as sinks and capture as sources, each named by its
// card's sysfs identity.
func TestVMDeclareRealCards(t *testing.T) {
	if err := guest.LoadSoundCards(); err != nil {
		t.Fatal(err)
	}
	nodes, err := alsa.ScanDevSnd(alsa.DevSndRoot)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	playback := 0
	for _, p := range nodes.PCMs {
		want = append(want, fmt.Sprintf("hw:%d,%d%c", p.Card, p.Device, p.Stream.Suffix()))
		if p.Stream == alsa.Playback {
			playback++
		}
	}
	if playback < guest.SoundCards {
		t.Fatalf("/dev/snd has PCMs %q, want a playback one per card at least", want)
	}

	res, err := Declare(DeclareConfig{
		Hardware: Hardware{DevSnd: alsa.DevSndRoot},
		Node:     "vm", PipeWireDir: t.TempDir(), WirePlumberDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Problems {
		t.Errorf("problem: %v", p)
	}
	data, err := os.ReadFile(res.Declaration)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s:\n%s", res.Declaration, data)
	outputs, err := pipewire.ParseDeclaration(data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range outputs {
		dir := byte('p')
		if o.Direction == pipewire.Capture {
			dir = 'c'
		}
		got = append(got, fmt.Sprintf("hw:%d,%d%c", o.Card, o.Device, dir))
		if o.Name == "" || o.PCMID == "" {
			t.Errorf("output %+v: want a named output with its PCM id", o)
		}
		if (o.Direction == pipewire.Capture) != strings.HasSuffix(o.Output, CaptureSuffix) {
			t.Errorf("output %s: direction %s disagrees with its name", o.Output, o.Direction)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("declared %q, /dev/snd's PCMs are %q", got, want)
	}
	if len(res.Endpoints) != len(want) || len(res.Fragments) == 0 {
		t.Errorf("%d endpoints and %d WirePlumber fragments for %d PCMs", len(res.Endpoints), len(res.Fragments), len(want))
	}
	for _, e := range res.Endpoints {
		t.Logf("endpoint %s (%s, card %d %s)", e.Name, e.NodeName, e.PCM.Card(), e.Identity.Bus)
	}
}
