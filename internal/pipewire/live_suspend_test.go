// SPDX-License-Identifier: Apache-2.0

package pipewire_test

import (
	"errors"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/pwtest"
)

// SuspendNode on the real PipeWire: the command is taken for a playing
// sink, which runs again for the stream still linked to it; an id no
// object has is ErrNoSuchObject.
func TestLiveSuspendNode(t *testing.T) {
	a := pwtest.NullOutput(0, 3, "liken.audio.card0-pcm3")
	d := pwtest.New(t, pwtest.Options{Outputs: []pipewire.Output{a}})
	ctx := ctxFor(t, 90*time.Second)
	p, err := d.StartPlaying(ctx, a.Name, pwtest.Tone(440, 0.1, 48000, 2, time.Second), 48000, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	state := func() string {
		g, err := d.Remote().Dump(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := g.NodeByName(a.Name)
		return n.State
	}
	var id uint32
	for state() != pipewire.NodeStateRunning {
		if ctx.Err() != nil {
			t.Fatal("the sink never ran")
		}
		time.Sleep(50 * time.Millisecond)
	}
	g, _ := d.Remote().Dump(ctx)
	n, _ := g.NodeByName(a.Name)
	id = n.ID
	if err := d.Remote().SuspendNode(ctx, id); err != nil {
		t.Fatal(err)
	}
	for state() != pipewire.NodeStateRunning {
		if ctx.Err() != nil {
			t.Fatal("the sink did not run again for the stream linked to it")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := d.Remote().SuspendNode(ctx, 99999); !errors.Is(err, pipewire.ErrNoSuchObject) {
		t.Errorf("an unknown id: %v", err)
	}
}
