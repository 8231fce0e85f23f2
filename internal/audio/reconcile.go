// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/audio/objects"
	"github.com/liken-sh/operators/internal/mixer"
	"github.com/liken-sh/operators/internal/pipewire"
)

// syncObjects brings this node's Sinks and Sources in step with pass p
// and graph g (nil: PipeWire is not answering): it applies each object's
// spec (volume and mute to the node, controls to the card), rewrites the
// declaration for a layout change once no stream plays, and writes each
// object's status where it differs. Objects of endpoints that are gone
// keep everything but their Connected and Ready conditions.
func (o *operator) syncObjects(ctx context.Context, p Pass, g *pipewire.Graph) {
	logger := klog.FromContext(ctx)
	path := filepath.Join(o.cfg.PipeWireDir, pipewire.DeclarationFile)
	declared, derr := pipewire.ReadDeclaration(path)

	sinks := map[string]*audiov1.Sink{}
	sources := map[string]*audiov1.Source{}
	specLayouts := map[string][]string{}
	unread := false
	// Objects read less the fields that do not decode: the rest of each
	// is applied, and the fields are reported below.
	invalid := map[string]*objects.DecodeError{}
	readable := func(name string, err error) error {
		derr, err := objects.Partial(err)
		if derr != nil {
			invalid[name] = derr
		}
		return err
	}
	for _, e := range p.Endpoints {
		if e.Capture() {
			if s, ok, err := o.store.Source(ctx, e.Name); ok && readable(e.Name, err) == nil {
				sources[e.Name] = s
			}
			continue
		}
		s, ok, err := o.store.Sink(ctx, e.Name)
		err = readable(e.Name, err)
		if derr := invalid[e.Name]; derr != nil && slices.ContainsFunc(derr.Fields, func(f string) bool { return strings.HasPrefix(f, "spec.layout") }) {
			// The wanted layout is unknown: the declared one is kept.
			if i := slices.IndexFunc(declared, func(d pipewire.Output) bool { return d.Output == e.Name }); i >= 0 {
				specLayouts[e.Name] = declared[i].Positions
			}
			ok = false
			sinks[e.Name] = s
		}
		if err != nil {
			// Without the spec the wanted layout is unknown: no layout
			// is rewritten on a guess this pass.
			unread = true
			o.problem(logger, e.Name, err)
			if errors.Is(err, context.DeadlineExceeded) {
				break
			}
		}
		if ok && err == nil {
			sinks[e.Name] = s
			if l := objects.Positions(s.Spec.Layout); len(l) > 0 {
				specLayouts[e.Name] = l
				if !ValidSpecLayout(l) {
					o.warn(ctx, objects.Ref(objects.SinkKind, s), "InvalidLayout", fmt.Sprintf(
						"spec.layout %s cannot be declared (1 to 64 SPA channel names, none twice but NA); the hardware's layout applies", spell(l)))
				}
			}
		}
	}

	plan := PlanLayouts(p.Endpoints, specLayouts, declared, g)
	switch {
	case derr != nil:
		plan.Outputs, plan.Undeclared = nil, nil
		plan.Unknown = "the declaration PipeWire was started with cannot be read: " + derr.Error()
	case unread && len(plan.Outputs) > 0:
		plan.Outputs = nil
		plan.Held = "a Sink could not be read from the API server"
	case len(plan.Outputs) > 0:
		if err := o.rewriteLayouts(ctx, plan, sinks); err != nil {
			plan.Held = err.Error()
		}
	}
	restarting := DeclarationPending(o.cfg.PipeWireDir, o.cfg.Remote.RuntimeDir)

	holders := o.driver.Holders()
	mixers := o.readMixers(ctx, p.Endpoints)
	seen := map[string]bool{}
	for _, e := range p.Endpoints {
		seen[e.Name] = true
		start := time.Now()
		kind := objects.SinkKind
		if e.Capture() {
			kind = objects.SourceKind
		}
		var node *pipewire.Node
		if g != nil && p.Live[e.NodeName] {
			if n, ok := g.NodeByName(e.NodeName); ok {
				node = &n
			}
		}
		var ref *corev1.ObjectReference
		if obj := sinks[e.Name]; obj != nil && !e.Capture() {
			ref = objects.Ref(kind, obj)
		} else if obj := sources[e.Name]; obj != nil && e.Capture() {
			ref = objects.Ref(kind, obj)
		}
		var controls []mixer.Control
		if m := mixers[e.PCM.Card()]; m != nil {
			if e.Capture() {
				controls = m.Source()
			} else {
				controls = m.Sink(e.PCM.Device())
			}
		}
		var holder = holders[e.Name]
		var hp = &holder
		if holder.Name == "" {
			hp = nil
		}
		elsewhere := o.ownedElsewhere(e, sinks, sources)
		switch {
		case elsewhere != "":
			// Nothing of another node's object is applied here.
		case e.Capture():
			if obj := sources[e.Name]; obj != nil {
				o.steer(ctx, kind, obj, e, obj.Spec, node, controls)
			}
		default:
			if obj := sinks[e.Name]; obj != nil {
				o.steer(ctx, kind, obj, e, obj.Spec.EndpointSpec, node, controls)
				o.noteDucking(e.NodeName, obj.Spec)
			}
			if i := slices.IndexFunc(declared, func(d pipewire.Output) bool { return d.Output == e.Name }); i >= 0 {
				o.steerChannelMap(ctx, ref, e, declared[i].Positions, node)
			}
		}
		common := EndpointStatus(o.cfg.Node, e, node, controls, hp)
		ready := o.absentNode(ctx, e, node, ref, start)
		if st := o.retryBusy(ctx, e.Name, node, start); st != nil {
			c := busyReady(st)
			ready = &c
		}
		if ready != nil {
			for i, c := range common.Conditions {
				if c.Type == audiov1.ConditionReady {
					common.Conditions[i] = *ready
				}
			}
		}
		common.Conditions = append(common.Conditions, o.graphCondition(g))
		if node != nil {
			if v, m := o.observedVolume(e.Name, node); v != nil || m != nil {
				if common.Observed == nil {
					common.Observed = &audiov1.Observed{}
				}
				common.Observed.Volume, common.Observed.Mute = v, m
			}
		}
		var err error
		switch {
		case elsewhere != "":
			// The name is this node's, yet the object says another node
			// keeps it (written by hand, or a node renamed): it is not
			// taken over behind a person's back.
			err = fmt.Errorf("status.node names %s, not this node; left alone", elsewhere)
		case e.Capture():
			o.invalidSpec(ctx, &common.Conditions, invalid[e.Name])
			_, err = o.store.ApplySource(ctx, e.Name, common)
		default:
			st := SinkStatus(common, e, plan.Wanted[e.Name], LayoutApplied(e.Name, plan, restarting))
			if obj := sinks[e.Name]; obj != nil {
				st.ConnectionType = keptConnection(e, st.ConnectionType, obj.Status.ConnectionType)
			}
			if derr := invalid[e.Name]; derr != nil {
				o.invalidSpec(ctx, &st.Conditions, derr)
			} else if obj := sinks[e.Name]; obj != nil {
				if c, ok := WiredSpecApplied(obj.Spec, st.ConnectionType); ok {
					st.Conditions = append(st.Conditions, c)
					o.warn(ctx, ref, c.Reason, c.Message)
				}
			}
			_, err = o.store.ApplySink(ctx, e.Name, st)
		}
		o.metrics.reconcile.WithLabelValues(kind.Name).Observe(time.Since(start).Seconds())
		// The status is written; fields that do not decode are reported
		// in it and by an Event, not as a failed write.
		err = readable(e.Name, err)
		if err != nil {
			o.metrics.reconcileErrors.WithLabelValues(kind.Name).Inc()
			o.problem(logger, e.Name, err)
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, objects.ErrNotServed) {
				// The API server is not answering, or has no Sinks and
				// Sources: the other objects wait for the next pass
				// rather than each fail alike.
				return
			}
		} else {
			o.problemGone(logger, e.Name)
		}
		gauge(o.metrics.connected, e.Name, meta.IsStatusConditionTrue(common.Conditions, audiov1.ConditionConnected))
		gauge(o.metrics.ready, e.Name, node != nil)
		gauge(o.metrics.claimed, e.Name, hp != nil)
	}
	err := o.syncSpeakers(ctx, g, p.Speakers, holders, seen)
	o.writeDucking(logger)
	if err != nil {
		return
	}
	o.markGone(ctx, seen)
	o.markNotServed(ctx, p.Endpoints)
}

