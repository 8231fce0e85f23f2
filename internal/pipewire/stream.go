package pipewire

import (
	"encoding/json"
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
	batches int
}

// NewStream returns an empty Stream.
func NewStream() *Stream {
	return &Stream{all: map[uint32]bool{}, nodes: map[uint32]*Node{}, links: map[uint32]*Link{}}
}

// Apply parses one monitor-mode batch and applies it in order: an
// object replaces whatever had its id (ids are reused), a removal
// deletes it (a removal of an unknown id is ignored). The batch is
// parsed completely first; on error (wrapping ErrBadDump, naming the
// object) the Stream is unchanged. It returns the graph after the batch.
func (s *Stream) Apply(batch []byte) (*Graph, error) {
	objs, err := parseBatch(batch)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		s.apply(o)
	}
	s.batches++
	return s.Graph(), nil
}

func (s *Stream) apply(o object) {
	prev := s.nodes[o.id]
	delete(s.nodes, o.id)
	delete(s.links, o.id)
	if o.removed {
		delete(s.all, o.id)
		return
	}
	s.all[o.id] = true
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
}

// Batches returns how many batches have been applied.
func (s *Stream) Batches() int { return s.batches }

// Graph returns the current graph, a copy that later batches do not
// change.
func (s *Stream) Graph() *Graph { return graphOf(s.nodes, s.links, len(s.all)) }

// ReadStream reads monitor-mode output from r, applies each batch to a
// new Stream and calls fn with the graph after it, until r ends or fn
// returns an error. It returns nil when r ends between batches, fn's
// error as it is, and otherwise an error wrapping ErrBadDump (a batch
// that is not valid JSON, is cut short or is not pw-dump's shape, after
// which the output cannot be followed any further).
func ReadStream(r io.Reader, fn func(*Graph) error) error {
	dec := json.NewDecoder(r)
	s := NewStream()
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: batch %d: %v", ErrBadDump, s.batches+1, err)
		}
		g, err := s.Apply(raw)
		if err != nil {
			return fmt.Errorf("batch %d: %w", s.batches+1, err)
		}
		if err := fn(g); err != nil {
			return err
		}
	}
}
