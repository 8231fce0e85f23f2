// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// ErrBadDump is wrapped by every error about pw-dump's output: text that
// is not JSON, JSON cut short, or JSON that is not pw-dump's shape.
var ErrBadDump = errors.New("bad pw-dump output")

// ParseDump parses the output of one `pw-dump` run: a JSON array of
// objects, each with a numeric "id" and a "type", and for nodes and
// links an "info" object. Objects may come in any id order (pw-dump
// lists them as the registry announced them), and "info", "info.props",
// "info.params" and "info.state" may each be absent or null (the
// recorded fixture has props only).
//
// One element that cannot be read is skipped, and Graph.Skipped says
// which and why: an element that is not an object, an id that is missing,
// negative or past 32 bits, or used twice, a missing type, a removal entry
// (those belong to monitor mode), a field of the wrong JSON type in a node
// or link, or an element longer than MaxObjectBytes. Any client of the
// PipeWire shapes some of what pw-dump prints, so one odd object must not
// cost the reading of all the others.
//
// The whole read fails, wrapping ErrBadDump, when the text is not one
// JSON array: input that is empty, cut short or followed by more text, or
// an array longer than MaxBatchBytes. No partial graph is returned then.
func ParseDump(data []byte) (*Graph, error) {
	b, err := readOneBatch(data)
	if err != nil {
		return nil, err
	}
	s := NewStream()
	seen := make(map[uint32]bool, len(b.objs))
	skipped := b.skipped
	for _, o := range b.objs {
		switch {
		case o.removed:
			skipped = append(skipped, fmt.Errorf("object %d (id %d) is a removal, which only monitor mode prints; skipped", o.index, o.id))
			continue
		case seen[o.id]:
			skipped = append(skipped, fmt.Errorf("object %d: id %d appears twice; the later one skipped", o.index, o.id))
			continue
		}
		seen[o.id] = true
		s.apply(o)
	}
	g := s.Graph()
	g.Skipped = skipped
	return g, nil
}

// readOneBatch reads data as exactly one pw-dump array, as ParseDump
// and Stream.Apply take it: empty input, input cut short, text after the
// array, or an array longer than MaxBatchBytes is an error wrapping
// ErrBadDump.
func readOneBatch(data []byte) (batch, error) {
	sp := newSplitter(bytes.NewReader(data), MaxBatchBytes, MaxObjectBytes)
	b, err := readBatch(sp)
	if errors.Is(err, io.EOF) {
		return batch{}, fmt.Errorf("%w: empty", ErrBadDump)
	}
	if err != nil {
		return batch{}, err
	}
	if c, err := sp.skipSpace(); err == nil {
		return batch{}, fmt.Errorf("%w: invalid character %q after the array", ErrBadDump, c)
	}
	return b, nil
}

// object is one entry of a pw-dump array.
type object struct {
	index      int // its place in the array
	id         uint32
	removed    bool    // monitor mode's {"id": N, "info": null}
	unreadable bool    // an entry with a readable id and nothing else usable
	node       *Node   // for TypeNode
	link       *Link   // for TypeLink
	device     *Device // for TypeDevice
	cookie     *uint32
}

// rawObject is the part of a pw-dump entry the parser reads. Metadata
// objects carry "props" and "metadata" at the top level instead of
// "info"; those are not read.
type rawObject struct {
	ID   *uint32         `json:"id"`
	Type *string         `json:"type"`
	Info json.RawMessage `json:"info"`
}

type rawInfo struct {
	State  *string                      `json:"state"`
	Error  *string                      `json:"error"`
	Props  map[string]json.RawMessage   `json:"props"`
	Params map[string][]json.RawMessage `json:"params"`
	// Link fields.
	OutputNode *uint32 `json:"output-node-id"`
	OutputPort *uint32 `json:"output-port-id"`
	InputNode  *uint32 `json:"input-node-id"`
	InputPort  *uint32 `json:"input-port-id"`
}

// batch is one pw-dump array as read: the objects, in order, and why
// each element left out was left out.
type batch struct {
	objs    []object
	skipped []error
}