// ownedElsewhere is the node another node's object for e names in its
// status, or "".
func (o *operator) ownedElsewhere(e Endpoint, sinks map[string]*audiov1.Sink, sources map[string]*audiov1.Source) string {
	node := ""
	if s := sinks[e.Name]; s != nil && !e.Capture() {
		node = s.Status.Node
	}
	if s := sources[e.Name]; s != nil && e.Capture() {
		node = s.Status.Node
	}
	if node == o.cfg.Node {
		return ""
	}
	return node
}

// steer applies one object's spec to the hardware.
func (o *operator) steer(ctx context.Context, kind objects.Kind, obj metav1.Object, e Endpoint, spec audiov1.EndpointSpec, node *pipewire.Node, controls []mixer.Control) {
	ref := objects.Ref(kind, obj)
	if err := o.steerVolume(ctx, e.Name, spec, node); err != nil {
		o.warn(ctx, ref, "VolumeWriteFailed", err.Error())
	}
	o.steerControls(ctx, ref, e.PCM.Card(), spec, controls)
}

// readMixers returns the mixer of each card that has an endpoint. A
// card's mixer is read again only after a control event of that card (a
// value changed, an element came or went) or a backstop tick, not on
// every graph change: a pass then costs no ioctls per element. A card
// whose mixer cannot be read gets no capabilities this pass; the problem
// is logged once.
func (o *operator) readMixers(ctx context.Context, eps []Endpoint) map[int]*mixer.Mixer {
	o.mixMu.Lock()
	dirty, all := o.mixDirty, o.mixAllDirty
	o.mixDirty, o.mixAllDirty = map[int]bool{}, false
	o.mixMu.Unlock()
	cached := o.mixers
	o.mixers = map[string]*mixer.Mixer{}
	out := map[int]*mixer.Mixer{}
	for _, e := range eps {
		card := e.PCM.Card()
		if _, done := out[card]; done {
			continue
		}
		out[card] = nil
		// The key holds what tells a card from one that took its number.
		key := fmt.Sprintf("%d/%s/%s", card, e.Card.ID, e.Identity.Location)
		if m, ok := cached[key]; ok && !all && !dirty[card] {
			out[card], o.mixers[key] = m, m
			continue
		}
		ctl, err := o.cfg.Hardware.opener().Open(card)
		if err != nil {
			o.problem(klog.FromContext(ctx), fmt.Sprintf("mixer of card %d", card), err)
			continue
		}
		m, err := mixer.Read(ctl)
		ctl.Close()
		if err != nil {
			o.problem(klog.FromContext(ctx), fmt.Sprintf("mixer of card %d", card), err)
			continue
		}
		out[card], o.mixers[key] = m, m
	}
	return out
}

