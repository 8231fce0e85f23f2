// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"k8s.io/klog/v2"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/audio/objects"
	"github.com/liken-sh/operators/internal/audio/speakers"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pipewire"
)

// DefaultCodecWait bounds prepare's wait for a speaker's node to run the
// codec it was switched to: the bluez5 plugin reconfigures the A2DP
// transport with the speaker and builds the node again.
const DefaultCodecWait = 10 * time.Second

// SetCodecFunc switches a Bluetooth device (a PipeWire device id) to a
// codec (its SPA id): pipewire.Remote.SetCodec in the pod.
type SetCodecFunc func(ctx context.Context, device uint32, codec int) error

// SetRouteVolumeFunc writes volume and mute to a device's route:
// pipewire.Remote.SetRouteVolume in the pod.
type SetRouteVolumeFunc func(ctx context.Context, device uint32, route pipewire.Route, w pipewire.VolumeWrite) error

// startSpeakers follows BlueZ on the bus the claim delivered; with none,
// the reader holds no speakers.
func (o *operator) startSpeakers(ctx context.Context) {
	o.speakerReader = speakers.Start(ctx, speakers.Options{Address: o.cfg.BusAddress, OnChange: o.poke})
	if o.cfg.BusAddress == "" {
		klog.FromContext(ctx).V(2).Info("No media bus delivered (DBUS_SYSTEM_BUS_ADDRESS unset): no Bluetooth speakers")
	}
}

// speakerPass joins the speakers BlueZ reports with graph g, keeps them
// for prepare and refreshes the CDI spec of every prepared claim whose
// speaker's node was renamed.
func (o *operator) speakerPass(ctx context.Context, g *pipewire.Graph) []SpeakerEndpoint {
	var list []speakers.Speaker
	if o.speakerReader != nil {
		list, _ = o.speakerReader.Speakers()
	}
	eps := SpeakerEndpoints(list, g)
	byName := make(map[string]SpeakerEndpoint, len(eps))
	for _, e := range eps {
		byName[e.Name()] = e
	}
	o.mu.Lock()
	o.speakerEPs = byName
	o.mu.Unlock()
	o.refreshSpeakerSpecs(ctx, eps)
	return eps
}

// refreshSpeakerSpecs rewrites the CDI spec of each prepared claim on a
// speaker whose node.name changed (a codec or profile change builds the
// node again, and PipeWire's bluez5 plugin may name it anew), so the next
// container of the claim's pod gets the node that exists. A speaker with
// no node keeps its last name.
func (o *operator) refreshSpeakerSpecs(ctx context.Context, eps []SpeakerEndpoint) {
	renamed := map[string]string{} // old node.name: new
	changed := false
	for _, e := range eps {
		if n := e.NodeName(); n != "" && o.speakerNodes[e.Name()] != n {
			if old := o.speakerNodes[e.Name()]; old != "" {
				renamed[old] = n
			}
			o.speakerNodes[e.Name()] = n
			changed = true
		}
	}
	if !changed || o.driver == nil {
		return
	}
	current := maps.Clone(o.speakerNodes)
	// Every device of a claim carries the claim's whole delivery
	// (Delivery), so each is renamed, not only the speaker's own. A name
	// this process did not see change (it started since) is known only
	// in a claim that names one node: the speaker's.
	_, err := o.driver.RefreshEdits(ctx, func(device string, prepared dra.ContainerEdits) (dra.ContainerEdits, bool) {
		out, changed := prepared, false
		for old, n := range renamed {
			var ok bool
			if out, ok = renameNode(out, old, n); ok {
				changed = true
			}
		}
		if n, ok := current[device]; ok && !changed {
			if names := namedNodes(out); len(names) == 1 && names[0] != n {
				out, changed = renameNode(out, names[0], n)
			}
		}
		return out, changed
	})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Refreshing the CDI specs of claims on speakers")
	}
}

// Offered implements Codecs from the latest pass.
func (o *operator) Offered(device string) ([]string, string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.speakerEPs[device]
	if !ok {
		return nil, "", false
	}
	return e.Codecs(), e.Codec(), true
}

