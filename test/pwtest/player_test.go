// SPDX-License-Identifier: Apache-2.0

package pwtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/pipewire"
)

// A player holds a link into its sink until it is stopped, and then the
// link goes; a pw-play that fails at once is reported by Stop.
func TestPlayerHoldsLink(t *testing.T) {
	sink := NullOutput(0, 0, "liken.audio.card0-pcm0")
	d := New(t, Options{Outputs: []pipewire.Output{sink}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	linked := func() (bool, pipewire.Node) {
		g, err := d.Remote().Dump(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := g.NodeByName(sink.Name)
		if !ok {
			t.Fatal("no sink")
		}
		return g.Linked(n.ID), n
	}
	wait := func(want bool) pipewire.Node {
		for {
			got, n := linked()
			if got == want {
				return n
			}
			if ctx.Err() != nil {
				t.Fatalf("sink linked %v, want %v", got, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	p, err := d.StartPlaying(ctx, sink.Name, nil, 48000, 2)
	if err != nil {
		t.Fatal(err)
	}
	wait(true)
	// It goes on playing: the sink still runs a second later.
	time.Sleep(time.Second)
	if _, n := linked(); n.State != pipewire.NodeStateRunning {
		t.Errorf("sink %s while the player plays", n.State)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	wait(false)
	if err := p.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	bad, err := d.StartPlaying(ctx, sink.Name, nil, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	<-bad.Done()
	if err := bad.Stop(); err == nil || !strings.Contains(err.Error(), "bad rate 0") {
		t.Errorf("pw-play with rate 0: %v", err)
	}
}
