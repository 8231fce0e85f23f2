// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	audiov1 "github.com/liken-sh/operators/api/audio/v1alpha1"
	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/audio/speakers"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/internal/safetext"
)

// Condition reasons of a speaker's Connected condition.
const (
	ReasonSpeakerConnected    = "SpeakerConnected"
	ReasonSpeakerDisconnected = "SpeakerDisconnected"
)

// SpeakerEndpoint is one paired Bluetooth speaker against a graph: the
// speaker as BlueZ reports it, and what PipeWire's bluez5 plugin made of
// it.
type SpeakerEndpoint struct {
	speakers.Speaker
	// Node is the speaker's A2DP sink node; nil when PipeWire has none
	// (switched off, out of range, or WirePlumber not on the bus).
	Node *pipewire.Node
	// Device is the speaker's bluez5 device; nil when the graph has none.
	Device *pipewire.Device
}

// NodeName is the node's node.name, or "" with no node.
func (s SpeakerEndpoint) NodeName() string {
	if s.Node == nil {
		return ""
	}
	return s.Node.Name
}

// Codec is the codec the node runs (api.bluez5.codec), or "".
func (s SpeakerEndpoint) Codec() string {
	if s.Node == nil {
		return ""
	}
	return s.Node.Props[pipewire.PropBlueZCodec]
}

// Codecs are the codec names the speaker's device offers, in its order.
func (s SpeakerEndpoint) Codecs() []string {
	if s.Device == nil {
		return nil
	}
	return s.Device.CodecNames()
}

// SpeakerEndpoints joins each speaker with its node and device in g (nil:
// PipeWire is not answering, so none has a node). The node is found
// through its device (pipewire.Graph.SpeakerNode); a device with no node
// still gives the codec list.
func SpeakerEndpoints(list []speakers.Speaker, g *pipewire.Graph) []SpeakerEndpoint {
	out := make([]SpeakerEndpoint, 0, len(list))
	for _, s := range list {
		e := SpeakerEndpoint{Speaker: s}
		if g != nil {
			addr := s.Address.String()
			if n, d, ok := g.SpeakerNode(addr); ok {
				e.Node, e.Device = &n, &d
			} else if d, ok := g.BlueZDevice(addr); ok {
				e.Device = &d
			}
		}
		out = append(out, e)
	}
	return out
}

// SpeakerDevices returns one DRA device per speaker: the same sink
// attribute as a card's output, connectionType bluetooth, the address,
// the name, whether it is connected, its codecs and the codec it runs,
// and taints: not connected (switched off, out of range) is disconnected,
// no node is no-sink. A speaker switched off keeps its device, tainted.
// A connected speaker without a node is only no-sink, whether PipeWire
// answers or not: its node goes away and comes back while the link stays
// up whenever the codec is switched (prepare does that for a claim's
// codec parameter), the profile changes or WirePlumber, whose BlueZ
// monitor makes the node, restarts; disconnected is NoExecute, and its
// eviction would end the very consumer the switch was made for. A
// tainted speaker's Problem is ProblemSpeakerOff when its link is down,
// else ProblemNoNode. A speaker is shareable like every output
// (CapacityStreams).
func SpeakerDevices(eps []SpeakerEndpoint) []dra.Device {
	out := make([]dra.Device, 0, len(eps))
	for _, e := range eps {
		name := e.Name()
		attrs := dra.Attributes{
			"sink":           dra.String(name),
			"connectionType": dra.String(alsa.ConnBluetooth),
			"address":        dra.String(e.Address.String()),
			"connected":      dra.Bool(e.Connected),
		}
		setString(attrs, "name", e.Alias)
		if e.Node != nil {
			setString(attrs, "nodeName", e.Node.Name)
			setString(attrs, "codec", e.Codec())
		}
		setString(attrs, "codecs", codecList(e.Codecs()))
		d := shareable(dra.Device{Name: name, Attributes: attrs})
		if !e.Connected {
			d.Taints = append(d.Taints, dra.Taint{Key: TaintDisconnected, Effect: dra.TaintNoExecute})
			d.Problem = ProblemSpeakerOff
		}
		if e.Node == nil {
			d.Taints = append(d.Taints, dra.Taint{Key: TaintNoSink, Effect: dra.TaintNoSchedule})
			if d.Problem == "" {
				d.Problem = ProblemNoNode
			}
		}
		out = append(out, d)
	}
	return out
}

