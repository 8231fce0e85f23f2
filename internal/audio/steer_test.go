// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"testing"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/pipewire"
)

// A node that has not run shows the values it was created with whatever
// is written (PipeWire 1.4.2): each field is written once, and a volume
// then a mute do not chase each other.
func TestSteerVolumeOnANodeThatNeverRan(t *testing.T) {
	var writes []pipewire.VolumeWrite
	o := &operator{volumes: map[string]volumeWrite{}, metrics: newMetrics(nil), cfg: Config{
		SetVolume: func(_ context.Context, node uint32, w pipewire.VolumeWrite) error {
			writes = append(writes, w)
			return nil
		}}}
	one, no := 1.0, false
	n := &pipewire.Node{ID: 30, Volume: &pipewire.Volume{ChannelVolumes: []float64{one, one}, Mute: &no}}
	vol, mute := int32(40), true
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(o.steerVolume(ctx, "s", audiov1.EndpointSpec{Volume: &vol}, n))
	for range 5 {
		must(o.steerVolume(ctx, "s", audiov1.EndpointSpec{Volume: &vol, Mute: &mute}, n))
	}
	if len(writes) != 2 || writes[0].Gain == nil || *writes[0].Gain != 0.4 || writes[1].Mute == nil || !*writes[1].Mute || writes[1].Gain != nil {
		t.Fatalf("writes %+v, want the volume once, then the mute once", writes)
	}
	if v, m := o.observedVolume("s", n); v == nil || *v != 40 || m == nil || !*m {
		t.Errorf("observed %v %v, want what was written: 40, muted", v, m)
	}
	// A new node (PipeWire restarted) gets both again.
	n2 := *n
	n2.ID = 31
	must(o.steerVolume(ctx, "s", audiov1.EndpointSpec{Volume: &vol, Mute: &mute}, &n2))
	if len(writes) != 3 || writes[2].Gain == nil || writes[2].Mute == nil {
		t.Fatalf("writes to the new node %+v, want volume and mute in one", writes[2:])
	}
}
