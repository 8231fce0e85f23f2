// SPDX-License-Identifier: Apache-2.0

package dra

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"github.com/liken-sh/operators/test/poll"
)

// recorder is a PublishFunc that remembers every write.
type recorder struct {
	mu     sync.Mutex
	writes []resourceslice.DriverResources
	times  []time.Time
}

func (r *recorder) publish(_ context.Context, res resourceslice.DriverResources) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, res)
	r.times = append(r.times, time.Now())
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.writes)
}

func startPublisher(t testing.TB, quiet, capWait time.Duration) (*publisher, *recorder) {
	rec := &recorder{}
	p := newPublisher("node-1", quiet, capWait, rec.publish, newMetrics(prometheus.NewRegistry(), "test.liken.sh"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return p, rec
}

func devicesN(n int, tag string) []Device {
	out := make([]Device, n)
	for i := range out {
		out[i] = Device{Name: fmt.Sprintf("dev-%03d", i), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"tag": String(tag)}}
	}
	return out
}

// The publisher tests run in a synctest bubble (pkg.go.dev/testing/synctest):
// the settle window's clock is fake and moves only when every goroutine
// of the test waits, so quiet times, caps and bursts are exact however
// loaded the host is.

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, 30*time.Second, cond)
}

func TestPublisherSettlesBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, rec := startPublisher(t, 50*time.Millisecond, time.Second)
		for i := range 20 {
			p.set(devicesN(3, fmt.Sprint(i)))
		}
		waitFor(t, "one write", func() bool { return rec.count() == 1 })
		time.Sleep(150 * time.Millisecond)
		if n := rec.count(); n != 1 {
			t.Fatalf("a burst of 20 changes made %d writes, want 1", n)
		}
		got := rec.writes[0].Pools["node-1"].Slices[0].Devices[0].Attributes["tag"].StringValue
		if *got != "19" {
			t.Fatalf("published tag %q, want the last state 19", *got)
		}
	})
}

func TestPublisherSkipsUnchanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, rec := startPublisher(t, 20*time.Millisecond, time.Second)
		p.set(devicesN(2, "a"))
		waitFor(t, "first write", func() bool { return rec.count() == 1 })
		// Same content in another order: no write.
		d := devicesN(2, "a")
		d[0], d[1] = d[1], d[0]
		p.set(d)
		time.Sleep(100 * time.Millisecond)
		if n := rec.count(); n != 1 {
			t.Fatalf("unchanged content was written again (%d writes)", n)
		}
		// A taint is a change.
		d[0].Taints = []Taint{{Key: "test.liken.sh/gone", Effect: TaintNoExecute}}
		p.set(d)
		waitFor(t, "second write", func() bool { return rec.count() == 2 })
	})
}

func TestPublisherCapBoundsDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Changes every 10 ms never leave a quiet gap of 50 ms; the cap of
		// 200 ms must still force writes out.
		p, rec := startPublisher(t, 50*time.Millisecond, 200*time.Millisecond)
		start := time.Now()
		for i := 0; time.Since(start) < 700*time.Millisecond; i++ {
			p.set(devicesN(1, fmt.Sprint(i)))
			time.Sleep(10 * time.Millisecond)
		}
		n := rec.count()
		if n < 2 || n > 4 {
			t.Fatalf("700 ms of constant change with a 200 ms cap made %d writes, want 2..4", n)
		}
	})
}

// TestPublisherQuietIgnoresRepeats: an operator sets its devices on every
// pass, and a pass that changes nothing must not count as a change: a
// real change is written once the quiet time has passed, although the
// same set keeps arriving every 20 ms, not only when the cap forces it.
func TestPublisherQuietIgnoresRepeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, rec := startPublisher(t, 100*time.Millisecond, 3*time.Second)
		p.set(devicesN(1, "old"))
		waitFor(t, "first write", func() bool { return rec.count() == 1 })
		changed := time.Now()
		for time.Since(changed) < 1500*time.Millisecond {
			p.set(devicesN(1, "new"))
			time.Sleep(20 * time.Millisecond)
		}
		if n := rec.count(); n != 2 {
			t.Fatalf("%d writes after 1.5 s of repeats of one change (quiet 100 ms, cap 3 s), want 2", n)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if took := rec.times[1].Sub(changed); took > time.Second {
			t.Fatalf("the change was written after %s, want about the 100 ms quiet time", took)
		}
	})
}

func TestPublisherSplitsAndEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, rec := startPublisher(t, 10*time.Millisecond, time.Second)
		p.set(devicesN(130, "x"))
		waitFor(t, "write", func() bool { return rec.count() == 1 })
		sl := rec.writes[0].Pools["node-1"].Slices
		if len(sl) != 3 || len(sl[0].Devices) != 64 || len(sl[2].Devices) != 2 {
			t.Fatalf("130 devices split as %d slices", len(sl))
		}
		p.set(nil)
		waitFor(t, "empty write", func() bool { return rec.count() == 2 })
		if sl := rec.writes[1].Pools["node-1"].Slices; len(sl) != 1 || len(sl[0].Devices) != 0 {
			t.Fatalf("no devices must publish one empty slice, got %+v", sl)
		}
	})
}

func TestDeviceValidation(t *testing.T) {
	p := newPublisher("n", 0, 0, nil, newMetrics(nil, "t"))
	for name, devs := range map[string][]Device{
		"empty name": {{Name: ""}},
		"duplicate":  {{Name: "a"}, {Name: "a"}},
		"effect":     {{Name: "a", Taints: []Taint{{Key: "k/x", Effect: "Sometimes"}}}},
		"empty key":  {{Name: "a", Taints: []Taint{{Effect: TaintNoSchedule}}}},
	} {
		if _, err := p.apiDevices(devs); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
