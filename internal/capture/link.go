// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"context"
	"strconv"
	"time"

	"github.com/liken-sh/operators/internal/captureapi"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/internal/pipewire/native"
)

// Registry keys of a link global (PW_KEY_LINK_INPUT_NODE and
// PW_KEY_LINK_OUTPUT_NODE, src/pipewire/keys.h; impl-link.c puts both in
// the global's properties).
const (
	keyLinkInputNode  = "link.input.node"
	keyLinkOutputNode = "link.output.node"
)

// dialRegistry connects to PipeWire over its native protocol and asks
// for the registry, whose announcements (every object there is, then
// each one that appears) awaitLink reads; a connection rather than
// pw-dump runs, since each pw-dump is a process that loads libpipewire
// and prints the whole graph as JSON, and a link comes a few hundred
// milliseconds after pw-record starts. It fails when the socket does not
// accept the connection.
func dialRegistry(ctx context.Context, r pipewire.Remote) (*native.Conn, error) {
	return native.Dial(ctx, r.SocketPath(), map[string]string{"application.name": "audio-capture"})
}

// closeRegistry ends c and reads what its reader still delivers, so that
// no announcement left in flight holds the reader goroutine.
func closeRegistry(c *native.Conn) {
	_ = c.Close()
	go func() {
		for range c.Events() {
		}
	}()
}

// linkWatch follows the registry until the recorder's stream node (named
// stream) has a link into it.
type linkWatch struct {
	stream string
	target pipewire.Node
	names  map[uint32]string // node.name of every node announced, by id
	id     uint32            // the stream node's id once announced
	seen   bool
}

// global takes one announced object: done with no problem when it is a
// link into the stream from the target, done with a problem naming both
// nodes when the link comes from another node, not done otherwise.
func (w *linkWatch) global(g native.Global) (*captureapi.Problem, bool) {
	switch g.Type {
	case native.TypeNode:
		if w.names == nil {
			w.names = map[uint32]string{}
		}
		name := g.Props[pipewire.PropNodeName]
		w.names[g.ID] = name
		if name == w.stream {
			w.id, w.seen = g.ID, true
		}
	case native.TypeLink:
		in, ok := nodeID(g.Props[keyLinkInputNode])
		if !ok || !w.seen || in != w.id {
			return nil, false
		}
		out, _ := nodeID(g.Props[keyLinkOutputNode])
		if out != w.target.ID {
			return captureapi.NewProblem(captureapi.ProblemWrongTarget, "pw-record's stream was linked to %q (node %d), not to %s (node %d).",
				w.names[out], out, w.target.Name, w.target.ID), true
		}
		return nil, true
	}
	return nil, false
}

// nodeID reads a node id property (a decimal uint32).
func nodeID(v string) (uint32, bool) {
	n, err := strconv.ParseUint(v, 10, 32)
	return uint32(n), err == nil
}

// awaitLink reads the registry of c until the recorder's stream node
// (named s.stream) has a link, and checks that the link comes from the
// target node. It fails with 503 recorder-failed when pw-record exits
// first, 500 wrong-target when the link comes from another node or none
// comes within the link deadline, and 503 unavailable when the request
// ends or PipeWire closes the connection.
func (s *session) awaitLink(ctx context.Context, c *native.Conn) (*captureapi.Problem, string) {
	deadline := time.NewTimer(s.cfg.LinkDeadline)
	defer deadline.Stop()
	w := &linkWatch{stream: s.stream, target: s.t.node}
	for {
		select {
		case <-s.recDone:
			return captureapi.NewProblem(captureapi.ProblemRecorderFailed, "pw-record exited before recording %s: %s", s.t.node.Name, orNothing(s.recErr.Trimmed())), "connect"
		case <-ctx.Done():
			return captureapi.NewProblem(captureapi.ProblemUnavailable, "The request ended before the recording started."), "connect"
		case <-deadline.C:
			return captureapi.NewProblem(captureapi.ProblemWrongTarget, "pw-record's stream was not linked to %s within %s.", s.t.node.Name, s.cfg.LinkDeadline), "wrong-target"
		case ev, ok := <-c.Events():
			if !ok {
				return captureapi.NewProblem(captureapi.ProblemUnavailable, "PipeWire's graph could not be read: %v", c.Err()), "connect"
			}
			if ev.Global == nil {
				continue
			}
			if p, done := w.global(*ev.Global); done {
				return p, "wrong-target"
			}
		}
	}
}
