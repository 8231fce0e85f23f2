// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"unicode"
	"unicode/utf8"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/dra"
)

// Taint keys.
const (
	// TaintDisconnected (NoExecute): nothing can play there now — a
	// running PipeWire holds no sink node for it, or an HDMI/DP output has
	// no monitor. PipeWire down (killed, or restarted in place for a new
	// layout) is not this: its consumers' streams come back with the next
	// PipeWire, and an eviction would end them for good.
	TaintDisconnected = DriverName + "/disconnected"
	// TaintNoMonitor (NoSchedule): an HDMI/DP output with no valid ELD.
	TaintNoMonitor = DriverName + "/no-monitor"
	// TaintNoSink (NoSchedule): PipeWire holds no node for the output.
	TaintNoSink = DriverName + "/no-sink"
	// TaintNoAudio (NoSchedule): the monitor behind an HDMI/DP output is
	// present but its ELD lists no PCM format (speakers turned off in its
	// menu, a bitstream-only receiver): a stream played there is lost.
	TaintNoAudio = DriverName + "/no-audio"
)

// What a device's dra.Device.Problem says, which the pods using it show
// as the message of their allocatedResourcesStatus (KEP-4680). Each is
// given with the taints the same fact sets, from the same reading (the
// ELD, PipeWire's graph, BlueZ), and the Sink's Connected and Ready
// conditions say it at length.
const (
	// ProblemNoMonitor: an HDMI/DP output whose ELD is not valid: no
	// monitor plugged in, or it is off (TaintNoMonitor).
	ProblemNoMonitor = "monitor unplugged or off"
	// ProblemNoAudio: the monitor is there and its ELD lists no PCM
	// format: its speakers are off in its menu, or it takes only
	// bitstreams (TaintNoAudio).
	ProblemNoAudio = "the monitor takes no audio"
	// ProblemNoNode: a running PipeWire holds no node for the endpoint
	// (TaintDisconnected and TaintNoSink), or, for a connected speaker,
	// while its node is remade (TaintNoSink alone).
	ProblemNoNode = "PipeWire holds no node for it"
	// ProblemPipeWireDown: PipeWire is not answering (killed, or
	// restarting in place); every card endpoint is TaintNoSink alone
	// until it is back.
	ProblemPipeWireDown = "PipeWire is not answering"
	// ProblemSpeakerOff: a paired Bluetooth speaker whose link is down
	// (TaintDisconnected).
	ProblemSpeakerOff = "speaker off or out of range"
)

// ProblemReference lists every problem Devices and SpeakerDevices can
// give a device, for docs/reference.
var ProblemReference = []dra.ProblemDoc{
	{Problem: ProblemNoMonitor, Doc: "an HDMI/DP output with no valid ELD: no monitor is plugged in, or it is off"},
	{Problem: ProblemNoAudio, Doc: "the monitor behind an HDMI/DP output is there, and its ELD lists no PCM format (its speakers are off in its menu, or it takes only bitstreams)"},
	{Problem: ProblemNoNode, Doc: "PipeWire is running and holds no node for the endpoint; for a connected speaker, while its node is remade (a codec switch, a WirePlumber restart)"},
	{Problem: ProblemPipeWireDown, Doc: "PipeWire is not answering (killed, or restarting in place); the consumers' streams come back with it"},
	{Problem: ProblemSpeakerOff, Doc: "a paired Bluetooth speaker whose link is down: switched off or out of range"},
}

// MonitorIDAttribute is the cross-driver pairing identity of the monitor
// behind an output; the display operator publishes the same value.
const MonitorIDAttribute = "monitor.liken.sh/id"

// Devices returns one DRA device per endpoint. live holds the node.names
// PipeWire has right now; nil means PipeWire did not answer, which taints
// every device as having no sink (TaintNoSink, NoSchedule) but evicts no
// consumer: a device is TaintDisconnected for a missing node only when a
// running PipeWire lacks it. Attributes that are unknown are absent, never
// empty strings. A tainted device's Problem says why in words
// (ProblemReference). Every device is shareable: several claims hold it
// at once, each with its share of CapacityStreams.
func Devices(endpoints []Endpoint, live map[string]bool) []dra.Device {
	out := make([]dra.Device, 0, len(endpoints))
	for _, e := range endpoints {
		out = append(out, deviceOf(e, live[e.NodeName], live == nil))
	}
	return out
}