// codecList joins names with spaces, whole names only, within the 64
// bytes of a string attribute.
func codecList(names []string) string {
	var b strings.Builder
	for _, n := range names {
		if b.Len()+len(n)+1 > 65 {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(n)
	}
	return b.String()
}

// SpeakerStatus is a speaker's Sink status: where it is, its node, who
// holds it, the volume its route shows, the Bluetooth part and the
// Connected and Ready conditions.
func SpeakerStatus(node string, e SpeakerEndpoint, holder *dra.ClaimRef) audiov1.SinkStatus {
	st := audiov1.SinkStatus{EndpointStatus: audiov1.EndpointStatus{
		Node: node, ConnectionType: alsa.ConnBluetooth, NodeName: e.NodeName(),
	}}
	st.Bluetooth = &audiov1.Bluetooth{Address: e.Address.String(), Name: e.Alias, Peripheral: e.Name(),
		Codec: e.Codec(), Codecs: e.Codecs()}
	if e.Node != nil {
		if f := e.Node.Format; f != nil && f.Rate > 0 {
			st.Format = &audiov1.Format{Rate: int32(f.Rate), Channels: int32(f.Channels), Positions: f.Positions}
		}
	}
	if vol, mute := speakerVolume(e); vol != nil || mute != nil {
		st.Observed = &audiov1.Observed{Volume: vol, Mute: mute}
	}
	if holder != nil {
		st.Claim = &audiov1.ClaimReference{Namespace: holder.Namespace, Name: holder.Name}
	}
	c := metav1.Condition{Type: audiov1.ConditionConnected, Status: metav1.ConditionTrue, Reason: ReasonSpeakerConnected,
		Message: "the speaker's Bluetooth link is up"}
	if !e.Connected {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonSpeakerDisconnected, "the speaker is paired and its Bluetooth link is down (switched off or out of range)"
	}
	st.Conditions = []metav1.Condition{c, ready(e.Node)}
	return st
}

// SpeakerSpecApplied is a speaker's Sink's SpecApplied condition: false
// when spec.codec names a codec the speaker does not offer (known once
// PipeWire has its device), or when spec.layout or spec.controls is set,
// neither of which a Bluetooth speaker has; the reason names the first
// such field, and the message each one with its value (cut short).
func SpeakerSpecApplied(spec audiov1.SinkSpec, e SpeakerEndpoint) metav1.Condition {
	var reason string
	var problems []string
	add := func(r, msg string) {
		if reason == "" {
			reason = r
		}
		problems = append(problems, msg)
	}
	if want, offered := spec.Codec, e.Codecs(); want != "" && len(offered) > 0 && !slices.Contains(offered, want) {
		add(audiov1.ReasonUnsupportedCodec, fmt.Sprintf("spec.codec %q is not a codec the speaker offers (%s)", want, strings.Join(offered, ", ")))
	}
	if len(spec.Layout) > 0 {
		names := make([]string, len(spec.Layout))
		for i, p := range spec.Layout {
			names[i] = string(p)
		}
		add(audiov1.ReasonLayoutNotSupported, fmt.Sprintf("spec.layout [%s] is ignored: a Bluetooth speaker's channels are its codec's", safetext.Clean(strings.Join(names, " "), 128)))
	}
	if len(spec.Controls) > 0 {
		keys := slices.Sorted(maps.Keys(spec.Controls))
		shown := strings.Join(keys, ", ")
		if len(keys) > 4 {
			shown = strings.Join(keys[:4], ", ") + fmt.Sprintf(" and %d more", len(keys)-4)
		}
		add(audiov1.ReasonControlsNotSupported, fmt.Sprintf("spec.controls (%s) is ignored: a Bluetooth speaker has no mixer controls", safetext.Clean(shown, 512)))
	}
	c := metav1.Condition{Type: audiov1.ConditionSpecApplied, Status: metav1.ConditionTrue, Reason: audiov1.ReasonApplied,
		Message: "every field of the spec applies to the speaker"}
	if reason != "" {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, reason, clipMessage(strings.Join(problems, "; ")+"; spec.volume and spec.mute still apply")
	}
	return c
}

// speakerVolume is the volume and mute the speaker's output route shows,
// as spec.volume spells them; the node's when the device has no route.
func speakerVolume(e SpeakerEndpoint) (*int32, *bool) {
	if e.Device != nil {
		if r, ok := e.Device.OutputRoute(); ok && r.Volume != nil {
			n := pipewire.Node{Volume: r.Volume, HasRun: true}
			return ObservedVolume(&n)
		}
	}
	return ObservedVolume(e.Node)
}
