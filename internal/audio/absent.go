// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/internal/safetext"
)

// ReasonNodeNotMade is the Ready reason of a declared output PipeWire
// could not make a node for (its PCM could not be opened when PipeWire
// started) for a reason other than a busy device; ReasonDeviceBusy says
// the device was busy. ReasonNodeMade is the Normal Event once the node
// is made after all.
const (
	ReasonNodeNotMade = "NodeNotMade"
	ReasonNodeMade    = "NodeMade"
)

// Label values of audio_device_busy_retries_total: how a busy device was
// retried.
const (
	retrySuspend = "suspend" // a node in error, suspended (retryBusy)
	retryCreate  = "create"  // a node the claim gate asked the adapter factory for again
)

// absentSeen is what the operator last reported of a declared node the
// claim gate records as absent.
type absentSeen struct {
	since    time.Time
	attempts int
}

// absentNode reports a declared output whose node PipeWire does not hold
// and the claim gate is asking for again (gate.Absent, from the record
// the latest pass read): the Ready condition that says why and how often
// it was tried, a Warning Event once per absence, the gate's attempts
// counted in audio_device_busy_retries_total{how="create"}. It returns
// nil when the record does not list the output, and sends the Normal
// NodeMade Event when an output it reported has its node again. ref is
// the output's Sink or Source (nil: none yet; no Event).
func (o *operator) absentNode(ctx context.Context, e Endpoint, node *pipewire.Node, ref *corev1.ObjectReference, now time.Time) *metav1.Condition {
	seen, reported := o.absentSeen[e.Name]
	a, absent := o.absent[e.NodeName]
	if node != nil || !absent {
		if reported && node != nil {
			delete(o.absentSeen, e.Name)
			msg := fmt.Sprintf("PipeWire holds this output's node again, made after %d failed attempts since %s", seen.attempts, seen.since.UTC().Format(time.RFC3339))
			klog.FromContext(ctx).Info("A declared node is made after all", "output", e.Name, "node", node.ID, "attempts", seen.attempts)
			if ref != nil && o.recorder != nil {
				o.recorder.Event(ref, corev1.EventTypeNormal, ReasonNodeMade, msg)
			}
		}
		return nil
	}
	subs, err := alsa.ReadSubstreams(o.cfg.Hardware.procAsound(), e.PCM.Card(), -1)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("The card's PCM states cannot be read", "card", e.PCM.Card(), "problem", err.Error())
	}
	c := absentReady(e, a, subs, o.cfg.Hardware.command, now)
	if !reported || !seen.since.Equal(a.Since) {
		seen = absentSeen{since: a.Since}
		klog.FromContext(ctx).Info("PipeWire holds no node for a declared output; the claim gate asks for it again", "output", e.Name, "reason", c.Reason, "why", c.Message)
		if ref != nil && o.recorder != nil {
			o.recorder.Event(ref, corev1.EventTypeWarning, c.Reason, c.Message)
		}
	}
	if a.Attempts > seen.attempts {
		o.metrics.busyRetries.WithLabelValues(e.Name, retryCreate).Add(float64(a.Attempts - seen.attempts))
		seen.attempts = a.Attempts
	}
	o.absentSeen[e.Name] = seen
	return &c
}

// absentReady is the Ready condition of output e whose node the claim
// gate records as absent (a), from its card's substreams as
// /proc/asound shows them (subs; none where /proc/asound is masked, as in
// a container) and command, which names a pid's program.
func absentReady(e Endpoint, a gate.Absent, subs []alsa.Substream, command func(pid int) string, now time.Time) metav1.Condition {
	stream := alsa.Playback
	if e.Capture() {
		stream = alsa.Capture
	}
	var held, others []string
	for _, s := range subs {
		if !s.Open {
			continue
		}
		who := "a process outside this container's view"
		if s.OwnerPID > 0 {
			who = "pid " + strconv.Itoa(s.OwnerPID)
			if name := command(s.OwnerPID); name != "" {
				who += " (" + name + ")"
			}
		}
		switch {
		case s.Device == e.PCM.Device() && s.Stream == stream:
			held = append(held, who)
		case s.Stream == alsa.Playback && stream == alsa.Playback:
			others = append(others, fmt.Sprintf("PCM %d by %s", s.Device, who))
		}
	}
	pcm := pipewire.DefaultALSAPath(e.PCM.Card(), e.PCM.Device())
	reason, why := ReasonNodeNotMade, "could not be opened"
	if a.Busy() || len(held) > 0 {
		reason, why = ReasonDeviceBusy, "is busy"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "PipeWire holds no node for this output: its PCM %s %s", pcm, why)
	if r := a.Reason(); r != "" {
		fmt.Fprintf(&b, " (%s)", r)
	}
	switch {
	case len(held) > 0:
		fmt.Fprintf(&b, ", held by %s", strings.Join(held, ", "))
	case a.Busy() && len(others) > 0:
		fmt.Fprintf(&b, "; the card's other outputs are open (%s), and on HDA HDMI they share the card's converters", strings.Join(others, ", "))
	case a.Busy():
		b.WriteString(": another program holds it, or another HDMI/DP output of the card holds the converter it needs")
	}
	fmt.Fprintf(&b, "; the node is asked for again, %d times since %s, the next in %s",
		a.Attempts, a.Since.UTC().Format(time.RFC3339), max(a.Next.Sub(now), 0).Round(time.Second))
	return metav1.Condition{Type: audiov1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: clipMessage(b.String())}
}

// procAsound is the kernel's /proc/asound under h.Proc.
func (h Hardware) procAsound() string {
	return filepath.Join(h.proc(), "asound")
}

func (h Hardware) proc() string {
	if h.Proc == "" {
		return "/proc"
	}
	return h.Proc
}

// command is the program name of pid (its /proc/<pid>/comm), "" when it
// cannot be read.
func (h Hardware) command(pid int) string {
	b, err := os.ReadFile(filepath.Join(h.proc(), strconv.Itoa(pid), "comm"))
	if err != nil {
		return ""
	}
	return safetext.Clean(strings.TrimSpace(string(b)), 64)
}