// device builds e's device while PipeWire answers; hasNode says it holds
// e's node.
func device(e Endpoint, hasNode bool) dra.Device { return deviceOf(e, hasNode, false) }

// deviceOf builds e's device; hasNode says PipeWire holds e's node, and
// pipewireDown that PipeWire did not answer at all.
func deviceOf(e Endpoint, hasNode, pipewireDown bool) dra.Device {
	// Exactly one of sink and source names the device, which is how the
	// audio-sink and audio-source DeviceClasses tell them apart.
	kind := dra.QualifiedName("sink")
	if e.Capture() {
		kind = "source"
	}
	attrs := dra.Attributes{
		kind:   dra.String(e.Name),
		"card": dra.Int(int64(e.PCM.Card())),
		"pcm":  dra.Int(int64(e.PCM.Device())),
	}
	if ct := alsa.ConnectionType(e.PCM, e.Card, e.Identity); ct != "" {
		attrs["connectionType"] = dra.String(ct)
	}
	if hasNode {
		attrs["nodeName"] = dra.String(e.NodeName)
	}
	if eld := e.PCM.ELD.ELD; eld != nil {
		setString(attrs, "manufacturer", eld.PNPID())
		setString(attrs, "product", eld.Product())
		setString(attrs, "monitorName", eld.MonitorName)
		setInt(attrs, "lpcmChannels", eld.LPCMChannels())
		setInt(attrs, "lpcmMaxRateHz", eld.LPCMMaxRateHz())
		setString(attrs, "lpcmBitDepths", eld.LPCMBitDepths())
		setString(attrs, "speakers", eld.Speakers())
		setString(attrs, "codecs", codecList(eld.Passthrough()))
		setInt(attrs, "eldVersion", eld.Version)
		setInt(attrs, "portID", int(eld.PortID))
		setString(attrs, MonitorIDAttribute, eld.MonitorID())
	}
	d := shareable(dra.Device{Name: e.Name, Attributes: attrs})
	noMonitor := e.PCM.HasELD && !e.PCM.ELD.Valid()
	noAudio := e.PCM.ELD.ELD != nil && !e.PCM.ELD.ELD.Audio()
	if (!hasNode && !pipewireDown) || noMonitor || noAudio {
		d.Taints = append(d.Taints, dra.Taint{Key: TaintDisconnected, Effect: dra.TaintNoExecute})
	}
	if noMonitor {
		d.Taints = append(d.Taints, dra.Taint{Key: TaintNoMonitor, Effect: dra.TaintNoSchedule})
	}
	if noAudio {
		d.Taints = append(d.Taints, dra.Taint{Key: TaintNoAudio, Effect: dra.TaintNoSchedule})
	}
	if !hasNode {
		d.Taints = append(d.Taints, dra.Taint{Key: TaintNoSink, Effect: dra.TaintNoSchedule})
	}
	// The cause a person can act on first: a monitor to plug in or
	// switch on comes before the node PipeWire is given no node for
	// because of it (Withheld).
	switch {
	case noMonitor:
		d.Problem = ProblemNoMonitor
	case noAudio:
		d.Problem = ProblemNoAudio
	case pipewireDown:
		d.Problem = ProblemPipeWireDown
	case !hasNode:
		d.Problem = ProblemNoNode
	}
	return d
}

// String attributes longer than the API's 64 bytes are left out rather
// than cut: a cut value could match a selector meant for another device.
// So is text that is not printable UTF-8: an ELD's monitor name comes from
// the monitor's EDID, which is untrusted bytes, and a control character or
// an invalid byte in an attribute no selector could match anyway.
func setString(a dra.Attributes, name, v string) {
	if v != "" && len(v) <= 64 && printable(v) {
		a[dra.QualifiedName(name)] = dra.String(v)
	}
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func setInt(a dra.Attributes, name string, v int) {
	if v > 0 {
		a[dra.QualifiedName(name)] = dra.Int(int64(v))
	}
}
