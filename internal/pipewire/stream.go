// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"errors"
	"fmt"
	"io"
)

// Stream holds the graph `pw-dump -m` describes. Monitor mode prints a
// sequence of JSON arrays: the first is the whole graph, each later one
// the objects that changed since, each printed whole (measured with
// PipeWire 1.4.2: a state change reprints the node with all its props
// and params), and a removed object as {"id": N, "info": null} with no
// type. A node keeps HasRun from the first batch that shows it running
// until it is removed. A Stream is not safe for concurrent use; the
// Graphs it returns are.
type Stream struct {
	all     map[uint32]bool // every live id, of any type
	nodes   map[uint32]*Node
	links   map[uint32]*Link
	devices map[uint32]*Device
	cookie  uint32
	batches int
	skipped []error // of the latest batch
	// revision counts the applied objects that changed a node, link,
	// device or the cookie (Graph.Revision).
	revision uint64
}

// NewStream returns an empty Stream.
func NewStream() *Stream {
	return &Stream{all: map[uint32]bool{}, nodes: map[uint32]*Node{}, links: map[uint32]*Link{}, devices: map[uint32]*Device{}}
}

// Apply parses one monitor-mode batch (one JSON array) and applies it
// in order: an object replaces whatever had its id (ids are reused), a
// removal deletes it (a removal of an unknown id is ignored). An element
// that cannot be read is skipped as ParseDump skips it, and
// Graph.Skipped says so; one whose id could be read still ends what had
// that id, since whatever it was has changed. A batch that is not one
// JSON array, is cut short or is longer than MaxBatchBytes is an error
// wrapping ErrBadDump, and the Stream is then unchanged. It returns the
// graph after the batch.
func (s *Stream) Apply(data []byte) (*Graph, error) {
	b, err := readOneBatch(data)
	if err != nil {
		return nil, err
	}
	return s.applyBatch(b), nil
}

func (s *Stream) applyBatch(b batch) *Graph {
	for _, o := range b.objs {
		s.apply(o)
	}
	s.batches++
	s.skipped = b.skipped
	return s.Graph()
}

func (s *Stream) apply(o object) {
	prev := s.nodes[o.id]
	_, wasLink := s.links[o.id]
	_, wasDevice := s.devices[o.id]
	if prev != nil || wasLink || wasDevice || o.node != nil || o.link != nil || o.device != nil ||
		o.cookie != nil && *o.cookie != s.cookie {
		// What a Graph holds changes; a client, port, module or
		// metadata object coming, going or changing does not.
		s.revision++
	}
	delete(s.nodes, o.id)
	delete(s.links, o.id)
	delete(s.devices, o.id)
	if o.removed {
		delete(s.all, o.id)
		return
	}
	s.all[o.id] = true
	if o.cookie != nil {
		s.cookie = *o.cookie
	}
	if o.node != nil {
		// The same node reprinted keeps what earlier batches saw of it;
		// a reused id comes after a removal, so prev is then nil.
		if prev != nil && prev.HasRun {
			n := *o.node
			n.HasRun = true
			o.node = &n
		}
		s.nodes[o.id] = o.node
	}
	if o.link != nil {
		s.links[o.id] = o.link
	}
	if o.device != nil {
		s.devices[o.id] = o.device
	}
}

// Batches returns how many batches have been applied.
func (s *Stream) Batches() int { return s.batches }

// Graph returns the current graph, a copy that later batches do not
// change.
// Its Skipped is the latest batch's.
func (s *Stream) Graph() *Graph {
	g := graphOf(s.nodes, s.links, s.devices, len(s.all), s.cookie)
	g.Skipped = s.skipped
	g.Revision = s.revision
	return g
}

// ReadStream reads monitor-mode output from r, applies each batch to a
// new Stream and calls fn with the graph after it, until r ends or fn
// returns an error. Elements of a batch that cannot be read are skipped
// as Apply skips them (Graph.Skipped). It returns nil when r ends between
// batches, fn's error as it is, and otherwise an error wrapping
// ErrBadDump: text that is not a JSON array, a batch cut short, or one
// longer than MaxBatchBytes, after which the output cannot be followed
// any further. It never holds more than one batch's bounded elements.
func ReadStream(r io.Reader, fn func(*Graph) error) error {
	sp := newSplitter(r, MaxBatchBytes, MaxObjectBytes)
	s := NewStream()
	for {
		b, err := readBatch(sp)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("batch %d: %w", s.batches+1, err)
		}
		if err := fn(s.applyBatch(b)); err != nil {
			return err
		}
	}
}
