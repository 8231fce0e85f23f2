// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/audio"
	"github.com/liken-sh/operators/test/poll"
)

// A PipeWire that gives no answer, on real PipeWire and WirePlumber and
// the real control plane: the daemon is stopped (SIGSTOP), so the
// operator's probe (a hello and a sync on a connection of its own) gets
// no answer. Every Sink and Source then says GraphCurrent False with
// reason PipeWireNotAnswering, audio_observation_valid turns 0, and the
// outputs are published tainted no-sink, NoSchedule only: a daemon that
// answers no client serves no new consumer, and the ones playing keep
// their pods. On SIGCONT the conditions say Following again, the taints
// come off, and the metric is 1 again.
func TestAudioPipeWireNotAnswering(t *testing.T) {
	const probe = time.Second
	reg := prometheus.NewRegistry()
	a := startAudioNode(t, audioNodeOptions{AsOperator: true, Tune: func(c *audio.Config) {
		c.Registerer, c.GraphProbe = reg, probe
	}})
	ctx, cluster, pw := a.ctx, a.cluster, a.pw
	admin, err := dynamic.NewForConfig(cluster.RESTConfig())
	must(t, err)
	sinks, sources := admin.Resource(audiov1.SinksResource), admin.Resource(audiov1.SourcesResource)

	dp := node + "-pci-0000-00-1f-3-hdmi-3" // the Samsung's DP output
	// graphReasons reads every Sink's and Source's GraphCurrent reason.
	graphReasons := func() (map[string]string, error) {
		out := map[string]string{}
		for _, res := range []dynamic.NamespaceableResourceInterface{sinks, sources} {
			list, err := res.List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			for _, u := range list.Items {
				conds, _ := conditionsOf(u)
				if c := meta.FindStatusCondition(conds, audiov1.ConditionGraphCurrent); c != nil {
					out[u.GetKind()+"/"+u.GetName()] = c.Reason
				} else {
					out[u.GetKind()+"/"+u.GetName()] = ""
				}
			}
		}
		return out, nil
	}
	all := func(want string) func() (bool, string) {
		return func() (bool, string) {
			r, err := graphReasons()
			if err != nil {
				return false, err.Error()
			}
			for _, reason := range r {
				if reason != want {
					return false, fmt.Sprint(r)
				}
			}
			return len(r) > 0, fmt.Sprint(r)
		}
	}
	poll.WaitFor(t, ctx, "every Sink and Source following the graph", 60*time.Second, all(audio.ReasonFollowing))
	waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return hasDevice(s, dp) && !deviceTainted(s, dp)
	})

	// Every taint any output of the slice carries from here on, as
	// sampled every 100 ms.
	var mu sync.Mutex
	seen := map[string]resourceapi.DeviceTaintEffect{}
	samples := 0
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			list, err := cluster.Client().ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.driver=" + audio.DriverName})
			if err == nil {
				mu.Lock()
				for _, s := range list.Items {
					for _, d := range s.Spec.Devices {
						for _, taint := range d.Taints {
							seen[d.Name+" "+taint.Key] = taint.Effect
						}
					}
				}
				samples++
				mu.Unlock()
			}
			select {
			case <-stopWatch:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	var before map[string]resourceapi.DeviceTaintEffect
	// The taints from before the stop are those of the first sample.
	poll.Until(t, "a first sample of the slice's taints", 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return samples > 0
	})
	mu.Lock()
	before = map[string]resourceapi.DeviceTaintEffect{}
	for k, v := range seen {
		before[k] = v
	}
	mu.Unlock()

	daemon := pw.PipeWire()
	t.Cleanup(func() { _ = syscall.Kill(daemon.Pid(), syscall.SIGCONT) })
	stopped := time.Now()
	must(t, syscall.Kill(daemon.Pid(), syscall.SIGSTOP))

	sawInvalid := false
	poll.WaitFor(t, ctx, "every Sink and Source saying PipeWire does not answer", 60*time.Second, func() (bool, string) {
		if gaugeValue(t, reg, "audio_observation_valid") == 0 {
			sawInvalid = true
		}
		return all(audio.ReasonPipeWireNotAnswering)()
	})
	notAnswering := time.Since(stopped)
	slice := waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return hasDevice(s, dp) && deviceTainted(s, dp)
	})
	tainted := time.Since(stopped)
	for _, d := range slice.Spec.Devices {
		if d.Name == dp && !hasTaintKey(d, audio.TaintNoSink) {
			t.Errorf("%s while PipeWire does not answer: taints %v, want %s", dp, d.Taints, audio.TaintNoSink)
		}
	}
	if gaugeValue(t, reg, "audio_observation_valid") == 0 {
		sawInvalid = true
	}
	if !sawInvalid {
		t.Error("audio_observation_valid{source=pipewire} never read 0 while PipeWire did not answer")
	}
	// Stopped for longer than a few probes: the answer stays the same.
	time.Sleep(3 * probe)
	if ok, r := all(audio.ReasonPipeWireNotAnswering)(); !ok {
		t.Errorf("a few probes later the conditions are %s", r)
	}

	resumed := time.Now()
	must(t, syscall.Kill(daemon.Pid(), syscall.SIGCONT))
	poll.WaitFor(t, ctx, "every Sink and Source following the graph again", 60*time.Second, all(audio.ReasonFollowing))
	following := time.Since(resumed)
	waitForDriverSlice(t, ctx, cluster, audio.DriverName, func(s *resourceapi.ResourceSlice) bool {
		return hasDevice(s, dp) && !deviceTainted(s, dp)
	})
	untainted := time.Since(resumed)
	if gaugeValue(t, reg, "audio_observation_valid") != 1 {
		t.Error("audio_observation_valid{source=pipewire} is not 1 after PipeWire answers again")
	}
	close(stopWatch)
	<-watched

	t.Logf("FIGURE SIGSTOP of PipeWire → every Sink and Source GraphCurrent=False (PipeWireNotAnswering): %s (target: probe %s + its 5 s timeout + a pass)", notAnswering.Round(time.Millisecond), probe)
	t.Logf("FIGURE SIGSTOP of PipeWire → the DP output tainted %s: %s", audio.TaintNoSink, tainted.Round(time.Millisecond))
	t.Logf("FIGURE SIGCONT → Following again: %s, untainted: %s (target: the next probe, %s, and a pass)", following.Round(time.Millisecond), untainted.Round(time.Millisecond), probe)
	mu.Lock()
	defer mu.Unlock()
	for k, effect := range seen {
		if _, was := before[k]; !was && effect != resourceapi.DeviceTaintEffectNoSchedule {
			t.Errorf("while PipeWire did not answer the slice carried %s with effect %s: it would evict consumers", k, effect)
		}
	}
}

// conditionsOf reads status.conditions of a Sink or Source.
func conditionsOf(u unstructured.Unstructured) ([]metav1.Condition, bool) {
	var s struct {
		Status struct {
			Conditions []metav1.Condition `json:"conditions"`
		} `json:"status"`
	}
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s) != nil {
		return nil, false
	}
	return s.Status.Conditions, true
}

// hasTaintKey reports whether d carries a taint with key.
func hasTaintKey(d resourceapi.Device, key string) bool {
	for _, t := range d.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
