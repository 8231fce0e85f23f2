package audio

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/mixer"
	"github.com/liken-sh/operators/internal/pipewire"
)

// SetVolumeFunc sets a PipeWire node's software volume: gain (linear,
// 1 is unity) on each of channels, and mute; a nil argument is left as
// it is. It is pipewire.Remote's in the pod; tests may count calls.
type SetVolumeFunc func(ctx context.Context, node uint32, channels int, gain *float64, mute *bool) error

// rewriteAfter is how long a volume the node did not take is left before
// it is written again: PipeWire may report an idle node's old value, and
// a write on every graph change would be a loop.
const rewriteAfter = 30 * time.Second

// volumeWrite is the last volume written to an endpoint's node.
type volumeWrite struct {
	node uint32
	gain *float64
	mute *bool
	at   time.Time
}

// steerVolume writes spec.volume and spec.mute to the endpoint's node n
// when what the node reports differs. Absent fields are never written.
// Errors name the endpoint; they are counted and reported by the caller.
func (o *operator) steerVolume(ctx context.Context, name string, spec audiov1.EndpointSpec, n *pipewire.Node) error {
	if n == nil || (spec.Volume == nil && spec.Mute == nil) || o.cfg.SetVolume == nil {
		return nil
	}
	vol, mute := ObservedVolume(n)
	var w volumeWrite
	if spec.Volume != nil && (vol == nil || *vol != *spec.Volume) {
		g := float64(*spec.Volume) / 100
		w.gain = &g
	}
	if spec.Mute != nil && (mute == nil || *mute != *spec.Mute) {
		m := *spec.Mute
		w.mute = &m
	}
	if w.gain == nil && w.mute == nil {
		delete(o.volumes, name)
		return nil
	}
	w.node, w.at = n.ID, time.Now()
	if last, ok := o.volumes[name]; ok && last.node == w.node && sameFloat(last.gain, w.gain) &&
		samePtr(last.mute, w.mute) && w.at.Sub(last.at) < rewriteAfter {
		return nil
	}
	o.volumes[name] = w
	channels := 2
	if n.Volume != nil && len(n.Volume.ChannelVolumes) > 0 {
		channels = len(n.Volume.ChannelVolumes)
	} else if n.Format != nil && n.Format.Channels > 0 {
		channels = n.Format.Channels
	}
	if err := o.cfg.SetVolume(ctx, n.ID, channels, w.gain, w.mute); err != nil {
		o.metrics.controlFailures.WithLabelValues(operationVolume).Inc()
		return fmt.Errorf("%s: setting volume/mute on node %d: %w", name, n.ID, err)
	}
	return nil
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
			o.warn(ctx, obj, "UnknownControl", fmt.Sprintf("spec.controls[%q]: this endpoint has no such control (see status.capabilities); skipped", key))
			continue
		}
		v, err := c.ParseIntOrString(want)
		if err != nil {
			o.warn(ctx, obj, "InvalidControlValue", fmt.Sprintf("spec.controls[%q] = %s: %v; skipped", key, want.String(), err))
			continue
		}
		if equalInts(v.Ints, c.Value) {
			o.clearWarn(obj, key)
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
		if err := mixer.Write(ctl, c, v); err != nil {
			o.metrics.controlFailures.WithLabelValues(operationControl).Inc()
			o.warn(ctx, obj, "ControlWriteFailed", fmt.Sprintf("spec.controls[%q] = %s: %v", key, want.String(), err))
			continue
		}
		o.clearWarn(obj, key)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
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
	o.loggerFor(ctx).Info("Skipped part of a spec", "kind", obj.Kind, "name", obj.Name, "reason", reason, "problem", msg)
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
