// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/safetext"
)

// Reasons of the Events on a claim that holds a speaker the operator
// connects.
const (
	// ReasonSpeakerNotAnswering: the first connect of the speaker failed
	// (switched off, out of range); more follow with backoff.
	ReasonSpeakerNotAnswering = "SpeakerNotAnswering"
	// ReasonSpeakerConnected: a connect of the speaker succeeded.
	ReasonSpeakerConnected = "SpeakerConnected"
)

// reconnectMetrics are the reconnect's Prometheus series.
type reconnectMetrics struct {
	attempts     *prometheus.CounterVec
	reconnecting prometheus.Gauge
}

// newReconnectMetrics registers with r (nil: the series exist and go
// nowhere):
//
//	bluetooth_speaker_connect_attempts_total{result} Device1.Connect calls for held speakers: success, error
//	bluetooth_speakers_reconnecting                  held speakers that are paired, trusted and not connected
func newReconnectMetrics(r prometheus.Registerer) *reconnectMetrics {
	m := &reconnectMetrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bluetooth_speaker_connect_attempts_total",
			Help: "Device1.Connect calls the operator made for a paired, trusted speaker that a claim of audio.liken.sh holds and that was not connected, by result (success, error)."}, []string{"result"}),
		reconnecting: prometheus.NewGauge(prometheus.GaugeOpts{Name: "bluetooth_speakers_reconnecting",
			Help: "Speakers that a claim of audio.liken.sh holds and that are paired, trusted and not connected: those the operator is connecting."}),
	}
	if r != nil {
		r.MustRegister(m.attempts, m.reconnecting)
	}
	return m
}

// reconnector connects the speakers that claims of the audio driver hold
// while they are not connected (Reconnectable), as reconnectSchedule
// times it. Each attempt runs on its own goroutine, so a page that goes
// unanswered (5.12 s, and Device1.Connect is bounded by
// bluez.ConnectTimeout) holds up neither the operator's passes nor
// another speaker. Each attempt is logged once and counted; the first
// failure and every success are Events on the holding claims.
type reconnector struct {
	node     string
	ceiling  time.Duration
	connect  func(context.Context, dbus.ObjectPath) error // Device1.Connect
	held     func() map[string][]claimHolder              // audioClaims.held
	recorder events.EventRecorder                         // nil: no Events
	metrics  *reconnectMetrics
	wake     chan struct{}

	mu      sync.Mutex
	sched   *reconnectSchedule
	devices []bluez.Device // the latest pass's, of the served adapter
}

func newReconnector(node string, first, ceiling time.Duration, connect func(context.Context, dbus.ObjectPath) error,
	held func() map[string][]claimHolder, recorder events.EventRecorder, m *reconnectMetrics) *reconnector {
	return &reconnector{node: node, ceiling: ceiling, connect: connect, held: held, recorder: recorder, metrics: m,
		wake: make(chan struct{}, 1), sched: newReconnectSchedule(first, ceiling)}
}

// observe hands over the devices of a pass (BlueZ's, of the served
// adapter) and wakes the reconnector. Safe on a nil reconnector.
func (r *reconnector) observe(devices []bluez.Device) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.devices = slices.Clone(devices)
	r.mu.Unlock()
	r.poke()
}

// poke wakes the reconnector without blocking.
func (r *reconnector) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// run plans and starts attempts whenever it is woken (a pass, a change
// of the claims, an attempt's end) or an attempt falls due, until ctx
// ends; it returns once the attempts in flight have returned, which they
// do when ctx ends.
func (r *reconnector) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		held := r.held()
		now := time.Now()
		r.mu.Lock()
		start, next := r.sched.plan(now, r.devices, held)
		r.metrics.reconnecting.Set(float64(r.sched.reconnecting()))
		r.mu.Unlock()
		for _, a := range start {
			wg.Go(func() { r.attempt(ctx, a) })
		}
		timer.Stop()
		if !next.IsZero() {
			timer.Reset(next.Sub(now))
		}
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-timer.C:
		}
	}
}

// attempt makes one Device1.Connect and reports it.
func (r *reconnector) attempt(ctx context.Context, a connectAttempt) {
	err := r.connect(ctx, a.Path)
	if ctx.Err() != nil {
		// The operator is stopping: the call was cut short and says
		// nothing of the speaker.
		return
	}
	r.mu.Lock()
	out := r.sched.done(a, time.Now(), err)
	r.mu.Unlock()
	defer r.poke()
	r.metrics.attempts.WithLabelValues(result(err)).Inc()
	logger := klog.FromContext(ctx).WithValues("speaker", a.Address, "name", a.Alias, "attempt", a.Number, "claims", holderNames(a.Holders))
	switch {
	case err == nil:
		logger.Info("Connected a speaker that a claim holds")
		r.event(a, ReasonSpeakerConnected, fmt.Sprintf("connected speaker %s, which this claim holds, at attempt %d", a.speaker(), a.Number))
	case !out.Current:
		logger.Info("A speaker did not connect; no claim holds it any more, or it connected meanwhile", "err", err)
	default:
		logger.Info("A speaker that a claim holds did not connect (switched off or out of range?); trying again", "err", err, "after", out.Wait)
		if a.Number == 1 {
			r.event(a, ReasonSpeakerNotAnswering, fmt.Sprintf(
				"speaker %s, which this claim holds, is paired and not connected, and did not answer (%s); the Bluetooth operator on node %s connects it again in %s, then with waits doubling up to %s, so switching it on is enough",
				a.speaker(), safetext.Clean(err.Error(), 256), r.node, out.Wait, r.ceiling))
		}
	}
}

// event puts a Normal Event with reason and note on every claim that
// holds the speaker of a.
func (r *reconnector) event(a connectAttempt, reason, note string) {
	if r.recorder == nil {
		return
	}
	for _, h := range a.Holders {
		claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: h.Name, UID: h.UID}}
		r.recorder.Eventf(claim, nil, corev1.EventTypeNormal, reason, "Connect", "%s", safetext.Clean(note, 1024))
	}
}

// speaker names the speaker of a in an Event: its address, and its name
// where BlueZ has one.
func (a connectAttempt) speaker() string {
	if a.Alias == "" {
		return a.Address
	}
	return fmt.Sprintf("%s (%s)", a.Address, a.Alias)
}

// holderNames is namespace/name of each holder.
func holderNames(hs []claimHolder) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Namespace + "/" + h.Name
	}
	return out
}

// result is the result label of an attempt.
func result(err error) string {
	if err != nil {
		return "error"
	}
	return "success"
}

// startReconnect starts following the claims of the audio driver's pool
// on this node (the pool is named after the node) and the reconnector
// that connects the speakers they hold. The returned function stops both
// and waits for them.
func (o *operator) startReconnect(ctx context.Context) (func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	r := newReconnector(o.cfg.NodeName, o.cfg.ReconnectFirst, o.cfg.ReconnectCeiling, o.client.Connect, nil, o.recorder,
		newReconnectMetrics(o.cfg.Registerer))
	claims, err := watchAudioClaims(ctx, o.cfg.KubeClient, o.cfg.NodeName, r.poke)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watching the ResourceClaims that hold speakers: %w", err)
	}
	r.held = claims.held
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.run(ctx)
	}()
	o.reconnect = r
	return func() {
		cancel()
		<-done
		claims.stop()
	}, nil
}
