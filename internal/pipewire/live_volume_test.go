// SPDX-License-Identifier: Apache-2.0

package pipewire_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/poll"
	"github.com/liken-sh/operators/test/pwtest"
)

// A sink and a source declared on ALSA's null device. The sink's
// monitor ports carry the signal after its channel volumes
// (monitor.channel-volumes), so a recording of them hears the gain.
func volumeOutputs() (sink, source pipewire.Output) {
	sink = pwtest.NullOutput(0, 3, "liken.audio.card0-pcm3")
	sink.Extra = map[string]string{"monitor.channel-volumes": "true"}
	source = pwtest.NullOutput(1, 0, "liken.audio.card1-pcm0c")
	source.Direction = pipewire.Capture
	source.Output = ""
	return sink, source
}

// pollGraph reads the graph with read until ok holds, failing the test
// when within has passed; it returns the graph and how long it took,
// which is for the log: within is a bound for a failure, generous for a
// loaded host, never the target.
func pollGraph(t *testing.T, within time.Duration, read func() (*pipewire.Graph, error), ok func(*pipewire.Graph) bool) (*pipewire.Graph, time.Duration) {
	t.Helper()
	start := time.Now()
	var last *pipewire.Graph
	for {
		g, err := read()
		if err != nil {
			t.Fatal(err)
		}
		if g != nil {
			last = g
			if ok(g) {
				return g, time.Since(start)
			}
		}
		if time.Since(start) > within {
			t.Fatalf("not within %v; last graph's nodes: %s", within, describeNodes(last))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func describeNodes(g *pipewire.Graph) string {
	if g == nil {
		return "none"
	}
	var b strings.Builder
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "\n  %d %s %s", n.ID, n.Name, n.State)
		if n.Volume != nil {
			fmt.Fprintf(&b, " channelVolumes %v", n.Volume.ChannelVolumes)
			if n.Volume.Mute != nil {
				fmt.Fprintf(&b, " mute %v", *n.Volume.Mute)
			}
		}
	}
	for _, l := range g.Links {
		fmt.Fprintf(&b, "\n  link %d: %d -> %d", l.ID, l.OutputNode, l.InputNode)
	}
	return b.String()
}

// volumeIs reports whether node name shows every channel at gain (to
// PipeWire's float32 precision) and the mute switch at mute.
func volumeIs(name string, gain float64, mute bool) func(*pipewire.Graph) bool {
	return func(g *pipewire.Graph) bool {
		n, ok := g.NodeByName(name)
		if !ok || n.Volume == nil || n.Volume.Mute == nil || *n.Volume.Mute != mute || len(n.Volume.ChannelVolumes) == 0 {
			return false
		}
		for _, v := range n.Volume.ChannelVolumes {
			if math.Abs(v-gain) > 1e-6 {
				return false
			}
		}
		return true
	}
}

// The whole write path against real PipeWire: what a write to a node that
// never ran does (in effect, not shown), writes shown on a node that has
// run, idle or playing (how soon is logged: within a second is the
// target), the linear mapping heard on the
// sink's monitor, link detection, and the errors of a bad node id.
func TestLiveSetVolume(t *testing.T) {
	const rate, channels, freq, amp = 48000, 2, 1000.0, 0.5
	sink, source := volumeOutputs()
	d := pwtest.New(t, pwtest.Options{Outputs: []pipewire.Output{sink, source}})
	ctx := ctxFor(t, 2*time.Minute)
	r := d.Remote()
	mon, err := r.Monitor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Stop()
	latest := func() (*pipewire.Graph, error) { return mon.Latest(), nil }
	dump := func() (*pipewire.Graph, error) { return r.Dump(ctx) }
	published := map[string]bool{sink.Name: true, source.Name: true}

	g, _ := pollGraph(t, 30*time.Second, latest, func(g *pipewire.Graph) bool {
		_, a := g.NodeByName(sink.Name)
		_, b := g.NodeByName(source.Name)
		return a && b
	})
	sinkNode, _ := g.NodeByName(sink.Name)
	srcNode, _ := g.NodeByName(source.Name)
	for _, n := range []pipewire.Node{sinkNode, srcNode} {
		o := n.Observed()
		if o.Volume == nil || *o.Volume != 100 || o.Mute == nil || *o.Mute || !o.Stale || n.VolumeChannels() != 2 {
			t.Errorf("%s at start: observed %+v, %d channels; want 100%%, unmuted, stale (never ran), 2", n.Name, o, n.VolumeChannels())
		}
	}
	if linked := g.LinkedNodes(published); linked != nil {
		t.Errorf("linked before anything plays: %v", linked)
	}

	// 1. The source has never run. The write is accepted, and neither
	// pw-dump nor the monitor shows it.
	gain40, _ := pipewire.GainOfPercent(40)
	start := time.Now()
	if err := r.SetVolume(ctx, srcNode.ID, pipewire.VolumeWrite{Gain: &gain40, Channels: srcNode.VolumeChannels(), Mute: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	t.Logf("one SetVolume: %v", time.Since(start).Round(time.Microsecond))
	// A write that is announced shows within ~10 ms (below); half a
	// second of readings that keep the creation values is PipeWire 1.4.2
	// not announcing, not slowness.
	for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		for what, read := range map[string]func() (*pipewire.Graph, error){"pw-dump": dump, "pw-dump -m": latest} {
			g, err := read()
			if err != nil {
				t.Fatal(err)
			}
			n, _ := g.NodeByName(source.Name)
			if o := n.Observed(); o.Volume == nil || *o.Volume != 100 || !o.Stale {
				t.Fatalf("%s shows a write to a node that never ran: %+v. PipeWire now announces it: Observed need not call such readings stale.", what, o)
			}
		}
	}
	// A recorder makes it run; the written values appear, and the
	// monitor's reading is no longer stale.
	rec, err := d.Record(ctx, source.Name, rate, channels)
	if err != nil {
		t.Fatal(err)
	}
	g, took := pollGraph(t, 30*time.Second, latest, volumeIs(source.Name, 0.4, true))
	t.Logf("the source's earlier write showed %v after its recorder started", took.Round(time.Millisecond))
	if n, _ := g.NodeByName(source.Name); !n.HasRun || n.Observed().Stale || *n.Observed().Volume != 40 || !*n.Observed().Mute {
		t.Errorf("source after its first run: %+v, %+v", n, n.Observed())
	}
	if linked := g.LinkedNodes(published); len(linked) != 1 || linked[0] != source.Name {
		t.Errorf("linked while the source records: %v", linked)
	}
	if _, err := rec.Stop(); err != nil {
		t.Fatal(err)
	}

	// 2. The sink has never run either: a write of 40% is heard at the
	// first stream, 0.5 of full scale coming out at 0.2.
	if err := r.SetVolume(ctx, sinkNode.ID, pipewire.VolumeWrite{Gain: &gain40, Channels: sinkNode.VolumeChannels()}); err != nil {
		t.Fatal(err)
	}
	player, err := d.StartPlaying(ctx, sink.Name, pwtest.Tone(freq, amp, rate, channels, time.Second), rate, channels)
	if err != nil {
		t.Fatal(err)
	}
	defer player.Stop()
	g, _ = pollGraph(t, 30*time.Second, latest, func(g *pipewire.Graph) bool { return g.Linked(sinkNode.ID) })
	if linked := g.LinkedNodes(published); len(linked) != 1 || linked[0] != sink.Name {
		t.Errorf("linked while a stream plays to the sink: %v", linked)
	}
	for _, l := range g.LinksOf(sinkNode.ID) {
		if l.InputNode != sinkNode.ID {
			t.Errorf("link %d: from %d to %d, want the stream into the sink", l.ID, l.OutputNode, l.InputNode)
		}
	}
	if lvl := monitorLevel(t, ctx, d, sink.Name, sinkNode.ID, freq); math.Abs(lvl-0.4*amp) > 0.01 {
		t.Errorf("tone at 0.5 heard at %.4f after a 40%% write to the idle sink, want 0.2", lvl)
	}

	// 3. Writes while a stream plays show, and are heard.
	if err := r.SetVolume(ctx, sinkNode.ID, pipewire.VolumeWrite{Gain: &gain40, Channels: 2, Mute: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	g, took = pollGraph(t, 30*time.Second, dump, volumeIs(sink.Name, 0.4, true))
	t.Logf("playing sink: 40%% and mute shown by pw-dump %v after the write returned", took.Round(time.Millisecond))
	if n, _ := g.NodeByName(sink.Name); n.State != pipewire.NodeStateRunning || !eqInt(n.Observed().Volume, 40) || !*n.Observed().Mute || n.Observed().Stale {
		t.Errorf("playing sink: %s %+v", n.State, n.Observed())
	}
	if lvl := monitorLevel(t, ctx, d, sink.Name, sinkNode.ID, freq); lvl > 0.001 {
		t.Errorf("muted sink heard at %.4f", lvl)
	}
	unity := 1.0
	if err := r.SetVolume(ctx, sinkNode.ID, pipewire.VolumeWrite{Gain: &unity, Channels: 2, Mute: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	_, took = pollGraph(t, 30*time.Second, latest, volumeIs(sink.Name, 1, false))
	t.Logf("playing sink: unity shown by pw-dump -m %v after the write returned", took.Round(time.Millisecond))
	if lvl := monitorLevel(t, ctx, d, sink.Name, sinkNode.ID, freq); math.Abs(lvl-amp) > 0.01 {
		t.Errorf("tone at unity heard at %.4f, want 0.5", lvl)
	}

	// 4. The stream stops: the link goes, and once PipeWire has suspended
	// the sink (WirePlumber's suspend timeout, 5 s) a write still shows,
	// because the sink has run. The monitor remembers
	// that it ran; a single dump of a suspended node cannot know, so its
	// reading is called stale although it is not.
	if err := player.Stop(); err != nil {
		t.Fatal(err)
	}
	pollGraph(t, 30*time.Second, latest, func(g *pipewire.Graph) bool { return len(g.LinkedNodes(published)) == 0 })
	pollGraph(t, 30*time.Second, latest, func(g *pipewire.Graph) bool {
		n, _ := g.NodeByName(sink.Name)
		return n.State == pipewire.NodeStateSuspended
	})
	zero := 0.0
	if err := r.SetVolume(ctx, sinkNode.ID, pipewire.VolumeWrite{Gain: &zero, Channels: 2, Mute: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	g, took = pollGraph(t, 30*time.Second, latest, volumeIs(sink.Name, 0, true))
	n, _ := g.NodeByName(sink.Name)
	t.Logf("suspended sink: 0%% and mute shown by pw-dump -m %v after the write", took.Round(time.Millisecond))
	if o := n.Observed(); n.State != pipewire.NodeStateSuspended || !eqInt(o.Volume, 0) || !*o.Mute || o.Stale {
		t.Errorf("suspended sink from the monitor: %s %+v", n.State, o)
	}
	g, _ = pollGraph(t, 30*time.Second, dump, volumeIs(sink.Name, 0, true))
	if n, _ := g.NodeByName(sink.Name); !n.Observed().Stale {
		t.Errorf("a single dump of a suspended node knows it has run: %+v", n)
	}
	// Mute alone leaves the volume.
	if err := r.SetVolume(ctx, sinkNode.ID, pipewire.VolumeWrite{Mute: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	pollGraph(t, 30*time.Second, dump, volumeIs(sink.Name, 0, false))

	// 5. Bad targets: an id nothing has, and an object that is not a
	// node (a client), fail although pw-cli exits 0.
	err = r.SetVolume(ctx, 9999, pipewire.VolumeWrite{Mute: ptr(true)})
	if !errors.Is(err, pipewire.ErrNoSuchObject) {
		t.Errorf("id 9999: %v, want ErrNoSuchObject", err)
	}
	t.Logf("id 9999: %v", err)
	objs, err := d.RawDump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var client uint32
	for _, o := range objs {
		if o.Type == "PipeWire:Interface:Client" {
			client = o.ID
			break
		}
	}
	err = r.SetVolume(ctx, client, pipewire.VolumeWrite{Mute: ptr(true)})
	if err == nil || errors.Is(err, pipewire.ErrNoSuchObject) || !strings.Contains(err.Error(), "not implemented") {
		t.Errorf("client %d: %v, want pw-cli's refusal", client, err)
	}
	if err := r.SetVolume(ctx, sinkNode.ID, pipewire.VolumeWrite{Gain: ptr(1.5), Channels: 2}); err == nil {
		t.Error("gain 1.5 written")
	}
	// None of that touched the sink.
	pollGraph(t, 30*time.Second, dump, volumeIs(sink.Name, 0, false))

	// With no PipeWire, pw-cli's own failure comes back.
	err = pipewire.Remote{RuntimeDir: t.TempDir()}.SetVolume(ctx, 30, pipewire.VolumeWrite{Mute: ptr(true)})
	if err == nil || !strings.Contains(err.Error(), "Host is down") {
		t.Errorf("no PipeWire: %v", err)
	}
}

// monitorLevel records the sink's monitor ports for about a second while
// a stream plays to it and returns the 1 kHz level of channel 0 at its
// loudest 100 ms.
func monitorLevel(t *testing.T, ctx context.Context, d *pwtest.Daemons, sink string, id uint32, freq float64) float64 {
	t.Helper()
	const rate, channels = 48000, 2
	rec, err := d.RecordMonitor(ctx, sink, rate, channels)
	if err != nil {
		t.Fatal(err)
	}
	pollGraph(t, 30*time.Second, func() (*pipewire.Graph, error) { return d.Remote().Dump(ctx) }, func(g *pipewire.Graph) bool {
		for _, l := range g.LinksOf(id) {
			if l.OutputNode == id {
				return true
			}
		}
		return false
	})
	// About a second of the stream, however long a loaded host takes to
	// record it.
	poll.Until(t, "a second recorded", 30*time.Second, func() bool { return rec.Recorded() >= rate*channels*2 })
	pcm, err := rec.Stop()
	if err != nil {
		t.Fatal(err)
	}
	x := pwtest.Samples(pcm, channels, 0)
	if len(x) < rate/2 {
		t.Fatalf("recorded %d samples", len(x))
	}
	return pwtest.PeakTone(x, rate, freq, rate/10)
}

func ptr[T any](v T) *T { return &v }

func eqInt(p *int, v int) bool { return p != nil && *p == v }

// BenchmarkLiveSetVolume measures one write (a pw-cli run: connect,
// send, round trip) against a declared sink.
func BenchmarkLiveSetVolume(b *testing.B) {
	sink, _ := volumeOutputs()
	d := pwtest.New(b, pwtest.Options{Outputs: []pipewire.Output{sink}})
	ctx := context.Background()
	g, err := d.Remote().Dump(ctx)
	if err != nil {
		b.Fatal(err)
	}
	n, ok := g.NodeByName(sink.Name)
	if !ok {
		b.Fatal("no sink")
	}
	r := d.Remote()
	for i := 0; b.Loop(); i++ {
		gain := float64(i%101) / 100
		if err := r.SetVolume(ctx, n.ID, pipewire.VolumeWrite{Gain: &gain, Channels: 2, Mute: ptr(i%2 == 0)}); err != nil {
			b.Fatal(err)
		}
	}
}
