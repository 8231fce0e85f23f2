//go:build vmtier

package audio

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/vm/guest"
)

// The VM tier's test (test/vm): declare against the real /dev/snd of a
// kernel with three cards writes a declaration for exactly the playback
// PCM nodes there, each named by its card's sysfs identity.
func TestVMDeclareRealCards(t *testing.T) {
	if err := guest.LoadSoundCards(); err != nil {
		t.Fatal(err)
	}
	nodes, err := alsa.ScanDevSnd(alsa.DevSndRoot)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range nodes.PCMs {
		if p.Stream == alsa.Playback {
			want = append(want, fmt.Sprintf("hw:%d,%d", p.Card, p.Device))
		}
	}
	if len(want) < guest.SoundCards {
		t.Fatalf("/dev/snd has playback PCMs %q, want at least one per card", want)
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
		got = append(got, fmt.Sprintf("hw:%d,%d", o.Card, o.Device))
		if o.Direction != pipewire.Playback || o.Name == "" || o.PCMID == "" {
			t.Errorf("output %+v: want a named playback output with its PCM id", o)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("declared %q, /dev/snd's playback PCMs are %q", got, want)
	}
	if len(res.Endpoints) != len(want) || len(res.Fragments) == 0 {
		t.Errorf("%d endpoints and %d WirePlumber fragments for %d playback PCMs", len(res.Endpoints), len(res.Fragments), len(want))
	}
	for _, e := range res.Endpoints {
		t.Logf("endpoint %s (%s, card %d %s)", e.Name, e.NodeName, e.PCM.Card(), e.Identity.Bus)
	}
}
