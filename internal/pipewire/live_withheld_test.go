// SPDX-License-Identifier: Apache-2.0

package pipewire_test

import (
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/pwtest"
)

// A withheld output is in the declaration file and gets no node from the
// real PipeWire, which starts with the other outputs as before; the file
// reads back with the output and its reason.
func TestLiveWithheldOutputHasNoNode(t *testing.T) {
	a := pwtest.NullOutput(0, 3, "liken.audio.card0-pcm3")
	w := pwtest.NullOutput(0, 7, "liken.audio.card0-pcm7")
	w.Withheld = "the monitor's ELD lists no audio format"
	d := pwtest.New(t, pwtest.Options{Outputs: []pipewire.Output{a, w}})

	g, err := d.Remote().Dump(ctxFor(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.NodeByName(a.Name); !ok {
		t.Errorf("the declared output %s has no node", a.Name)
	}
	for _, n := range g.Nodes {
		if n.Name == w.Name || (n.Declared != nil && n.Declared.PCM == w.Device) {
			t.Errorf("the withheld output has node %d (%s, %s)", n.ID, n.Name, n.MediaClass)
		}
	}
	back, err := pipewire.ReadDeclaration(d.DeclarationPath())
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || back[0].Withheld != "" || back[1].Name != w.Name || back[1].Withheld != w.Withheld {
		t.Errorf("declaration read back as %+v", back)
	}
}
