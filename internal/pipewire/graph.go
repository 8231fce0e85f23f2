// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"slices"
	"strconv"
)

// PipeWire object types as pw-dump prints them in "type".
const (
	TypeNode   = "PipeWire:Interface:Node"
	TypeLink   = "PipeWire:Interface:Link"
	TypeDevice = "PipeWire:Interface:Device"
	TypeCore   = "PipeWire:Interface:Core"
)

// Node states as pw-dump prints info.state (enum pw_node_state,
// src/pipewire/node.h). A declared ALSA node is "suspended" until a
// stream plays to it, "running" while one does and "idle" shortly after.
const (
	NodeStateError     = "error"
	NodeStateCreating  = "creating"
	NodeStateSuspended = "suspended"
	NodeStateIdle      = "idle"
	NodeStateRunning   = "running"
)

// Graph is one reading of PipeWire's objects: the nodes, links and
// devices, each sorted by id. Other objects (ports, clients, modules, metadata) are
// counted, not kept. A Graph is never modified after it is returned, so
// it may be shared between goroutines; callers treat its slices and maps
// as read-only, since snapshots share them.
type Graph struct {
	// Nodes are the PipeWire:Interface:Node objects, by ascending id.
	Nodes []Node
	// Links are the PipeWire:Interface:Link objects, by ascending id.
	Links []Link
	// Devices are the PipeWire:Interface:Device objects, by ascending id.
	Devices []Device
	// Objects is the number of objects of every type in the reading.
	Objects int
	// Cookie is the Core object's info.cookie, a random number the
	// daemon draws when it starts (src/pipewire/impl-core.c), so two
	// readings with the same cookie are of one PipeWire instance; 0 when
	// the reading had no Core object.
	Cookie uint32
	// Revision counts the changes to Nodes, Links, Devices and Cookie
	// that made this reading, in the Stream (or Monitor) it came from:
	// two readings of one Stream with the same Revision hold the same
	// nodes, links, devices and cookie, whatever else the batches between
	// them changed (a client connecting or leaving, ports, modules,
	// metadata). Readings of different Streams are not comparable by it.
	Revision uint64
	// Skipped says, one error each, which elements of the batch this
	// reading came from were left out and why (not pw-dump's shape, or
	// past MaxObjectBytes); nil when none were.
	Skipped []error
}

// PropObjectSerial is the property PipeWire sets on every global when it
// registers it: a number that grows with each new global and is never
// reused in one daemon's life (src/pipewire/global.c), unlike the id.
// pw-dump reads it from the node's properties, which the node's owner
// can rewrite after it appeared (a client-node Update replaces it,
// measured with PipeWire 1.4.2), so it names a node only when that owner
// is the daemon.
const PropObjectSerial = "object.serial"

// Node is one PipeWire node.
type Node struct {
	// ID is the global object id. PipeWire reuses a freed id for the
	// next object (measured: a node destroyed and another created got
	// the same id), so an id names a node only within one Graph.
	ID uint32
	// Serial is object.serial (PropObjectSerial); 0 when absent.
	Serial uint64
	// Name is node.name; empty when absent.
	Name string
	// Description is node.description; empty when absent.
	Description string
	// MediaClass is media.class (MediaClassSink, ...); empty when absent.
	MediaClass string
	// State is info.state (NodeStateRunning, ...); empty when pw-dump
	// printed no info.
	State string
	// Error is info.error, set with NodeStateError.
	Error string
	// HasRun reports whether the node has been seen running since
	// PipeWire created it, as far as the reading knows: a single dump
	// knows only the present state, a Stream (and so a Monitor) every
	// batch it applied while the node existed. It decides whether the
	// node's volume reading can be stale (Observed).
	HasRun bool
	// Props holds every property as text. pw-dump prints a property whose
	// text reads as a JSON number or boolean as that literal, reformatted
	// (measured with PipeWire 1.4.2: "007" as 7, "1e3" as 1000.000000,
	// "0" as 0), and Props keeps the printed literal, so number-like text
	// does not survive; a nested object or array is kept as compact JSON.
	Props map[string]string
	// Declared is what the liken.audio.* properties say; nil for a node
	// this package did not declare.
	Declared *Declared
	// Format is the negotiated format (the Format param); nil while the
	// node is suspended and has none.
	Format *Format
	// EnumFormat is the first entry of the EnumFormat param, the formats
	// the node offers; nil when absent. A rate or channel count offered
	// as a choice reads as the choice's default.
	EnumFormat *Format
	// Volume is the first Props param entry that carries a volume or
	// mute; nil when there is none.
	Volume *Volume
	// IEC958Codecs are the IEC 958 codecs the node passes through, as its
	// Props param lists them (IEC958PCM ...); nil when the node takes none
	// (its ALSA path is not an hdmi or iec958 PCM; see iec958.go).
	IEC958Codecs []string
	// IEC958Offered are the codecs of the node's IEC 958 EnumFormat
	// entry, what a stream can pass through to it now; nil when it
	// offers no IEC 958 format.
	IEC958Offered []string
}

