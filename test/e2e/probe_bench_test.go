// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/liken-sh/operators/test/child"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/bluezsim"
	"github.com/liken-sh/operators/test/pwtest"
)

// probeRuns is how many times BenchmarkAudioProbes runs each probe per
// iteration.
const probeRuns = 20

// probeContainerLimit is the memory limit of the containers whose probes
// these are, the pipewire and wireplumber sidecars of
// deploy/audio/operator.yaml (128Mi): a probe runs in its container's
// cgroup, beside the sidecar.
const probeContainerLimit = 128 << 20

// probeCost is what one probe run cost, as test/e2e/cmd/rusage reports it
// from the wait4 rusage of the process: CPU is user plus system time of
// the probe and every child it waited for (graph-answers' pw-dump), and
// MaxRSS the largest resident set among them (with rusage's own couple of
// MiB as the floor).
type probeCost struct {
	CPU    time.Duration
	MaxRSS int64 // bytes
}

// BenchmarkAudioProbes runs the two exec probes of
// deploy/audio/operator.yaml as the kubelet runs them: the entrypoint
// /usr/local/bin/audio-operator with the probe's one argument and the
// container's environment (PIPEWIRE_RUNTIME_DIR, XDG_RUNTIME_DIR, and the
// media bus for endpoints-registered), a fresh process each time, against
// real PipeWire and WirePlumber with 16 declared outputs and WirePlumber's
// Bluetooth monitor on the BlueZ simulator's adapter. The entrypoint is
// built alone, with no audio-driver beside it, so a probe that needed
// the API-server binary would fail here.
//
// It reports, over probeRuns runs of each, the median and largest CPU
// time in ms and the largest peak RSS in MiB (graph-answers includes its
// pw-dump child). The targets are 20 ms of CPU and 12 MiB per run. It
// fails when a probe does not pass, and when a run's peak passes the
// container's 128 MiB limit.
func BenchmarkAudioProbes(b *testing.B) {
	dir := b.TempDir()
	entry := child.BuildCommandInto(b, dir, "github.com/liken-sh/operators/cmd/audio-operator")
	launcher := child.BuildCommandInto(b, dir, "./cmd/rusage")
	sim := bluezsim.New(b, bluezsim.Options{})
	must(b, ignore(sim.AddAdapter("hci0", adapterAddr)))
	var outputs []pipewire.Output
	for card := range 2 {
		for pcm := range 8 {
			outputs = append(outputs, pwtest.NullOutput(card, pcm, fmt.Sprintf("liken.audio.card%d-pcm%d", card, pcm)))
		}
	}
	pw := pwtest.New(b, pwtest.Options{MediaBus: sim.Address(), Outputs: outputs})
	env := []string{"PIPEWIRE_RUNTIME_DIR=" + pw.RuntimeDir, "XDG_RUNTIME_DIR=" + pw.RuntimeDir, "PATH=" + os.Getenv("PATH")}
	probes := []struct {
		name string
		env  []string
	}{
		{"graph-answers", env},
		{"endpoints-registered", append(slices.Clip(env), "DBUS_SYSTEM_BUS_ADDRESS="+sim.Address())},
	}
	// WirePlumber registers its endpoints a few seconds after it starts,
	// as the startup probe's allowance says; the figures are of passing
	// runs.
	deadline := time.Now().Add(60 * time.Second)
	for _, p := range probes {
		for {
			_, out, err := runProbe(launcher, entry, p.name, p.env)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s never passed: %v\n%s", p.name, err, out)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	costs := make([][]probeCost, len(probes))
	b.ResetTimer()
	for range b.N {
		for i, p := range probes {
			for range probeRuns {
				c, out, err := runProbe(launcher, entry, p.name, p.env)
				if err != nil {
					b.Fatalf("%s: %v\n%s", p.name, err, out)
				}
				costs[i] = append(costs[i], c)
			}
		}
	}
	b.StopTimer()
	for i, p := range probes {
		cs := costs[i]
		cpu := make([]time.Duration, len(cs))
		var peak int64
		for j, c := range cs {
			cpu[j] = c.CPU
			peak = max(peak, c.MaxRSS)
		}
		slices.Sort(cpu)
		if peak > probeContainerLimit {
			b.Fatalf("%s: peak RSS %d bytes, above its container's limit of %d", p.name, peak, probeContainerLimit)
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(cpu[len(cpu)/2]), p.name+"-cpu-p50-ms")
		b.ReportMetric(ms(cpu[len(cpu)-1]), p.name+"-cpu-max-ms")
		b.ReportMetric(float64(peak)/(1<<20), p.name+"-rss-max-MiB")
	}
	b.ReportMetric(0, "ns/op") // the iteration time is the runs' sum, not a figure
}

// runProbe runs entry with the one argument mode and exactly env, as the
// kubelet's exec probe does, under launcher (test/e2e/cmd/rusage), and
// returns its cost and its combined output. The error is the exit status
// when it is not 0.
func runProbe(launcher, entry, mode string, env []string) (probeCost, string, error) {
	report := filepath.Join(filepath.Dir(entry), mode+".rusage")
	cmd := exec.Command(launcher, "-o", report, entry, mode)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var c probeCost
	data, readErr := os.ReadFile(report)
	if readErr != nil {
		return c, out.String(), errors.Join(err, readErr)
	}
	var cpuNs, maxKB int64
	if _, scanErr := fmt.Sscan(string(data), &cpuNs, &maxKB); scanErr != nil {
		return c, out.String(), errors.Join(err, fmt.Errorf("rusage report %q: %w", data, scanErr))
	}
	c.CPU, c.MaxRSS = time.Duration(cpuNs), maxKB<<10
	return c, out.String(), err
}
