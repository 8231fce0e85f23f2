// SPDX-License-Identifier: Apache-2.0

package pwtest

import (
	"context"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/pipewire"
)

// A null source made LikeHardware offers two channels, not 64, and a
// recording from it runs at real time. The pace is printed beside its
// target (1.0; measured 1.13 for the null device driving the graph
// itself, 1.05 following the Dummy-Driver, the excess being what was
// recorded before the clock started) and only a gross miss fails.
func TestLikeHardwareIsPacedAndStereo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mic := pipewire.Output{Card: 0, Device: 0, Direction: pipewire.Capture, Name: "demo-mic", Output: "demo-mic", Path: "null", Rate: 48000}
	d, err := Start(ctx, Options{Outputs: LikeHardware([]pipewire.Output{mic})})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	rec, err := d.Record(ctx, "demo-mic", 48000, 2)
	if err != nil {
		t.Fatal(err)
	}
	var channels int
	deadline := time.Now().Add(20 * time.Second)
	for channels == 0 && time.Now().Before(deadline) {
		if g, err := d.Remote().Dump(ctx); err == nil {
			if n, ok := g.NodeByName("demo-mic"); ok && n.State == pipewire.NodeStateRunning && n.Format != nil {
				channels = n.Format.Channels
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := time.Now()
	time.Sleep(4 * time.Second)
	pcm, err := rec.Stop()
	if err != nil {
		t.Fatal(err)
	}
	secs := float64(len(pcm)) / (48000 * 2 * 2) / time.Since(start).Seconds()
	t.Logf("the null source ran with %d channels (target %d); recorded %.2f s of audio per second (target 1.0)", channels, HardwareChannels, secs)
	if channels != HardwareChannels {
		t.Errorf("the source runs %d channels, want %d", channels, HardwareChannels)
	}
	if secs < 0.7 || secs > 1.5 {
		t.Errorf("%.2f s of audio per second of recording, want about 1 (real time)", secs)
	}
}
