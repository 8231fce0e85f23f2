// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/test/poll"
)

// graphMonitors returns the pids of the pw-dump -m children of this
// process (the operator's graph monitor runs as one).
func graphMonitors(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	must(t, err)
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after
		// the last ')'.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 || f[0] == "Z" || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if filepath.Base(args[0]) == "pw-dump" && len(args) > 1 && args[len(args)-1] == "-m" {
			out = append(out, pid)
		}
	}
	return out
}

// A stuck graph monitor on real PipeWire and WirePlumber and the real
// control plane: the operator's pw-dump -m is stopped (SIGSTOP), so it
// prints nothing more while PipeWire answers. Within the probe interval
// and its grace every Sink says the operator's view is stale
// (GraphCurrent False, MonitorStale), audio_observation_valid turns 0 and
// audio_observation_age_seconds grows; the stopped child is killed, a new
// one is started (audio_graph_monitor_restarts_total{reason="stale"}),
// the Sinks say GraphCurrent True again, and the new monitor follows a
// change to the graph. The outputs are never published tainted for it.
func TestAudioStuckGraphMonitor(t *testing.T) {
	const probe = time.Second
	reg := prometheus.NewRegistry()
	a := startAudioNode(t, audioNodeOptions{AsOperator: true, Tune: func(c *audio.Config) {
		c.Registerer, c.GraphProbe = reg, probe
	}})
	ctx, outputs, pw := a.ctx, a.outputs, a.pw
	admin, err := dynamic.NewForConfig(a.cluster.RESTConfig())
	must(t, err)
	sinks := admin.Resource(audiov1.SinksResource)

	dp := node + "-pci-0000-00-1f-3-hdmi-3" // the Samsung's DP output
	graphCurrent := func(u *unstructured.Unstructured) *metav1.Condition {
		var s audiov1.Sink
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s) != nil {
			return nil
		}
		if !meta.IsStatusConditionTrue(s.Status.Conditions, audiov1.ConditionReady) {
			return nil
		}
		return meta.FindStatusCondition(s.Status.Conditions, audiov1.ConditionGraphCurrent)
	}
	poll.WaitFor(t, ctx, "the DP Sink ready with a current graph", 60*time.Second, func() (bool, string) {
		u, err := sinks.Get(ctx, dp, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := graphCurrent(u)
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", c)
	})
	// Idle for longer than the probe interval: a graph nobody changes is
	// not stale, and the probes that find it current (the observation's
	// timestamp moves) wake no pass, though each one's client comes and
	// goes in the monitor's output.
	time.Sleep(probe)
	passes := counterValue(t, reg, "audio_passes_total", "trigger", "graph")
	observed := gaugeValue(t, reg, "audio_observation_last_success_timestamp_seconds")
	poll.WaitFor(t, ctx, "a probe finding the idle graph current", 30*time.Second, func() (bool, string) {
		now := gaugeValue(t, reg, "audio_observation_last_success_timestamp_seconds")
		return now > observed, fmt.Sprintf("observed at %v, now %v", observed, now)
	})
	time.Sleep(3 * probe)
	if got := staleRestarts(t, reg); got != 0 {
		t.Fatalf("an idle graph restarted the monitor %v times", got)
	}
	if age := gaugeValue(t, reg, "audio_observation_age_seconds"); age < 0 || age > (probe+3*time.Second).Seconds() {
		t.Fatalf("idle graph: audio_observation_age_seconds %v, want within a probe and its grace", age)
	}
	if got := counterValue(t, reg, "audio_passes_total", "trigger", "graph") - passes; got != 0 {
		t.Errorf("idle graph probed every %s: %v graph passes since, want 0", probe, got)
	}

	// Every GraphCurrent the DP Sink goes through, as the watch sees it.
	type seen struct {
		at     time.Time
		status metav1.ConditionStatus
		reason string
	}
	var mu sync.Mutex
	var transitions []seen
	w, err := sinks.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + dp})
	must(t, err)
	defer w.Stop()
	go func() {
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			if c := graphCurrent(u); c != nil {
				mu.Lock()
				if n := len(transitions); n == 0 || transitions[n-1].reason != c.Reason {
					transitions = append(transitions, seen{time.Now(), c.Status, c.Reason})
				}
				mu.Unlock()
			}
		}
	}()
	find := func(reason string, after time.Time) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range transitions {
			if s.reason == reason && !s.at.Before(after) {
				return s.at, true
			}
		}
		return time.Time{}, false
	}

	mons := graphMonitors(t)
	if len(mons) != 1 {
		t.Fatalf("pw-dump -m children %v, want the operator's one", mons)
	}
	stuck := mons[0]
	t.Cleanup(func() { _ = syscall.Kill(stuck, syscall.SIGCONT) })
	stopped := time.Now()
	must(t, syscall.Kill(stuck, syscall.SIGSTOP))

	// The metric while stale, sampled until the Sink says it is current
	// again.
	sawInvalid, maxAge := false, 0.0
	var staleAt, currentAt time.Time
	poll.WaitFor(t, ctx, "the DP Sink stale, then current again", 60*time.Second, func() (bool, string) {
		if gaugeValue(t, reg, "audio_observation_valid") == 0 {
			sawInvalid = true
		}
		maxAge = max(maxAge, gaugeValue(t, reg, "audio_observation_age_seconds"))
		var ok bool
		if staleAt.IsZero() {
			if staleAt, ok = find(audio.ReasonMonitorStale, stopped); !ok {
				return false, "not stale yet"
			}
		}
		currentAt, ok = find(audio.ReasonFollowing, staleAt)
		return ok, "stale, not current yet"
	})
	t.Logf("SIGSTOP of pw-dump -m to GraphCurrent=False (MonitorStale): %s (target: probe %s + grace 2s + a pass)", staleAt.Sub(stopped).Round(time.Millisecond), probe)
	t.Logf("GraphCurrent=False to True again (kill, new monitor, first graph): %s (target: within the probe grace, 2s: a SIGKILL, a new pw-dump, its first graph and the pass writing the Sinks)", currentAt.Sub(staleAt).Round(time.Millisecond))
	if !sawInvalid {
		t.Error("audio_observation_valid{source=pipewire} never read 0 while the monitor was stuck")
	}
	if maxAge < probe.Seconds() {
		t.Errorf("audio_observation_age_seconds reached %v while stuck, want past the probe interval %s", maxAge, probe)
	}
	if got := staleRestarts(t, reg); got != 1 {
		t.Errorf("audio_graph_monitor_restarts_total %v, want 1", got)
	}
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(stuck))); err == nil {
		t.Errorf("the stuck pw-dump -m (pid %d) is still there", stuck)
	}
	mons = graphMonitors(t)
	if len(mons) != 1 || mons[0] == stuck {
		t.Fatalf("pw-dump -m children after the restart %v, want one new one", mons)
	}
	if gaugeValue(t, reg, "audio_observation_valid") != 1 {
		t.Error("audio_observation_valid{source=pipewire} is not 1 after the restart")
	}

	// The new monitor follows the graph: the DP output's node destroyed
	// (and made again at once by the claim gate, under a new id) is a
	// batch that wakes a pass, and the Sink is Ready with the new node.
	var id uint32
	g, err := pw.Remote().Dump(ctx)
	must(t, err)
	for _, o := range outputs {
		if o.Output == dp {
			n, ok := g.NodeByName(o.Name)
			if !ok {
				t.Fatalf("no node %s", o.Name)
			}
			id = n.ID
		}
	}
	graphPasses := counterValue(t, reg, "audio_passes_total", "trigger", "graph")
	out, err := pw.Command(ctx, "pw-cli", "destroy", strconv.Itoa(int(id))).CombinedOutput()
	if err != nil {
		t.Fatalf("pw-cli destroy: %v: %s", err, out)
	}
	poll.WaitFor(t, ctx, "a graph pass after the DP node went, and the DP Sink Ready again", 30*time.Second, func() (bool, string) {
		if n := counterValue(t, reg, "audio_passes_total", "trigger", "graph"); n <= graphPasses {
			return false, "no graph pass since the destroy"
		}
		u, err := sinks.Get(ctx, dp, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var s audiov1.Sink
		must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s))
		return meta.IsStatusConditionTrue(s.Status.Conditions, audiov1.ConditionReady), fmt.Sprint(s.Status.Conditions)
	})
}

// gaugeValue reads the one series of the gauge family name from reg.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	must(t, err)
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no single series of %s", name)
	return 0
}

// staleRestarts reads audio_graph_monitor_restarts_total{reason="stale"}
// from reg (0 before the first).
func staleRestarts(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	return counterValue(t, reg, "audio_graph_monitor_restarts_total", "reason", "stale")
}

// counterValue reads the series of counter name whose label is value
// from reg (0 before the series exists).
func counterValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	must(t, err)
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