// mixerChanged marks card's mixer (all with card < 0) to be read again.
func (o *operator) mixerChanged(card int) {
	o.mixMu.Lock()
	defer o.mixMu.Unlock()
	if card < 0 {
		o.mixAllDirty = true
		return
	}
	o.mixDirty[card] = true
}

// rewriteLayouts writes the declaration with the new layouts (the PCM
// set PipeWire was started with), which the pipewire container's first
// process takes as its cue to restart PipeWire in place, and records a
// LayoutChanged Event on each Sink whose layout changed.
func (o *operator) rewriteLayouts(ctx context.Context, plan LayoutPlan, sinks map[string]*audiov1.Sink) error {
	logger := klog.FromContext(ctx)
	if _, err := pipewire.WriteDeclaration(o.cfg.PipeWireDir, plan.Outputs); err != nil {
		o.problem(logger, "the declaration (layout change)", err)
		return fmt.Errorf("writing the declaration: %w", err)
	}
	o.problemGone(logger, "the declaration (layout change)")
	names := make([]string, 0, len(plan.Changed))
	for n := range plan.Changed {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		w := plan.Wanted[name]
		msg := fmt.Sprintf("layout %s -> %s (from %s); PipeWire restarts with it", spell(plan.Changed[name]), spell(w.Positions), sourceName(w))
		logger.Info("Layout changed", "sink", name, "from", strings.Join(plan.Changed[name], ","), "to", strings.Join(w.Positions, ","), "source", sourceName(w))
		if s := sinks[name]; s != nil && o.recorder != nil {
			o.recorder.Event(objects.Ref(objects.SinkKind, s), corev1.EventTypeNormal, "LayoutChanged", msg)
		}
	}
	return nil
}

