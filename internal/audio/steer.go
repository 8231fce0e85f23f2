// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/mixer"
	"github.com/liken-sh/operators/internal/pipewire"
)

// SetVolumeFunc writes a PipeWire node's software volume and mute
// (pipewire.Remote.SetVolume in the pod; tests may count calls).
type SetVolumeFunc func(ctx context.Context, node uint32, w pipewire.VolumeWrite) error

// rewriteAfter is how long a volume the node does not show is left before
// it is written again. PipeWire 1.4.2 takes a write to a node that has
// never run but goes on showing the old value until it runs
// (pipewire.Observed.Stale), so a write on every graph change would be
// a loop.
const rewriteAfter = 30 * time.Second

// volumeWrite is the last volume written to an endpoint's node.
type volumeWrite struct {
	node uint32
	w    pipewire.VolumeWrite
	at   time.Time
}

// steerVolume writes spec.volume and spec.mute to the endpoint's node n
// when what the node shows differs. Absent fields are never written.
// Errors name the endpoint and node; they are counted here and reported
// by the caller.
func (o *operator) steerVolume(ctx context.Context, name string, spec audiov1.EndpointSpec, n *pipewire.Node) error {
	if n == nil || (spec.Volume == nil && spec.Mute == nil) || o.cfg.SetVolume == nil {
		return nil
	}
	obs := n.Observed()
	if last, ok := o.volumes[name]; ok && obs.Stale && last.node == n.ID {
		// A node that has not run shows its old values while a write
		// is already in effect: compare with what was written.
		if last.w.Gain != nil {
			v := pipewire.PercentOfGain(*last.w.Gain)
			obs.Volume = &v
		}
		if last.w.Mute != nil {
			m := *last.w.Mute
			obs.Mute = &m
		}
	}
	var w pipewire.VolumeWrite
	if spec.Volume != nil && (obs.Volume == nil || *obs.Volume != int(*spec.Volume)) {
		g, err := pipewire.GainOfPercent(int(*spec.Volume))
		if err != nil {
			return fmt.Errorf("%s: spec.volume: %w", name, err)
		}
		w.Gain, w.Channels = &g, n.VolumeChannels()
	}
	if spec.Mute != nil && (obs.Mute == nil || *obs.Mute != *spec.Mute) {
		m := *spec.Mute
		w.Mute = &m
	}
	if w.Gain == nil && w.Mute == nil {
		if !obs.Stale {
			delete(o.volumes, name)
		}
		return nil
	}
	now := time.Now()
	// The record keeps every field written to this node, so a mute
	// written after a volume does not make the volume look unwritten
	// (which, on a node that has not run, would write the two in turn
	// for ever).
	last, ok := o.volumes[name]
	if !ok || last.node != n.ID {
		last = volumeWrite{node: n.ID}
	}
	if (w.Gain == nil || sameFloat(last.w.Gain, w.Gain)) && (w.Mute == nil || samePtr(last.w.Mute, w.Mute)) &&
		now.Sub(last.at) < rewriteAfter {
		return nil
	}
	merged := last.w
	if w.Gain != nil {
		merged.Gain, merged.Channels = w.Gain, w.Channels
	}
	if w.Mute != nil {
		merged.Mute = w.Mute
	}
	o.volumes[name] = volumeWrite{node: n.ID, w: merged, at: now}
	if err := o.cfg.SetVolume(ctx, n.ID, w); err != nil {
		o.metrics.controlFailures.WithLabelValues(operationVolume).Inc()
		return fmt.Errorf("%s: setting volume/mute on node %d: %w", name, n.ID, err)
	}
	return nil
}

// observedVolume is what status.observed shows of a node's volume: the
// reading, except that a stale reading (a node that has not run yet) gives
// way to what this operator last wrote to that node, which PipeWire has
// taken without showing it.
func (o *operator) observedVolume(name string, n *pipewire.Node) (*int32, *bool) {
	vol, mute := ObservedVolume(n)
	if n == nil || !n.Observed().Stale {
		return vol, mute
	}
	if last, ok := o.volumes[name]; ok && last.node == n.ID {
		if last.w.Gain != nil {
			v := int32(pipewire.PercentOfGain(*last.w.Gain))
			vol = &v
		}
		if last.w.Mute != nil {
			m := *last.w.Mute
			mute = &m
		}
	}
	return vol, mute
}

