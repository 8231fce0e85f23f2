// SPDX-License-Identifier: Apache-2.0

//go:build kubelettier

package kubelettier

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/liken-sh/operators/internal/audio/modes"
	"github.com/liken-sh/operators/internal/pipewire/native"
	"github.com/liken-sh/operators/test/bluezsim"
)

// probeEndpoints runs the wireplumber container's endpoints-registered
// probe from the host against the Bluetooth pod's bus, as the kubelet runs
// it in the container, and returns its status and its one line.
func probeEndpoints() (int, string) {
	var out bytes.Buffer
	code := modes.EndpointsRegistered(context.Background(), nil, modes.Env{
		Environ: []string{modes.EnvSystemBus + "=unix:path=" + busSocket}, Stdout: &out, Stderr: &out})
	return code, strings.TrimSpace(out.String())
}

// endpointsHeld reports whether the probe passes because an adapter
// advertises a media profile (and not merely because there is nothing to
// judge), and the registrations the simulator holds for the senders it
// found.
func endpointsHeld() (bool, string) {
	code, line := probeEndpoints()
	if code != 0 || !strings.Contains(line, "WirePlumber holds its endpoints") {
		return false, fmt.Sprintf("probe: status %d: %s", code, line)
	}
	sim, err := bluezsim.Attach("unix:path="+busSocket, "")
	if err != nil {
		return false, err.Error()
	}
	defer sim.Stop()
	r, err := sim.Registrations()
	if err != nil {
		return false, err.Error()
	}
	if len(r.Endpoints) == 0 && len(r.Applications) == 0 {
		return false, "probe passes, but the simulator holds no endpoint: " + line
	}
	return true, line
}

// environOf reads a host process's environment.
func environOf(t testing.TB, pid int) []string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	must(t, err)
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
}

// streamWatch samples the graph every 250 ms until stopped and records
// whether the consumer's pw-cat stream is in it and linked to node: the
// longest span in which it was not linked, and whether the stream node
// ever changed (a consumer that lost its stream makes a new one).
type streamWatch struct {
	stop    func()
	mu      sync.Mutex
	samples int
	// ids are the stream node IDs seen, in order, without repeats.
	ids []int
	// unlinked is the longest span without a link to node; missing the
	// longest without the stream at all.
	unlinked, missing time.Duration
	errors            int
	// fewest and most are the fewest and most links the stream had in
	// one sample.
	fewest, most int
}

func watchStream(ctx context.Context, node string) *streamWatch {
	w := &streamWatch{fewest: -1}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		var unlinkedSince, missingSince time.Time
		for ctx.Err() == nil {
			objs, err := dumpGraph(ctx)
			now := time.Now()
			w.mu.Lock()
			if err != nil {
				w.errors++
			} else {
				w.samples++
				stream, targets := streamLinks(objs)
				if stream == 0 {
					if missingSince.IsZero() {
						missingSince = now
					}
					w.missing = max(w.missing, now.Sub(missingSince))
				} else {
					missingSince = time.Time{}
					if len(w.ids) == 0 || w.ids[len(w.ids)-1] != stream {
						w.ids = append(w.ids, stream)
					}
				}
				if w.fewest < 0 || len(targets) < w.fewest {
					w.fewest = len(targets)
				}
				w.most = max(w.most, len(targets))
				linked := stream != 0 && len(targets) > 0
				for _, tgt := range targets {
					linked = linked && tgt == node
				}
				if linked {
					unlinkedSince = time.Time{}
				} else {
					if unlinkedSince.IsZero() {
						unlinkedSince = now
					}
					w.unlinked = max(w.unlinked, now.Sub(unlinkedSince))
				}
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	})
	w.stop = func() { cancel(); wg.Wait() }
	return w
}

