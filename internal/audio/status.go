// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"cmp"
	"fmt"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/audio/objects"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/mixer"
	"github.com/liken-sh/operators/internal/pipewire"
)

// Condition reasons this operator writes besides the LayoutApplied ones.
const (
	ReasonMonitorPresent = "MonitorPresent"
	ReasonNoMonitor      = "NoMonitor"
	ReasonJackPlugged    = "JackPlugged"
	ReasonJackUnplugged  = "JackUnplugged"
	ReasonUSB            = "USB"
	ReasonNoDetection    = "NoDetection"
	ReasonNodeReady      = "NodeReady"
	ReasonNoNode         = "NoNode"
	ReasonWithheld       = "Withheld"
	ReasonNodeError      = "NodeError"
	ReasonGone           = "Gone"
)

// EndpointStatus is the status of e that Sinks and Sources share: where
// it is, its PipeWire node n (nil: PipeWire holds none), the mixer
// controls that belong to it, who holds it, and the Connected and Ready
// conditions. Conditions carry no times; the store keeps a condition's
// lastTransitionTime while its status stays.
func EndpointStatus(node string, e Endpoint, n *pipewire.Node, controls []mixer.Control, holder *dra.ClaimRef) audiov1.EndpointStatus {
	st := audiov1.EndpointStatus{
		Node:           node,
		Location:       e.Identity.Location,
		ConnectionType: alsa.ConnectionType(e.PCM, e.Card, e.Identity),
		Card:           &audiov1.CardStatus{Number: int32(e.Card.Card), ID: e.Card.ID, Driver: e.Card.Driver, Name: e.Card.Name},
		PCM:            &audiov1.PCMStatus{Device: int32(e.PCM.Device()), ID: e.PCM.Info.ID},
		NodeName:       e.NodeName,
	}
	observed := &audiov1.Observed{}
	if n != nil {
		if f := n.Format; f != nil && f.Rate > 0 {
			st.Format = &audiov1.Format{Rate: int32(f.Rate), Channels: int32(f.Channels), Positions: f.Positions}
		}
		observed.Volume, observed.Mute = ObservedVolume(n)
	}
	if len(controls) > 0 {
		st.Capabilities = make(map[string]audiov1.Capability, len(controls))
		observed.Controls = make(map[string]string, len(controls))
		for _, c := range controls {
			st.Capabilities[c.Key] = capability(c)
			observed.Controls[c.Key] = c.Format()
		}
	}
	if observed.Volume != nil || observed.Mute != nil || observed.Controls != nil {
		st.Observed = observed
	}
	if holder != nil {
		st.Claim = &audiov1.ClaimReference{Namespace: holder.Namespace, Name: holder.Name}
	}
	r := ready(n)
	if why := Withheld(e); n == nil && why != "" {
		r = metav1.Condition{Type: audiov1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonWithheld,
			Message: "PipeWire is given no node for this output, so no stream can be routed to it: " + why}
	}
	st.Conditions = []metav1.Condition{connected(e, st.ConnectionType), r}
	return st
}

// ObservedVolume reads a node's software volume as spec.volume spells it:
// the first channel's linear gain in percent of unity, rounded, and the
// mute switch (pipewire.Node.Observed). Either is nil when the node's
// Props do not carry it.
func ObservedVolume(n *pipewire.Node) (*int32, *bool) {
	if n == nil {
		return nil, nil
	}
	obs := n.Observed()
	var vol *int32
	if obs.Volume != nil {
		v := int32(*obs.Volume)
		vol = &v
	}
	return vol, obs.Mute
}

func capability(c mixer.Control) audiov1.Capability {
	out := audiov1.Capability{Type: c.Kind(), MinDecibels: c.MinDecibels(), MaxDecibels: c.MaxDecibels(), Channels: int32(c.Channels)}
	switch c.Type {
	case alsa.TypeInteger, alsa.TypeInteger64:
		lo, hi, step := c.Min, c.Max, c.Step
		out.Min, out.Max = &lo, &hi
		if step > 0 {
			out.Step = &step
		}
	case alsa.TypeEnumerated:
		out.Values = append([]string(nil), c.Items...)
	}
	return out
}

// connected is the physical link: a monitor behind an HDMI/DP output (a
// valid ELD), a plugged jack where the card detects one, always for USB;
// a card that cannot tell is taken as connected.
func connected(e Endpoint, connType string) metav1.Condition {
	c := metav1.Condition{Type: audiov1.ConditionConnected, Status: metav1.ConditionTrue}
	switch {
	case !e.Capture() && e.PCM.HasELD && e.PCM.ELD.Valid() && !e.PCM.ELD.ELD.Audio():
		c.Reason, c.Message = ReasonMonitorPresent, "a monitor is present, and its ELD lists no PCM audio format: nothing played here is heard"
	case !e.Capture() && e.PCM.HasELD && e.PCM.ELD.Valid():
		c.Reason, c.Message = ReasonMonitorPresent, "the monitor's ELD is valid"
	case !e.Capture() && e.PCM.HasELD:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonNoMonitor, "no monitor answers on this port"
	case connType == alsa.ConnUSB:
		c.Reason, c.Message = ReasonUSB, "a USB card is connected while it is listed"
	case e.PCM.Jack != nil && !e.PCM.Jack.Phantom && e.PCM.Jack.Plugged:
		c.Reason, c.Message = ReasonJackPlugged, e.PCM.Jack.ID.Name+" is plugged"
	case e.PCM.Jack != nil && !e.PCM.Jack.Phantom:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonJackUnplugged, e.PCM.Jack.ID.Name+" is unplugged"
	default:
		c.Reason, c.Message = ReasonNoDetection, "the card does not detect what is connected"
	}
	return c
}