// readBatch reads the next array from sp. An element that cannot be read
// is skipped; one whose id could be read still comes back, marked
// unreadable, so that whatever had that id before is not kept as if it
// were current. It returns io.EOF as it is when the input ended between
// arrays, and any other failure wrapped in ErrBadDump.
func readBatch(sp *splitter) (batch, error) {
	elems, err := sp.next()
	if errors.Is(err, io.EOF) {
		return batch{}, err
	}
	if err != nil {
		return batch{}, fmt.Errorf("%w: %v", ErrBadDump, err)
	}
	b := batch{objs: make([]object, 0, len(elems))}
	for i, e := range elems {
		if e.oversize {
			b.skipped = append(b.skipped, fmt.Errorf("object %d: %d bytes, past the bound of %d for one object; skipped", i, e.size, MaxObjectBytes))
			continue
		}
		o, idKnown, err := parseObject(e.raw)
		o.index = i
		if err != nil {
			b.skipped = append(b.skipped, fmt.Errorf("object %d: %v; skipped", i, err))
			if idKnown {
				b.objs = append(b.objs, object{index: i, id: o.id, unreadable: true})
			}
			continue
		}
		b.objs = append(b.objs, o)
	}
	return b, nil
}

// parseObject reads one element; idKnown says whether its id could be
// read even when the rest could not.
func parseObject(raw []byte) (o object, idKnown bool, err error) {
	if len(raw) == 0 || raw[0] != '{' {
		return object{}, false, fmt.Errorf("not a JSON object")
	}
	var r rawObject
	if err := json.Unmarshal(raw, &r); err != nil {
		return object{}, false, err
	}
	if r.ID == nil {
		return object{}, false, fmt.Errorf("no id")
	}
	o = object{id: *r.ID}
	if r.Type == nil || *r.Type == "" {
		if isNull(r.Info) && r.Info != nil {
			o.removed = true
			return o, true, nil
		}
		return o, true, fmt.Errorf("id %d has no type", o.id)
	}
	switch *r.Type {
	case TypeNode:
		n, err := parseNode(o.id, r.Info)
		if err != nil {
			return o, true, fmt.Errorf("node %d: %v", o.id, err)
		}
		o.node = n
	case TypeLink:
		l, err := parseLink(o.id, r.Info)
		if err != nil {
			return o, true, fmt.Errorf("link %d: %v", o.id, err)
		}
		o.link = l
	case TypeDevice:
		d, err := parseDevice(o.id, r.Info)
		if err != nil {
			return o, true, fmt.Errorf("device %d: %v", o.id, err)
		}
		o.device = d
	case TypeCore:
		var c struct {
			Cookie *uint32 `json:"cookie"`
		}
		if info, err := decodeRaw(r.Info); err == nil && info != nil && json.Unmarshal(info, &c) == nil {
			o.cookie = c.Cookie
		}
	}
	return o, true, nil
}

// decodeRaw returns raw when it is a JSON object, nil when it is absent
// or null.
func decodeRaw(raw json.RawMessage) (json.RawMessage, error) {
	if isNull(raw) {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("not an object")
	}
	return raw, nil
}

// isNull reports whether raw is absent or the JSON null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

func decodeInfo(raw json.RawMessage) (*rawInfo, error) {
	if isNull(raw) {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("info is not an object")
	}
	var info rawInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		return nil, fmt.Errorf("info: %v", err)
	}
	return &info, nil
}

func parseNode(id uint32, rawInfo json.RawMessage) (*Node, error) {
	n := &Node{ID: id}
	info, err := decodeInfo(rawInfo)
	if err != nil || info == nil {
		return n, err
	}
	if info.State != nil {
		n.State = *info.State
	}
	n.HasRun = n.State == NodeStateRunning
	if info.Error != nil {
		n.Error = *info.Error
	}
	if n.Props, err = propsText(info.Props); err != nil {
		return n, err
	}
	n.Name = n.Props[PropNodeName]
	if v, err := strconv.ParseUint(n.Props[PropObjectSerial], 10, 64); err == nil {
		n.Serial = v
	}
	n.Description = n.Props[PropDescription]
	n.MediaClass = n.Props[PropMediaClass]
	n.Declared = declared(n.Props)
	n.Format = parseFormat(info.Params["Format"], false)
	n.EnumFormat = parseFormat(info.Params["EnumFormat"], true)
	n.Volume = parseVolume(info.Params["Props"])
	n.IEC958Codecs = parseIEC958Codecs(info.Params["Props"])
	n.IEC958Offered = parseIEC958Offered(info.Params["EnumFormat"])
	return n, nil
}