// wireplumberLosesBus kills the Bluetooth pod's dbus-daemon, the media bus
// the audio pod's WirePlumber registered its A2DP endpoints on: the
// bluetoothd container restarts with a new bus whose bluetoothd holds no
// endpoint. The wireplumber container's first process sees its bus
// replaced and ends the container (the liveness probe is the backstop),
// and the kubelet restarts that container alone. The new WirePlumber
// registers on the new bus, the probe passes again, and the consumer
// playing on a card sink keeps its stream, linked to its sink at every
// sample: its links outlive the WirePlumber that made them, and the new
// one adopts them.
func wireplumberLosesBus(t *testing.T, ctx context.Context) {
	audioPod := waitDaemonPod(t, ctx, "audio-operator", time.Minute, "", podReady)
	btPod := waitDaemonPod(t, ctx, "bluetooth-operator", time.Minute, "", podReady)

	// The audio pod's claim delivered the media bus to WirePlumber, and
	// WirePlumber holds its endpoints on it: without both this step would
	// prove nothing.
	var wpBus string
	for _, hp := range containerProcs(t, audioPod, "wireplumber") {
		for _, kv := range environOf(t, hp.pid) {
			if v, ok := strings.CutPrefix(kv, modes.EnvSystemBus+"="); ok {
				wpBus = v
			}
		}
	}
	if !strings.HasSuffix(wpBus, "/system_bus_socket") {
		t.Fatalf("the wireplumber container has %s=%q: the audio pod's claim did not deliver the media bus", modes.EnvSystemBus, wpBus)
	}
	poll(t, "WirePlumber's endpoints registered before the fault", time.Minute, endpointsHeld)
	_, line := endpointsHeld()
	t.Logf("before the fault: %s", line)

	audioBefore, btBefore := restarts(audioPod), restarts(btPod)
	consumerBefore := restarts(getPod(t, ctx, "default", "speaker"))
	bus := containerPid(t, btPod, "bluetoothd", "dbus-daemon")
	objs, err := dumpGraph(ctx)
	must(t, err)
	stream, linksBefore := streamLinks(objs)
	sink := 0
	for _, o := range objs {
		if o.Type == "PipeWire:Interface:Node" && prop(o, "node.name") == speakerNode {
			sink = o.ID
		}
	}
	reg := followLinks(t, ctx, stream, sink)
	watch := watchStream(ctx, speakerNode)
	lost := time.Now()
	must(t, syscall.Kill(bus, syscall.SIGKILL))

	waitRestarted(t, ctx, btPod, "bluetoothd", btBefore["bluetoothd"], 2*time.Minute, containerStarted)
	busBack := time.Since(lost)
	wpRestarted := waitRestarted(t, ctx, audioPod, "wireplumber", audioBefore["wireplumber"], 3*time.Minute, containerStarted).Sub(lost)
	poll(t, "WirePlumber's endpoints registered on the new bus", time.Minute, endpointsHeld)
	endpointsBack := time.Since(lost)
	_, line = endpointsHeld()
	t.Logf("after the fault: %s", line)
	waitLinked(t, ctx, speakerNode, 30*time.Second)
	watch.stop()
	regGap, regFewest, regMost, regEvents := reg.stop()

	t.Logf("FIGURE media bus lost → bluetoothd container back with a new bus in %s", busBack.Round(time.Millisecond))
	t.Logf("FIGURE media bus lost → wireplumber container restarted in %s (target: seconds, not the liveness probe's 20 s × 3 failures, which took 38–62 s)", wpRestarted.Round(time.Millisecond))
	t.Logf("FIGURE media bus lost → endpoints registered again in %s", endpointsBack.Round(time.Millisecond))
	t.Logf("FIGURE card sink's stream across the WirePlumber restart: %d graph samples, longest span not linked to %s: %s (target 0: never unlinked), longest span absent: %s, links per sample %d–%d (target %d, as before: no duplicates) (stream node IDs %v, %d failed reads)",
		watch.samples, speakerNode, watch.unlinked.Round(time.Millisecond), watch.missing.Round(time.Millisecond),
		watch.fewest, watch.most, len(linksBefore), watch.ids, watch.errors)

	t.Logf("FIGURE card sink's stream in PipeWire's registry across the fault: %d link events, longest span with no link from the stream to %s: %s (target 0), %d–%d links at once (target %d)",
		regEvents, speakerNode, regGap, regFewest, regMost, len(linksBefore))
	if regGap > 0 || regFewest == 0 {
		t.Errorf("PipeWire's registry shows the consumer's stream with no link to %s for %s", speakerNode, regGap)
	}
	if regMost > len(linksBefore) {
		t.Errorf("PipeWire's registry shows %d links from the stream to %s at once, want %d: duplicates", regMost, speakerNode, len(linksBefore))
	}
	if watch.unlinked > 0 || watch.fewest == 0 {
		t.Errorf("the consumer's stream was not linked to %s for %s: card sinks did not keep playing", speakerNode, watch.unlinked.Round(time.Millisecond))
	}
	if watch.most > len(linksBefore) || watch.fewest < len(linksBefore) {
		t.Errorf("the stream had %d–%d links during the restart, want %d throughout", watch.fewest, watch.most, len(linksBefore))
	}
	prev, err := cluster.Client().CoreV1().Pods(ns).GetLogs(audioPod.Name, &corev1.PodLogOptions{Container: "wireplumber", Previous: true}).DoRaw(ctx)
	must(t, err)
	if !strings.Contains(string(prev), "a new media bus answers at") {
		t.Errorf("the old wireplumber container did not end because its media bus was replaced; its log ends:\n%s", lastLines(string(prev), 20))
	}

	if len(watch.ids) != 1 {
		t.Errorf("the consumer's stream left the graph or was made again (stream node IDs %v): it did not keep playing", watch.ids)
	}
	if watch.samples == 0 {
		t.Errorf("no graph sample read during the fault (%d failed reads)", watch.errors)
	}
	audioAfter := restarts(getPod(t, ctx, ns, audioPod.Name))
	if audioAfter["wireplumber"] != audioBefore["wireplumber"]+1 {
		t.Errorf("wireplumber restarted %d times, want once", audioAfter["wireplumber"]-audioBefore["wireplumber"])
	}
	for _, name := range []string{"pipewire", "operator", "capture"} {
		if audioAfter[name] != audioBefore[name] {
			t.Errorf("%s restarted (%d → %d); only wireplumber should have", name, audioBefore[name], audioAfter[name])
		}
	}
	if c := restarts(getPod(t, ctx, "default", "speaker")); c["consumer"] != consumerBefore["consumer"] {
		t.Errorf("the consumer restarted")
	}
	t.Logf("bluetooth pod restarts: before %v, after %v", btBefore, restarts(getPod(t, ctx, ns, btPod.Name)))
	// The gamepad's link went with the old bluetoothd, as a controller's
	// does; it reconnects to the new one for the steps after this.
	reconnectPad(t, ctx)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// linkFollow follows PipeWire's registry over the native protocol and
// counts the links from one node to another at every link event, which
// the registry sends as they happen: unlike pw-dump samples, no span is
// missed between two reads.
type linkFollow struct {
	mu             sync.Mutex
	count          int
	fewest, most   int
	zeroSince      time.Time
	gap            time.Duration
	events         int
	links          map[uint32]bool
	stopCh, doneCh chan struct{}
	conn           *native.Conn
}

func followLinks(t *testing.T, ctx context.Context, out, in int) *linkFollow {
	t.Helper()
	c, err := native.Dial(ctx, pipewireSocket, map[string]string{"application.name": "kubelet-tier link follower"})
	must(t, err)
	f := &linkFollow{fewest: -1, links: map[uint32]bool{}, stopCh: make(chan struct{}), doneCh: make(chan struct{}), conn: c}
	// The registry first announces what is there; the count before the
	// fault is taken at its Done.
	seq, err := c.Sync()
	must(t, err)
	synced := false
	go func() {
		defer close(f.doneCh)
		for {
			select {
			case <-f.stopCh:
				return
			case ev, ok := <-c.Events():
				if !ok {
					return
				}
				f.mu.Lock()
				changed := false
				switch {
				case ev.Global != nil && ev.Global.Type == "PipeWire:Interface:Link":
					if ev.Global.Props["link.output.node"] == fmt.Sprint(out) && ev.Global.Props["link.input.node"] == fmt.Sprint(in) {
						f.links[ev.Global.ID] = true
						f.count++
						changed = true
					}
				case ev.Removed != nil && f.links[*ev.Removed]:
					delete(f.links, *ev.Removed)
					f.count--
					changed = true
				case ev.Done != nil && *ev.Done == seq:
					synced = true
					changed = true
				}
				if changed && synced {
					f.events++
					now := time.Now()
					if f.fewest < 0 || f.count < f.fewest {
						f.fewest = f.count
					}
					f.most = max(f.most, f.count)
					if f.count == 0 && f.zeroSince.IsZero() {
						f.zeroSince = now
					} else if f.count > 0 && !f.zeroSince.IsZero() {
						f.gap = max(f.gap, now.Sub(f.zeroSince))
						f.zeroSince = time.Time{}
					}
				}
				f.mu.Unlock()
			}
		}
	}()
	return f
}

// stop ends the follower and returns the longest span with no link, the
// fewest and most links at once, and the number of events counted.
func (f *linkFollow) stop() (time.Duration, int, int, int) {
	close(f.stopCh)
	f.conn.Close()
	<-f.doneCh
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.zeroSince.IsZero() {
		f.gap = max(f.gap, time.Since(f.zeroSince))
	}
	return f.gap, f.fewest, f.most, f.events
}