// keptConnection is the connectionType of a Sink whose status read
// stored and whose endpoint now gives now: stored when the endpoint is
// an HDMI/DP port whose monitor went away (it has an ELD element and no
// valid block), which alsa.ConnectionType cannot tell apart and which
// is still the port it was, as its declared layout is kept
// (WantedLayout); now otherwise. The Connected condition, False with
// reason NoMonitor, is what says that nothing is plugged in.
func keptConnection(e Endpoint, now, stored string) string {
	if now == "" && !e.Capture() && e.PCM.HasELD && !e.PCM.ELD.Valid() &&
		(stored == alsa.ConnHDMI || stored == alsa.ConnDisplayPort) {
		return stored
	}
	return now
}

// ready is whether PipeWire can play or record through the endpoint: it
// holds the node, and the node is not in PipeWire's error state (an ALSA
// device that failed to open, such as "Device or resource busy" when
// another HDMI PCM holds the converter), whose message is PipeWire's own.
func ready(n *pipewire.Node) metav1.Condition {
	switch {
	case n == nil:
		return metav1.Condition{Type: audiov1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonNoNode, Message: "PipeWire holds no node for this endpoint"}
	case n.State == pipewire.NodeStateError:
		msg := "PipeWire reports the node in error"
		if n.Error != "" {
			msg += ": " + n.Error
		}
		return metav1.Condition{Type: audiov1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonNodeError, Message: clipMessage(msg)}
	}
	return metav1.Condition{Type: audiov1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonNodeReady, Message: "PipeWire holds the node"}
}

// clipMessage keeps a condition message within the API's 32768 bytes
// (metav1.Condition), on a rune boundary.
func clipMessage(s string) string {
	const max = 32768
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// SinkStatus adds a Sink's own fields to EndpointStatus: the monitor from
// the ELD, the layout it should run with, and LayoutApplied.
func SinkStatus(common audiov1.EndpointStatus, e Endpoint, layout alsa.Layout, applied metav1.Condition) audiov1.SinkStatus {
	st := audiov1.SinkStatus{EndpointStatus: common}
	if el := e.PCM.ELD.ELD; el != nil && e.PCM.ELD.Valid() {
		st.Monitor = &audiov1.Monitor{Manufacturer: el.PNPID(), Product: el.Product(), Name: el.MonitorName, PairingID: el.MonitorID()}
	}
	st.Layout = layout.Positions
	st.LayoutSource = audiov1.LayoutFromNone
	if layout.Source != alsa.LayoutNone {
		st.LayoutSource = audiov1.LayoutSource(layout.Source)
	}
	st.Conditions = append(st.Conditions, applied)
	return st
}

// WiredSpecApplied is the SpecApplied condition of a wired (ALSA) Sink
// whose spec.codec is set, and ok; ok is false when spec.codec is empty,
// and the Sink then has no such condition. A codec means something only
// to a Bluetooth speaker, which PipeWire's bluez5 plugin switches between
// A2DP codecs; an ALSA PCM takes the samples as they are. The schema
// keeps spec.codec to 32 lower-case letters, digits and '_', so the
// message quotes it whole.
func WiredSpecApplied(spec audiov1.SinkSpec, connectionType string) (c metav1.Condition, ok bool) {
	if spec.Codec == "" {
		return metav1.Condition{}, false
	}
	return metav1.Condition{Type: audiov1.ConditionSpecApplied, Status: metav1.ConditionFalse, Reason: audiov1.ReasonCodecNotSupported,
		Message: fmt.Sprintf("spec.codec %q is ignored: a codec applies only to a Bluetooth speaker, and this Sink is a wired %s output; the rest of the spec applies",
			spec.Codec, cmp.Or(connectionType, "ALSA"))}, true
}

// InvalidSpecApplied is the SpecApplied condition of a Sink or Source
// some of whose fields could not be decoded (derr): False, reason
// InvalidSpec, naming the fields (at most maxNamedFields of them) and the
// first one's error.
func InvalidSpecApplied(derr *objects.DecodeError) metav1.Condition {
	fields := derr.Fields
	more := ""
	if len(fields) > maxNamedFields {
		fields, more = fields[:maxNamedFields], fmt.Sprintf(" and %d more", len(derr.Fields)-maxNamedFields)
	}
	return metav1.Condition{Type: audiov1.ConditionSpecApplied, Status: metav1.ConditionFalse, Reason: audiov1.ReasonInvalidSpec,
		Message: fmt.Sprintf("%s%s cannot be read (%v) and is ignored; the rest of the %s applies",
			strings.Join(fields, ", "), more, derr.Err, derr.Ref.Kind)}
}

// maxNamedFields bounds the fields an InvalidSpec message names, so a
// spec with a hundred bad controls does not make a message of kilobytes.
const maxNamedFields = 5
