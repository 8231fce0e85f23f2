// SPDX-License-Identifier: Apache-2.0

package pwtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/pipewire"
)

// A null source made LikeHardware offers two channels, not 64, is driven
// by the Dummy-Driver (its node.driver-id), and a recording from it runs
// at real time. The pace is printed beside its target (1.0) and only a
// pace well above it fails: over these 4 s a null node driving the graph itself
// also stays near 1 (measured 0.95 with PipeWire 1.4.2); its runaway
// shows over minutes, which BenchmarkDemoToneCPU (test/e2e) watches.
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
	driver, err := driverOf(ctx, d, "demo-mic")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	pcm, err := rec.Stop()
	if err != nil {
		t.Fatal(err)
	}
	secs := float64(len(pcm)) / (48000 * 2 * 2) / time.Since(start).Seconds()
	t.Logf("the null source ran with %d channels (target %d), driven by %s; recorded %.2f s of audio per second (target 1.0)", channels, HardwareChannels, driver, secs)
	if channels != HardwareChannels {
		t.Errorf("the source runs %d channels, want %d", channels, HardwareChannels)
	}
	if driver != "Dummy-Driver" {
		t.Errorf("the source is driven by %s, want PipeWire's Dummy-Driver", driver)
	}
	// Only a graph that runs ahead of real time fails: a loaded host can
	// make a real-time graph fall behind (measured 0.52 while CI built
	// beside it), but no slowness makes one run faster.
	if secs > 1.5 {
		t.Errorf("%.2f s of audio per second of recording, more than real time (1.0)", secs)
	}
}

// driverOf returns the node.name of the node that drives the node named
// name (its node.driver-id), from one pw-dump. A node that drives itself
// has no node.driver-id (src/pipewire/impl-node.c,
// pw_impl_node_set_driver), and its own name is returned.
func driverOf(ctx context.Context, d *Daemons, name string) (string, error) {
	objs, err := d.RawDump(ctx)
	if err != nil {
		return "", err
	}
	names := map[float64]any{}
	var id any
	found := false
	for _, o := range objs {
		p := o.InfoProps()
		if o.Type != "PipeWire:Interface:Node" || p == nil {
			continue
		}
		names[float64(o.ID)] = p["node.name"]
		if p["node.name"] == name {
			id, found = p["node.driver-id"], true
		}
	}
	if !found {
		return "", fmt.Errorf("no node %s", name)
	}
	if id == nil {
		return name, nil
	}
	f, ok := id.(float64)
	if !ok {
		return "", fmt.Errorf("node %s has no numeric node.driver-id: %v", name, id)
	}
	driver, ok := names[f].(string)
	if !ok {
		return "", fmt.Errorf("node %s: node.driver-id %v names no node", name, id)
	}
	return driver, nil
}
