// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/audio/objects"
	"github.com/liken-sh/operators/internal/pipewire"
)

// Which nodes the operator believes.
//
// Every property of a node is its owner's to choose: measured with
// PipeWire 1.4.2, a client's `pw-cli create-node adapter` with the
// node.name, media.class and liken.audio.* properties of a declared sink
// makes a node with exactly those, even client.id and factory.id kept as
// the client gave them, and a client-node's Update rewrites its node's
// properties at any time after it appeared, object.serial included. Only
// the global id is the daemon's alone. So a declared node is recognised
// by the global id it had when it appeared from the declaration, which
// the claim gate beside PipeWire records at every PipeWire start and
// drops when that node goes (gate.TrustedFile, keyed by the daemon's
// cookie so a record of an earlier PipeWire is never applied to a later
// one). Any other node that claims a declared name or the liken.audio.*
// properties is left out of the graph the operator works from: it is
// never published, never resolved for a consumer, never steered, and
// never shown in a Sink's status.
//
// A Bluetooth speaker's node is known the same way: the gate records the
// global id of each sink made by the client that made its bluez5 device
// (WirePlumber's monitor; gate.Trusted.Speakers), and any other sink that
// carries a speaker's node.name prefix, address or device.api is left out
// and reported likewise, so a consumer's PIPEWIRE_NODE never resolves to a
// node a client made to look like a speaker's.

// trustedGraph returns g without the nodes that pose as declared ones,
// and reports each such node once (a log line, a Warning Event on the
// endpoint's object, audio_untrusted_nodes_total). A nil g is nil.
func (o *operator) trustedGraph(ctx context.Context, g *pipewire.Graph) *pipewire.Graph {
	if g == nil {
		return nil
	}
	trust, err := gate.ReadTrusted(o.cfg.runtimeDir())
	if err != nil && o.trustErr != err.Error() {
		o.trustErr = err.Error()
		klog.FromContext(ctx).Error(err, "The record of declared nodes cannot be read; no node is taken as declared")
	}
	o.absent = nil
	if trust.Cookie == g.Cookie {
		o.absent = trust.Absent
	}
	if trust.Cookie != g.Cookie && !o.trustWaitLogged[g.Cookie] {
		o.trustWaitLogged[g.Cookie] = true
		klog.FromContext(ctx).Info("No record of this PipeWire's declared nodes yet; its outputs have no sink until the claim gate writes it",
			"cookie", g.Cookie, "recorded", trust.Cookie)
	}
	// An impostor is reported once while it is there; its global id may
	// name another node later.
	for key := range o.untrusted {
		var cookie, id uint32
		if _, err := fmt.Sscanf(key, "%d/%d", &cookie, &id); err == nil {
			if _, ok := g.Node(id); cookie != g.Cookie || !ok {
				delete(o.untrusted, key)
			}
		}
	}
	out := *g
	out.Nodes = make([]pipewire.Node, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		switch {
		case posesAsSpeaker(n):
			if trust.TrustsSpeaker(g.Cookie, n.Name, n.ID) {
				out.Nodes = append(out.Nodes, n)
			} else if trust.Cookie == g.Cookie && n.Serial <= trust.Serial {
				// The gate had seen this node when it wrote the record
				// and found it no speaker's. A newer node waits,
				// unreported, for the record the gate writes next.
				o.reportUntrustedSpeaker(ctx, g.Cookie, n)
			}
		case !o.posesAsDeclared(n) || trust.Trusts(g.Cookie, n.Name, n.ID):
			out.Nodes = append(out.Nodes, n)
		default:
			o.reportUntrusted(ctx, g.Cookie, n, trust)
		}
	}
	return &out
}

// posesAsSpeaker reports whether n is a sink that could be taken for a
// Bluetooth speaker's: the node.name the bluez5 plugin gives one
// (bluez_output.<address>.<n>), or a speaker's properties.
func posesAsSpeaker(n pipewire.Node) bool {
	return n.MediaClass == pipewire.MediaClassSink && (strings.HasPrefix(n.Name, SpeakerNodePrefix) ||
		n.Props[pipewire.PropBlueZAddress] != "" || n.Props[pipewire.PropDeviceAPI] == pipewire.DeviceAPIBlueZ)
}

// trustedSpeakers returns g without the nodes that pose as a speaker's
// and are not recorded as one, reporting nothing.
func trustedSpeakers(g *pipewire.Graph, trust gate.Trusted) *pipewire.Graph {
	out := *g
	out.Nodes = make([]pipewire.Node, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		if !posesAsSpeaker(n) || trust.TrustsSpeaker(g.Cookie, n.Name, n.ID) {
			out.Nodes = append(out.Nodes, n)
		}
	}
	return &out
}

// SpeakerNodePrefix starts the node.name of a Bluetooth speaker's sink
// (spa/plugins/bluez5: bluez_output.<address with '_'>.<profile number>).
const SpeakerNodePrefix = "bluez_output."

