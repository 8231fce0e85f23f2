// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/internal/pipewire/native"
)

// Reasons of the GraphCurrent condition.
const (
	// ReasonFollowing: the graph monitor prints PipeWire's changes.
	ReasonFollowing = "Following"
	// ReasonMonitorStale: PipeWire answered a probe and the monitor
	// printed nothing of it; the monitor is killed and started again.
	ReasonMonitorStale = "MonitorStale"
	// ReasonPipeWireNotAnswering: PipeWire did not answer the probe's own
	// connection.
	ReasonPipeWireNotAnswering = "PipeWireNotAnswering"
	// ReasonNoGraph: there is no PipeWire to read (it went away, or
	// never answered).
	ReasonNoGraph = "NoGraph"
)

// Bounds of one probe of the graph monitor.
const (
	// probeTimeout bounds the probe's connection and round trip; PipeWire
	// answers in well under a millisecond when it is not stuck.
	probeTimeout = 5 * time.Second
	// probeGrace is how long the monitor gets, after PipeWire has
	// answered the probe, to print the batch the probe's client makes.
	probeGrace = 2 * time.Second
)

// probeClientName is the application.name of the probe's client, as
// pw-dump and pw-top show it.
const probeClientName = "audio-operator graph probe"

// graphStale is why the graph the passes work from may not be
// PipeWire's: a GraphCurrent reason and message.
type graphStale struct {
	Reason, Message string
	since           time.Time // when it was found
}

// probeResult is what one probe found: nil stale when the monitor is
// current (at is then when that was known).
type probeResult struct {
	stale *graphStale
	at    time.Time
}

// probeMonitor tells an idle graph from a stuck monitor. `pw-dump -m`
// prints only changes, so a graph nobody touches is silent; but every
// client that connects is a change (the daemon registers a Client object
// for it), so the probe connects to PipeWire's socket over the native
// protocol (src/pipewire/core.h: hello, then a sync answered by done),
// and holds the connection until the monitor has printed a batch past
// before, or for probeGrace. A connection or sync that gets no answer
// means PipeWire itself is not answering; an answer the monitor does not
// follow means the monitor is stuck (stopped, or blocked on its output).
// The probe's client is no node, link or device, so the batches it
// makes do not change the graph's Revision and wake no pass (follow).
func (o *operator) probeMonitor(ctx context.Context, mon *pipewire.Monitor, before int) probeResult {
	dial, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	conn, err := native.DialCore(dial, filepath.Join(o.cfg.runtimeDir(), SocketName),
		map[string]string{"application.name": probeClientName})
	if err == nil {
		defer conn.Close()
		err = conn.Roundtrip(dial)
	}
	if err != nil {
		if ctx.Err() != nil {
			return probeResult{at: time.Now()}
		}
		return probeResult{stale: &graphStale{Reason: ReasonPipeWireNotAnswering, since: time.Now(),
			Message: clipMessage("PipeWire did not answer the operator's probe, so its graph may have changed unseen: " + err.Error())}}
	}
	deadline := time.NewTimer(probeGrace)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if mon.Batches() > before {
			return probeResult{at: time.Now()}
		}
		select {
		case <-ctx.Done():
			return probeResult{at: time.Now()}
		case <-mon.Done():
			// The monitor ended: follow sees its closed channel.
			return probeResult{at: time.Now()}
		case <-deadline.C:
			return probeResult{stale: &graphStale{Reason: ReasonMonitorStale, since: time.Now(),
				Message: fmt.Sprintf("the graph monitor (pw-dump -m, pid %d) printed nothing within %s of a client connecting while PipeWire answered; it is killed and started again",
					mon.Pid(), probeGrace)}}
		case <-tick.C:
		}
	}
}

// current records that the graph is PipeWire's as of at, and logs the
// end of a stale spell; it reports whether one ended, which the Sinks
// and Sources learn from the next pass.
func (o *operator) current(ctx context.Context, at time.Time) (wasStale bool) {
	if o.stale != nil {
		klog.FromContext(ctx).Info("The PipeWire graph is current again", "wasStale", o.stale.Reason,
			"staleFor", at.Sub(o.stale.since).Round(time.Millisecond))
		o.stale = nil
		wasStale = true
	}
	o.metrics.observed(sourcePipeWire, true, at)
	return wasStale
}

// goneStale records a stale graph (last: when it was last known current).
func (o *operator) goneStale(ctx context.Context, s *graphStale, last time.Time) {
	if o.stale == nil || o.stale.Reason != s.Reason {
		klog.FromContext(ctx).Error(nil, "The PipeWire graph the operator follows may be stale", "reason", s.Reason,
			"detail", s.Message, "lastCurrent", time.Since(last).Round(time.Millisecond))
	}
	if o.stale != nil {
		s.since = o.stale.since
	}
	o.stale = s
	o.metrics.observed(sourcePipeWire, false, time.Now())
}

// graphCondition is the GraphCurrent condition of a pass against g (nil:
// no PipeWire answers, which PipeWireNotAnswering says more precisely
// while the probe finds it so). Its message changes only with its reason, so a
// healthy endpoint's status is not rewritten.
func (o *operator) graphCondition(g *pipewire.Graph) metav1.Condition {
	c := metav1.Condition{Type: audiov1.ConditionGraphCurrent, Status: metav1.ConditionTrue, Reason: ReasonFollowing,
		Message: "the operator follows PipeWire's graph"}
	switch {
	case o.stale != nil && (g != nil || o.stale.Reason == ReasonPipeWireNotAnswering):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, o.stale.Reason, o.stale.Message
	case g == nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonNoGraph, "no PipeWire answers; nothing of its graph is known"
	}
	return c
}