func parseLink(id uint32, rawInfo json.RawMessage) (*Link, error) {
	l := &Link{ID: id}
	info, err := decodeInfo(rawInfo)
	if err != nil || info == nil {
		return l, err
	}
	for _, f := range []struct {
		dst *uint32
		src *uint32
	}{{&l.OutputNode, info.OutputNode}, {&l.OutputPort, info.OutputPort}, {&l.InputNode, info.InputNode}, {&l.InputPort, info.InputPort}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	if info.State != nil {
		l.State = *info.State
	}
	return l, nil
}

// propsText turns pw-dump's property values into text: a string as it
// is, a number as its literal, a boolean as "true" or "false", an object
// or array as compact JSON; a null value is left out.
func propsText(raw map[string]json.RawMessage) (map[string]string, error) {
	if raw == nil {
		return nil, nil
	}
	props := make(map[string]string, len(raw))
	for k, v := range raw {
		if len(v) == 0 {
			continue
		}
		switch v[0] {
		case '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("property %s: %v", k, err)
			}
			props[k] = s
		case 'n':
		case '{', '[':
			var b bytes.Buffer
			if err := json.Compact(&b, v); err != nil {
				return nil, fmt.Errorf("property %s: %v", k, err)
			}
			props[k] = b.String()
		default: // number, true, false: already valid JSON literals
			props[k] = string(v)
		}
	}
	return props, nil
}

// parseFormat reads the first entry of a Format param (an EnumFormat one
// with offer set, where a choice reads as its default). Params vary
// between PipeWire versions and node kinds, so a field of an unexpected
// type is left unknown rather than failing the read.
func parseFormat(entries []json.RawMessage, offer bool) *Format {
	for _, e := range entries {
		var f struct {
			MediaSubtype any `json:"mediaSubtype"`
			Format       any `json:"format"`
			Rate         any `json:"rate"`
			Channels     any `json:"channels"`
			Position     any `json:"position"`
		}
		if json.Unmarshal(e, &f) != nil {
			continue
		}
		out := &Format{}
		out.MediaSubtype, _ = f.MediaSubtype.(string)
		out.SampleFormat, _ = f.Format.(string)
		out.Rate = wholeNumber(offered(f.Rate, offer))
		out.Channels = wholeNumber(offered(f.Channels, offer))
		if ps, ok := f.Position.([]any); ok {
			for _, p := range ps {
				if s, ok := p.(string); ok {
					out.Positions = append(out.Positions, s)
				}
			}
		}
		return out
	}
	return nil
}

// parseVolume reads the first entry of a Props param that has a volume,
// a mute switch or channel volumes.
func parseVolume(entries []json.RawMessage) *Volume {
	for _, e := range entries {
		var p struct {
			Volume         any `json:"volume"`
			Mute           any `json:"mute"`
			ChannelVolumes any `json:"channelVolumes"`
		}
		if json.Unmarshal(e, &p) != nil {
			continue
		}
		v := &Volume{}
		if f, ok := p.Volume.(float64); ok {
			v.Volume = &f
		}
		if b, ok := p.Mute.(bool); ok {
			v.Mute = &b
		}
		if cs, ok := p.ChannelVolumes.([]any); ok {
			v.ChannelVolumes = make([]float64, 0, len(cs))
			for _, c := range cs {
				if f, ok := c.(float64); ok {
					v.ChannelVolumes = append(v.ChannelVolumes, f)
				}
			}
		}
		if v.Volume != nil || v.Mute != nil || v.ChannelVolumes != nil {
			return v
		}
	}
	return nil
}

// offered returns the default of a choice ({"default": 64, "min": 1,
// ...}) when offer is set: what a node offers in its EnumFormat, and runs
// with unless a stream asks otherwise. Otherwise, and for a plain value,
// it returns v.
func offered(v any, offer bool) any {
	if choice, isChoice := v.(map[string]any); isChoice && offer {
		return choice["default"]
	}
	return v
}

// wholeNumber returns v when it is a non-negative whole JSON number that
// fits an int32, else 0.
func wholeNumber(v any) int {
	f, ok := v.(float64)
	if !ok || f < 0 || f > 1<<31-1 || f != float64(int(f)) {
		return 0
	}
	return int(f)
}

// graphOf builds a Graph from the current objects.
func graphOf(nodes map[uint32]*Node, links map[uint32]*Link, devices map[uint32]*Device, objects int, cookie uint32) *Graph {
	g := &Graph{Objects: objects, Cookie: cookie, Nodes: make([]Node, 0, len(nodes)), Links: make([]Link, 0, len(links))}
	for _, d := range devices {
		g.Devices = append(g.Devices, *d)
	}
	slices.SortFunc(g.Devices, func(a, b Device) int { return cmpID(a.ID, b.ID) })
	for _, n := range nodes {
		g.Nodes = append(g.Nodes, *n)
	}
	for _, l := range links {
		g.Links = append(g.Links, *l)
	}
	slices.SortFunc(g.Nodes, func(a, b Node) int { return cmpID(a.ID, b.ID) })
	slices.SortFunc(g.Links, func(a, b Link) int { return cmpID(a.ID, b.ID) })
	return g
}