func sameFloat(a, b *float64) bool {
	return (a == nil) == (b == nil) && (a == nil || math.Abs(*a-*b) < 1e-9)
}

func samePtr[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// steerControls writes spec.controls to the card through its control
// interface, each control whose value differs. A name the endpoint does
// not have, or a value the control refuses, is skipped and reported as a
// Warning Event on the object and a log line (once per distinct problem),
// never stops the other controls.
func (o *operator) steerControls(ctx context.Context, obj *corev1.ObjectReference, card int, spec audiov1.EndpointSpec, controls []mixer.Control) {
	if len(spec.Controls) == 0 {
		return
	}
	keys := make([]string, 0, len(spec.Controls))
	for k := range spec.Controls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// Unknown names are reported in one Event, so a long list is not
	// folded away by the Event recorder's aggregation.
	var unknown []string
	defer func() {
		if len(unknown) == 0 {
			return
		}
		shown := unknown
		more := ""
		if len(shown) > 10 {
			shown, more = shown[:10], fmt.Sprintf(" and %d more", len(unknown)-10)
		}
		o.warn(ctx, obj, "UnknownControl", fmt.Sprintf("spec.controls: this endpoint has no control %q%s (see status.capabilities); skipped", shown, more))
	}()
	var ctl alsa.Control
	defer func() {
		if ctl != nil {
			ctl.Close()
		}
	}()
	for _, key := range keys {
		want := spec.Controls[key]
		c, ok := mixer.Find(controls, key)
		if !ok {
			unknown = append(unknown, key)
			continue
		}
		v, err := c.ParseIntOrString(want)
		if err != nil {
			o.warn(ctx, obj, "InvalidControlValue", fmt.Sprintf("spec.controls[%q] = %q: %v; skipped", key, want.String(), err))
			continue
		}
		if slices.Equal(v.Ints, c.Value) {
			o.clearWarn(obj, key)
			o.controlsWritten[obj.Name+"/"+key] = want.String()
			continue
		}
		// A control is written when its spec value is new, not whenever
		// the card reads otherwise: two endpoints sharing a control with
		// different values (or a person's amixer) would otherwise be
		// fought over on every control event. The last spec written wins.
		if o.controlsWritten[obj.Name+"/"+key] == want.String() {
			continue
		}
		if ctl == nil {
			if ctl, err = o.cfg.Hardware.opener().Open(card); err != nil {
				ctl = nil
				o.metrics.controlFailures.WithLabelValues(operationControl).Inc()
				o.warn(ctx, obj, "ControlWriteFailed", fmt.Sprintf("spec.controls: card %d: %v", card, err))
				return
			}
		}
		o.controlsWritten[obj.Name+"/"+key] = want.String()
		if err := mixer.Write(ctl, c, v); err != nil {
			o.metrics.controlFailures.WithLabelValues(operationControl).Inc()
			o.warn(ctx, obj, "ControlWriteFailed", fmt.Sprintf("spec.controls[%q] = %s: %v", key, want.String(), err))
			continue
		}
		o.clearWarn(obj, key)
	}
}

// warn records a Warning Event on obj and logs it, once per distinct
// message for that object, so a bad spec is reported when it appears and
// not on every pass.
func (o *operator) warn(ctx context.Context, obj *corev1.ObjectReference, reason, msg string) {
	key := obj.Kind + "/" + obj.Name + "/" + msg
	if o.warned[key] {
		return
	}
	o.warned[key] = true
	klog.FromContext(ctx).Info("Skipped part of a spec", "kind", obj.Kind, "name", obj.Name, "reason", reason, "problem", msg)
	if o.recorder != nil {
		o.recorder.Event(obj, corev1.EventTypeWarning, reason, msg)
	}
}

// clearWarn forgets the warnings of obj about control key, so the same
// problem coming back is reported again.
func (o *operator) clearWarn(obj *corev1.ObjectReference, key string) {
	prefix := obj.Kind + "/" + obj.Name + "/spec.controls[" + fmt.Sprintf("%q", key)
	for k := range o.warned {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			delete(o.warned, k)
		}
	}
}