// reportUntrustedSpeaker reports, once while it is there, a node that
// poses as a Bluetooth speaker's (a log line, audio_untrusted_nodes_total
// with the speaker's name as endpoint when its address names one, and a
// Warning Event on that speaker's Sink).
func (o *operator) reportUntrustedSpeaker(ctx context.Context, cookie uint32, n pipewire.Node) {
	key := fmt.Sprintf("%d/%d", cookie, n.ID)
	if o.untrusted[key] {
		return
	}
	o.untrusted[key] = true
	endpoint := ""
	addr := pipewire.BlueZAddress(n.Props[pipewire.PropBlueZAddress])
	o.mu.Lock()
	for name, s := range o.speakerEPs {
		if addr != "" && s.Address.String() == addr || s.NodeName() == n.Name {
			endpoint = name
		}
	}
	o.mu.Unlock()
	msg := fmt.Sprintf("PipeWire node %d (node.name %q, media.class %q, client %s) poses as a Bluetooth speaker's node and is ignored: no speaker's device made it",
		n.ID, n.Name, n.MediaClass, n.Props["client.id"])
	klog.FromContext(ctx).Info("Ignoring a node that poses as a speaker's", "node", n.ID, "name", n.Name, "mediaClass", n.MediaClass,
		"endpoint", endpoint, "client", n.Props["client.id"], "device", n.Props[pipewire.PropDeviceID], "process", n.Props["application.process.id"])
	o.metrics.untrusted.WithLabelValues(endpoint).Inc()
	if endpoint == "" || o.store == nil || o.recorder == nil {
		return
	}
	if s, ok, err := o.store.Sink(ctx, endpoint); ok && partialOK(err) {
		o.recorder.Event(objects.Ref(objects.SinkKind, s), corev1.EventTypeWarning, ReasonUntrustedNode, msg)
	}
}

// partialOK reports whether an object read with err is there to report
// on: read whole, or less the fields the Go types cannot hold (which the
// pass reports in SpecApplied).
func partialOK(err error) bool {
	_, err = objects.Partial(err)
	return err == nil
}

// watchTrusted wakes a pass whenever the claim gate writes its record of
// the declared nodes: after a PipeWire start the graph may arrive before
// the record, and the outputs have no sink until a pass reads both. With
// no watch the backstop covers it.
func (o *operator) watchTrusted(ctx context.Context) {
	dir := o.cfg.runtimeDir()
	w, err := fsnotify.NewWatcher()
	if err == nil {
		err = w.Add(dir)
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot watch for the record of declared nodes; the backstop reads it", "dir", dir)
		if w != nil {
			w.Close()
		}
		return
	}
	go func() {
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Base(ev.Name) == gate.TrustedFile {
					o.poke()
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
}

// posesAsDeclared reports whether n carries a declared node's name or
// the liken.audio.* properties.
func (o *operator) posesAsDeclared(n pipewire.Node) bool {
	return n.Declared != nil || o.declared[n.Name] || strings.HasPrefix(n.Name, NodeNamePrefix)
}

func (o *operator) reportUntrusted(ctx context.Context, cookie uint32, n pipewire.Node, trust gate.Trusted) {
	key := fmt.Sprintf("%d/%d", cookie, n.ID)
	if o.untrusted[key] {
		return
	}
	o.untrusted[key] = true
	if trust.Cookie != cookie || len(trust.Nodes) == 0 {
		// Nothing is recorded for this PipeWire yet: every node waits,
		// and none of them is an impostor for that.
		delete(o.untrusted, key)
		return
	}
	endpoint := ""
	o.mu.Lock()
	for _, e := range o.known {
		if e.NodeName == n.Name {
			endpoint = e.Name
		}
	}
	o.mu.Unlock()
	declared := "is gone"
	if id, ok := trust.IDs[n.Name]; ok {
		declared = fmt.Sprintf("is node %d", id)
	}
	msg := fmt.Sprintf("PipeWire node %d (serial %d, node.name %q, media.class %q) poses as a declared node and is ignored; the declared node of that name %s",
		n.ID, n.Serial, n.Name, n.MediaClass, declared)
	klog.FromContext(ctx).Info("Ignoring a node that poses as a declared one", "node", n.ID, "serial", n.Serial, "name", n.Name,
		"mediaClass", n.MediaClass, "endpoint", endpoint, "client", n.Props["client.id"], "process", n.Props["application.process.id"])
	o.metrics.untrusted.WithLabelValues(endpoint).Inc()
	if endpoint == "" || o.store == nil || o.recorder == nil {
		return
	}
	if s, ok, err := o.store.Sink(ctx, endpoint); ok && partialOK(err) {
		o.recorder.Event(objects.Ref(objects.SinkKind, s), corev1.EventTypeWarning, ReasonUntrustedNode, msg)
	} else if s, ok, err := o.store.Source(ctx, endpoint); ok && partialOK(err) {
		o.recorder.Event(objects.Ref(objects.SourceKind, s), corev1.EventTypeWarning, ReasonUntrustedNode, msg)
	}
}

// ReasonUntrustedNode is the reason of the Warning Event on an endpoint's
// Sink or Source when a PipeWire node that is not its declared node
// carries its node.name or liken.audio.* properties.
const ReasonUntrustedNode = "UntrustedNode"