// Switch implements Codecs: it writes the codec to the speaker's bluez5
// device and reads the graph every 250 ms, bounded by CodecWait, until the
// speaker's node (rebuilt under a new id) runs it. While it runs, the Sink's resting codec is
// not applied to the speaker. A media bus that goes away meanwhile fails
// this claim alone.
func (o *operator) Switch(ctx context.Context, device, codec string) error {
	o.mu.Lock()
	e, ok := o.speakerEPs[device]
	o.codecBusy[device]++
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		o.codecBusy[device]--
		o.mu.Unlock()
	}()
	if !ok || e.Device == nil {
		return fmt.Errorf("speaker %s has no Bluetooth device in PipeWire; codec %s cannot be set", device, codec)
	}
	id := -1
	for _, c := range e.Device.Codecs {
		if c.Name == codec {
			id = c.ID
		}
	}
	if id < 0 {
		return fmt.Errorf("speaker %s does not offer codec %q; it offers %s", device, codec, strings.Join(e.Codecs(), ", "))
	}
	if err := o.cfg.SetCodec(ctx, e.Device.ID, id); err != nil {
		return fmt.Errorf("speaker %s: switching to codec %s: %w", device, codec, err)
	}
	klog.FromContext(ctx).Info("Speaker switched to a claim's codec", "speaker", device, "codec", codec, "from", e.Codec())
	// The graph is read here rather than waited for from a pass: a pass
	// takes the driver's state, which this prepare holds.
	deadline := time.Now().Add(o.cfg.CodecWait)
	addr := e.Address.String()
	running := e.Codec()
	for {
		read, cancel := context.WithTimeout(ctx, 2*time.Second)
		g, err := o.cfg.Remote.Dump(read)
		cancel()
		if err == nil {
			// Only a node the claim gate recorded as the speaker's is
			// taken for it, as in the passes (trustedGraph).
			trust, _ := gate.ReadTrusted(o.cfg.runtimeDir())
			g = trustedSpeakers(g, trust)
			if n, d, ok := g.SpeakerNode(addr); ok {
				running = n.Props[pipewire.PropBlueZCodec]
				if running == codec {
					o.mu.Lock()
					if cur, ok := o.speakerEPs[device]; ok {
						cur.Node, cur.Device = &n, &d
						o.speakerEPs[device] = cur
					}
					o.mu.Unlock()
					return nil
				}
			}
		}
		if _, following := o.speakerReader.Speakers(); !following {
			return fmt.Errorf("speaker %s: the media bus went away while switching to codec %s", device, codec)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("speaker %s: PipeWire did not run codec %s within %s (it runs %q)", device, codec, o.cfg.CodecWait, running)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// codecWrite is the last resting codec written to a speaker.
type codecWrite struct {
	codec string
	at    time.Time
}

// syncSpeakers keeps each speaker's Sink: it applies spec.volume and
// spec.mute to the speaker's route at once, spec.codec while no claim
// holds the speaker, and writes the status (GraphCurrent from graph g).
func (o *operator) syncSpeakers(ctx context.Context, g *pipewire.Graph, eps []SpeakerEndpoint, holders map[string]dra.ClaimRef, seen map[string]bool) error {
	logger := klog.FromContext(ctx)
	for _, e := range eps {
		name := e.Name()
		seen[name] = true
		start := time.Now()
		s, ok, err := o.store.Sink(ctx, name)
		// A Sink read less the fields that do not decode is kept in step
		// all the same, and the fields are reported in SpecApplied.
		invalid, err := objects.Partial(err)
		if err != nil {
			o.problem(logger, name, err)
		}
		var holder *dra.ClaimRef
		if h, held := holders[name]; held && h.Name != "" {
			holder = &h
		}
		elsewhere := ""
		if ok && s.Status.Node != "" && s.Status.Node != o.cfg.Node {
			elsewhere = s.Status.Node
		}
		if ok && err == nil && elsewhere == "" {
			ref := objects.Ref(objects.SinkKind, s)
			if err := o.steerSpeakerVolume(ctx, name, s.Spec.EndpointSpec, e); err != nil {
				o.warn(ctx, ref, "VolumeWriteFailed", err.Error())
			}
			o.restCodec(ctx, s, e, holder != nil)
			o.noteDucking(e.NodeName(), s.Spec)
		}
		if elsewhere != "" {
			err = fmt.Errorf("status.node names %s, not this node; left alone", elsewhere)
		} else {
			st := SpeakerStatus(o.cfg.Node, e, holder)
			st.Conditions = append(st.Conditions, o.graphCondition(g))
			switch {
			case invalid != nil:
				o.invalidSpec(ctx, &st.Conditions, invalid)
			case ok && s != nil:
				st.Conditions = append(st.Conditions, SpeakerSpecApplied(s.Spec, e))
			}
			_, err = o.store.ApplySink(ctx, name, st)
			_, err = objects.Partial(err) // the fields are reported above
		}
		o.metrics.reconcile.WithLabelValues(objects.SinkKind.Name).Observe(time.Since(start).Seconds())
		if err != nil {
			o.metrics.reconcileErrors.WithLabelValues(objects.SinkKind.Name).Inc()
			o.problem(logger, name, err)
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, objects.ErrNotServed) {
				return err
			}
		} else {
			o.problemGone(logger, name)
		}
		gauge(o.metrics.connected, name, e.Connected)
		gauge(o.metrics.ready, name, e.Node != nil)
		gauge(o.metrics.claimed, name, holder != nil)
	}
	return nil
}

// restCodec switches a speaker that no claim holds to its Sink's
// spec.codec. A codec the speaker does not offer is reported once; a
// write is made again only after rewriteAfter, so a speaker that does not
// take it is not asked on every graph change.
func (o *operator) restCodec(ctx context.Context, s *audiov1.Sink, e SpeakerEndpoint, held bool) {
	want := s.Spec.Codec
	o.mu.Lock()
	busy := o.codecBusy[e.Name()] > 0
	o.mu.Unlock()
	if want == "" || held || busy || e.Node == nil || e.Device == nil || e.Codec() == want {
		return
	}
	id := -1
	for _, c := range e.Device.Codecs {
		if c.Name == want {
			id = c.ID
		}
	}
	ref := objects.Ref(objects.SinkKind, s)
	if id < 0 {
		o.warn(ctx, ref, "UnsupportedCodec", fmt.Sprintf("spec.codec %q: the speaker offers %s", want, strings.Join(e.Codecs(), ", ")))
		return
	}
	if last, ok := o.codecWrites[e.Name()]; ok && last.codec == want && time.Since(last.at) < rewriteAfter {
		return
	}
	o.codecWrites[e.Name()] = codecWrite{codec: want, at: time.Now()}
	if err := o.cfg.SetCodec(ctx, e.Device.ID, id); err != nil {
		o.metrics.controlFailures.WithLabelValues(operationVolume).Inc()
		o.warn(ctx, ref, "CodecWriteFailed", fmt.Sprintf("spec.codec %q: %v", want, err))
		return
	}
	klog.FromContext(ctx).Info("Speaker switched to its resting codec", "speaker", e.Name(), "codec", want, "from", e.Codec())
}

// routeWrite is the last volume written to a speaker's route.
type routeWrite struct {
	device uint32
	w      pipewire.VolumeWrite
	at     time.Time
}

// steerSpeakerVolume writes spec.volume and spec.mute to the speaker's
// output route (AVRCP absolute volume where the speaker supports it,
// software gain otherwise, as the bluez5 plugin decides) when what the
// route shows differs; a device with no route is steered through its
// node like a card's output.
func (o *operator) steerSpeakerVolume(ctx context.Context, name string, spec audiov1.EndpointSpec, e SpeakerEndpoint) error {
	if spec.Volume == nil && spec.Mute == nil {
		return nil
	}
	if e.Device == nil {
		return nil
	}
	route, ok := e.Device.OutputRoute()
	if !ok || route.Volume == nil {
		return o.steerVolume(ctx, name, spec, e.Node)
	}
	n := pipewire.Node{Volume: route.Volume, HasRun: true}
	obs := n.Observed()
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
		delete(o.routeWrites, name)
		return nil
	}
	last, ok := o.routeWrites[name]
	if ok && last.device == e.Device.ID && sameFloat(last.w.Gain, w.Gain) && samePtr(last.w.Mute, w.Mute) && time.Since(last.at) < rewriteAfter {
		return nil
	}
	o.routeWrites[name] = routeWrite{device: e.Device.ID, w: w, at: time.Now()}
	if err := o.cfg.SetRouteVolume(ctx, e.Device.ID, route, w); err != nil {
		o.metrics.controlFailures.WithLabelValues(operationVolume).Inc()
		return fmt.Errorf("%s: setting volume/mute on the route of device %d: %w", name, e.Device.ID, err)
	}
	return nil
}