func sourceName(l alsa.Layout) string {
	if l.Source == "" {
		return string(audiov1.LayoutFromNone)
	}
	return string(l.Source)
}

// markGone writes Connected and Ready false on this node's objects whose
// endpoint is not in this pass (a USB card unplugged), keeping the rest of
// their status: the object stays, and says the endpoint is absent. An
// object no endpoint ever served (NotServed, see markNotServed) keeps
// saying so.
func (o *operator) markGone(ctx context.Context, seen map[string]bool) {
	// Each kind's mark reads the object, turns its status absent and
	// writes it; found is false when the object went meanwhile. An
	// object read less the fields that do not decode is marked all the
	// same, and the fields are reported in SpecApplied as a pass does.
	marks := []struct {
		kind objects.Kind
		mark func(name string) (found bool, err error)
	}{
		{objects.SinkKind, func(name string) (bool, error) {
			s, ok, err := o.store.Sink(ctx, name)
			invalid, err := objects.Partial(err)
			if !ok || err != nil || notServed(s.Status.Conditions) {
				return false, err
			}
			st := *s.Status.DeepCopy()
			absent(&st.EndpointStatus)
			o.invalidSpec(ctx, &st.Conditions, invalid)
			_, err = o.store.ApplySink(ctx, name, st)
			_, err = objects.Partial(err)
			return true, err
		}},
		{objects.SourceKind, func(name string) (bool, error) {
			s, ok, err := o.store.Source(ctx, name)
			invalid, err := objects.Partial(err)
			if !ok || err != nil || notServed(s.Status.Conditions) {
				return false, err
			}
			st := *s.Status.DeepCopy()
			absent(&st)
			o.invalidSpec(ctx, &st.Conditions, invalid)
			_, err = o.store.ApplySource(ctx, name, st)
			_, err = objects.Partial(err)
			return true, err
		}},
	}
	for _, m := range marks {
		for _, name := range o.store.Names(m.kind) {
			if seen[name] {
				continue
			}
			found, err := m.mark(name)
			if err != nil {
				o.problem(klog.FromContext(ctx), name, err)
			}
			if found {
				gauge(o.metrics.connected, name, false)
				gauge(o.metrics.ready, name, false)
			}
		}
	}
}

// invalidSpec sets SpecApplied False (InvalidSpec) in conds, with its
// Warning Event, when invalid names fields that do not decode.
func (o *operator) invalidSpec(ctx context.Context, conds *[]metav1.Condition, invalid *objects.DecodeError) {
	if invalid == nil {
		return
	}
	c := InvalidSpecApplied(invalid)
	meta.SetStatusCondition(conds, c)
	o.warn(ctx, invalid.Ref, c.Reason, c.Message)
}

// absent turns a status into that of an endpoint that is not on this node
// now: Connected and Ready false, no claim; the rest stays as last seen.
func absent(st *audiov1.EndpointStatus) {
	for _, t := range []string{audiov1.ConditionConnected, audiov1.ConditionReady} {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: ReasonGone,
			Message: "the endpoint is not on this node now"})
	}
	st.Claim = nil
}

// problem logs an object's failure when it first appears.
func (o *operator) problem(logger klog.Logger, name string, err error) {
	if o.objProblems[name] == err.Error() {
		return
	}
	o.objProblems[name] = err.Error()
	logger.Error(err, "Keeping a Sink or Source in step failed", "name", name)
}

func (o *operator) problemGone(logger klog.Logger, name string) {
	if _, ok := o.objProblems[name]; ok {
		delete(o.objProblems, name)
		logger.Info("A Sink or Source is in step again", "name", name)
	}
}
