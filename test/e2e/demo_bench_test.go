// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"flag"
	"slices"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/poll"
	"github.com/liken-sh/operators/test/pwtest"
)

// toneWindow is how long BenchmarkDemoToneCPU watches PipeWire with the
// tone playing. hack/bench.sh passes TONE_WINDOW.
var toneWindow = flag.Duration("tone-window", 2*time.Minute, "how long BenchmarkDemoToneCPU watches PipeWire play the demo's tone")

// toneSample is the span of each of BenchmarkDemoToneCPU's samples.
const toneSample = 30 * time.Second

// BenchmarkDemoToneCPU runs the PipeWire graph `hack/demo.sh -wait` leaves
// running: the recorded XPS 17's outputs declared on ALSA's null device
// as the demo declares them (audio.Declare with api.alsa.path "null" at
// 48 kHz, then pwtest.LikeHardware), real PipeWire 1.4 and WirePlumber
// 0.5, and the demo's 997 Hz tone playing into the USB headset's sink.
// Once the sink runs it watches for -tone-window, sampling every 30 s,
// and reports the CPU time (utime+stime, /proc/<pid>/stat) PipeWire used
// as a percentage of one core over the window, the largest over one
// sample, WirePlumber's over the window, and the pace: seconds of audio
// the graph played per second of wall time (pwtest.Player.Fed) over the
// first and the last sample. Targets: PipeWire under 5 % of a core, a
// pace of 1.0 throughout. There is no hard limit; it fails only when a
// daemon or the tone stops. The demo's cluster and its Bluetooth speaker
// are left out: the speaker's node idles, and neither is in this graph.
//
// Why two minutes tell: the graph that spun a core after minutes of the
// demo was driven by a null node whose pace grows exponentially from the
// first cycle (pwtest.LikeHardware says why). Run here with that driver
// (PipeWire 1.4.2, 2 cores) the pace measured 1.27 over the first
// sample and 4.38 over the fourth, while PipeWire's CPU rose from 0.43 to
// 1.17 % of a core: still under the target, which it passed in the
// fourth minute, reaching 95 % in the tenth. So the pace is the figure that
// shows a runaway within the window; a graph the Dummy-Driver paces
// holds 1.00 from the first sample to the last, and has nothing that
// grows: 30 minutes of `hack/demo.sh -wait` measured 0.34 % of a core
// for PipeWire (every minute between 0.30 and 0.40 %, the last no higher
// than the first), as this window measures 0.37 %.
func BenchmarkDemoToneCPU(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	_, _, declared := declaredXPS(b, dir)
	outputs := pwtest.LikeHardware(declared)
	i := slices.IndexFunc(outputs, func(o pipewire.Output) bool { return o.Output == node+"-usb-1532-0526-00000000-usb-audio" })
	if i < 0 {
		b.Fatal("the recorded laptop declared no output for its USB headset")
	}
	sink := outputs[i].Name
	pw := pwtest.New(b, pwtest.Options{Outputs: outputs})

	const rate, channels = 48000, 2
	var cpu, cpuMax, wpCPU, paceFirst, paceLast float64
	b.ResetTimer()
	for range b.N {
		player, err := pw.StartPlaying(ctx, sink, pwtest.Tone(997, 0.5, rate, channels, time.Second), rate, channels)
		must(b, err)
		poll.Until(b, "the tone to play", 20*time.Second, func() bool {
			g, err := pw.Remote().Dump(ctx)
			if err != nil {
				return false
			}
			n, ok := g.NodeByName(sink)
			return ok && n.State == pipewire.NodeStateRunning
		})
		pwPid, wpPid := pw.PipeWire().Pid(), pw.WirePlumber().Pid()
		ticks := func(pid int) int64 {
			t, err := statTicks(pid, false)
			if err != nil {
				b.Fatalf("process %d: %v\n%s", pid, err, pw.Logs())
			}
			return t
		}
		start, pw0, wp0 := time.Now(), ticks(pwPid), ticks(wpPid)
		last, lastTicks, lastFed := start, pw0, player.Fed()
		cpuMax = 0
		for n := 0; time.Since(start) < *toneWindow; n++ {
			time.Sleep(min(toneSample, *toneWindow-time.Since(start)))
			select {
			case <-player.Done():
				b.Fatalf("pw-play ended: %v", player.Stop())
			default:
			}
			now, t, fed := time.Now(), ticks(pwPid), player.Fed()
			secs := now.Sub(last).Seconds()
			cpuMax = max(cpuMax, float64(t-lastTicks)/clockTicks/secs*100)
			pace := float64(fed-lastFed) / (rate * channels * 2) / secs
			if n == 0 {
				paceFirst = pace
			}
			paceLast = pace
			b.Logf("%v: PipeWire %.2f %% of a core, pace %.2f", now.Sub(start).Round(time.Second), float64(t-lastTicks)/clockTicks/secs*100, pace)
			last, lastTicks, lastFed = now, t, fed
		}
		secs := last.Sub(start).Seconds()
		cpu = float64(lastTicks-pw0) / clockTicks / secs * 100
		wpCPU = float64(ticks(wpPid)-wp0) / clockTicks / secs * 100
		must(b, player.Stop())
	}
	b.StopTimer()
	b.ReportMetric(cpu, "pipewire-cpu-percent")
	b.ReportMetric(cpuMax, "pipewire-cpu-max-percent")
	b.ReportMetric(wpCPU, "wireplumber-cpu-percent")
	b.ReportMetric(paceFirst, "pace-first")
	b.ReportMetric(paceLast, "pace-last")
	b.ReportMetric(toneWindow.Minutes(), "window-min")
	b.ReportMetric(0, "ns/op") // the iteration time is the window, not a figure
}