// Declared is the private part of a node this package declared: the PCM
// it serves and the published output it belongs to.
type Declared struct {
	// Card and PCM are liken.audio.card and liken.audio.pcm.
	Card, PCM int
	// PCMID and Output are liken.audio.pcm-id and liken.audio.output;
	// empty when absent.
	PCMID, Output string
}

// Format is a node's negotiated audio format.
type Format struct {
	// MediaSubtype is "raw" for PCM, or "iec958", "dsd", ...
	MediaSubtype string
	// SampleFormat is the SPA sample format, e.g. "F32P", "S16LE".
	SampleFormat string
	// Rate is in Hz; Channels is the channel count; 0 when absent.
	Rate, Channels int
	// Positions are the SPA channel names, one per channel, when given.
	Positions []string
}

// Volume is a node's software volume (the Props param).
type Volume struct {
	// Volume is the node's master volume, linear (1.0 is unity); nil
	// when absent.
	Volume *float64
	// Mute is the mute switch; nil when absent.
	Mute *bool
	// ChannelVolumes are the per-channel linear gains, in the order of
	// the node's channels; nil when absent.
	ChannelVolumes []float64
}

// Link is one PipeWire link: data flows from an output port of
// OutputNode to an input port of InputNode.
type Link struct {
	// ID is the link's global object id.
	ID uint32
	// OutputNode and InputNode are the ids of the nodes the link joins
	// (info.output-node-id, info.input-node-id); 0 when absent.
	OutputNode, InputNode uint32
	// OutputPort and InputPort are the ids of the ports it joins.
	OutputPort, InputPort uint32
	// State is info.state: "active", "paused", "init", "error", ...;
	// empty when absent.
	State string
}

// Node returns the node with the given id.
func (g *Graph) Node(id uint32) (Node, bool) {
	i, ok := slices.BinarySearchFunc(g.Nodes, id, func(n Node, id uint32) int { return cmpID(n.ID, id) })
	if !ok {
		return Node{}, false
	}
	return g.Nodes[i], true
}

// NodeByName returns the node with the given node.name; with several
// (PipeWire does not forbid it) the one with the lowest id.
func (g *Graph) NodeByName(name string) (Node, bool) {
	for _, n := range g.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}

// NodesOfClass returns the nodes whose media.class is class, by id.
func (g *Graph) NodesOfClass(class string) []Node {
	var out []Node
	for _, n := range g.Nodes {
		if n.MediaClass == class {
			out = append(out, n)
		}
	}
	return out
}

// DeclaredNode returns the node that serves pcm, found by its
// liken.audio.card and liken.audio.pcm properties and its media class
// (Audio/Sink for playback, Audio/Source for capture). When several
// nodes claim one PCM, the one whose name sorts first wins, so the
// answer does not depend on the order PipeWire created them in.
func (g *Graph) DeclaredNode(pcm PCM) (Node, bool) {
	var best Node
	found := false
	for _, n := range g.Nodes {
		if n.Declared == nil || n.Declared.Card != pcm.Card || n.Declared.PCM != pcm.Device ||
			n.MediaClass != pcm.Direction.MediaClass() {
			continue
		}
		if !found || n.Name < best.Name {
			best, found = n, true
		}
	}
	return best, found
}

// Linked reports whether any link touches node id: a stream plays to it
// or something records from it. A layout change restarts PipeWire, which
// interrupts every stream, so the operator waits until no published node
// is linked.
func (g *Graph) Linked(id uint32) bool { return len(g.LinksOf(id)) > 0 }

// LinksOf returns the links that touch node id, as output or input, by
// link id.
func (g *Graph) LinksOf(id uint32) []Link {
	var out []Link
	for _, l := range g.Links {
		if l.OutputNode == id || l.InputNode == id {
			out = append(out, l)
		}
	}
	return out
}

// LinkedNodes returns the node.name of every node whose name is in names
// and that some link touches, sorted, each name once. A stream playing to
// a sink and a recorder reading a source or a sink's monitor each show
// as links (measured: pw-play's stream node is a link's output node and
// the sink its input node). The operator waits for this to be empty
// before a layout change restarts PipeWire, which would cut those
// streams off.
func (g *Graph) LinkedNodes(names map[string]bool) []string {
	var out []string
	for _, n := range g.Nodes {
		if names[n.Name] && g.Linked(n.ID) && !slices.Contains(out, n.Name) {
			out = append(out, n.Name)
		}
	}
	slices.Sort(out)
	return out
}

func cmpID(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// declared reads the liken.audio.* properties of props. Both the card
// and the PCM must be non-negative integers; pw-dump prints them as
// numbers, and a string form is accepted too.
func declared(props map[string]string) *Declared {
	card, ok1 := propInt(props, PropCard)
	pcm, ok2 := propInt(props, PropPCM)
	if !ok1 || !ok2 {
		return nil
	}
	return &Declared{Card: card, PCM: pcm, PCMID: props[PropPCMID], Output: props[PropOutput]}
}

func propInt(props map[string]string, key string) (int, bool) {
	v, ok := props[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
