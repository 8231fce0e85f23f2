// SPDX-License-Identifier: Apache-2.0

package gate

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/liken-sh/operators/internal/pipewire/native"
)

// Several claims may hold one output (DRA consumable capacity), each
// through its own socket. What keeps them apart beyond permissions
// (grant: a claim's clients see the core, the client-node factory and
// the claim's nodes, never another claim's clients, streams or links,
// and change none of the nodes) is here: a claim's stream may not record
// a sink's monitor, which carries every tenant's audio, and a claim has
// at most its share of streams.

// Why a claim's stream is refused, as the gate logs it and sends it to
// the client (its core's error event: pw-cat and pw_stream users print
// it on stderr).
const (
	// RefusedMonitor: the stream records a sink's monitor.
	RefusedMonitor = "recording a sink's monitor is refused: it carries every claim's audio on that sink (audio-api's capture does it, under its RBAC)"
	// RefusedShare: the claim has all the streams its share allows.
	RefusedShare = "the claim has all the streams of its share"
)

// keyCaptureSink is the stream property that asks WirePlumber for a
// sink's monitor (pw-record -P stream.capture.sink=true, PulseAudio's
// ".monitor" sources).
const keyCaptureSink = "stream.capture.sink"

// Link properties the registry announces with every link
// (src/pipewire/impl-link.c, pw_impl_link_register).
const (
	keyLinkOutputNode = "link.output.node"
	keyLinkInputNode  = "link.input.node"
)

// capturesSink reports whether a stream with props asks to record a
// sink: a capture stream (media.class Stream/Input/...) with
// stream.capture.sink set true.
func capturesSink(props map[string]string) bool {
	return strings.HasPrefix(props["media.class"], "Stream/Input/") && strings.EqualFold(props[keyCaptureSink], "true")
}

// overShare says why a new stream of a claim that already has held
// streams is refused when max is its share ("" when it fits).
func overShare(held, max int) string {
	if held < max {
		return ""
	}
	return fmt.Sprintf("%s (%d at once; a claim asks for more with a capacity request of %q)", RefusedShare, max, "streams")
}

// claimStream judges a new node of a client of claim uid that passed
// misfit: a capture of a sink or a stream past the claim's share is
// refused, any other is counted as the claim's and reported fit. The
// registry announces a node with a few of its properties, without
// stream.capture.sink (measured with PipeWire 1.4.2); the node's info,
// which the gate then watches, brings it, and the link from the sink is
// refused whatever the stream's properties say (link).
func (s *session) claimStream(g native.Global, uid string) bool {
	if capturesSink(g.Props) {
		s.refuse(g, uid, RefusedMonitor)
		return false
	}
	held := 0
	for _, owner := range s.streams {
		if owner == uid {
			held++
		}
	}
	max := DefaultMaxStreams
	if sv := s.served[uid]; sv != nil {
		max = sv.claim.MaxStreams()
	}
	if why := overShare(held, max); why != "" {
		s.refuse(g, uid, why)
		return false
	}
	s.streams[g.ID] = uid
	return true
}

// link refuses the stream a link feeds from a sink when that stream is a
// claim's: a sink's output ports are its monitor. WirePlumber makes such
// a link for a stream that names a sink as its target, whatever the
// stream's other properties say; the link needs only that the stream's
// owner sees the sink (src/pipewire/impl-link.c, check_permission), which
// a claim on that sink does. A link from a source (Audio/Source, a
// microphone the claim holds) is the recording the claim is for: claims
// sharing a source each record it through streams of their own.
func (s *session) link(g native.Global) {
	in, err := strconv.ParseUint(g.Props[keyLinkInputNode], 10, 32)
	if err != nil {
		return
	}
	uid, ok := s.streams[uint32(in)]
	if !ok {
		return
	}
	out, err := strconv.ParseUint(g.Props[keyLinkOutputNode], 10, 32)
	if err != nil {
		return
	}
	from, ok := s.globals[uint32(out)]
	if !ok || from.Type != native.TypeNode || from.Props["media.class"] != "Audio/Sink" {
		return
	}
	if stream, ok := s.globals[uint32(in)]; ok {
		s.refuse(stream, uid, fmt.Sprintf("%s (linked from %q, node %d)", RefusedMonitor, from.Props["node.name"], out))
	}
}

// refuse destroys stream node g of claim uid, logs why, and sends why to
// the client that made it, whose library reports it as an error of its
// core (with ENOSPC for a full share, EPERM otherwise).
func (s *session) refuse(g native.Global, uid, why string) {
	delete(s.streams, g.ID)
	s.cfg.Logf("claim gate: stream %d (%q) of claim %s: %s: destroyed", g.ID, g.Props["node.name"], uid, why)
	res := -int32(unix.EPERM)
	if strings.HasPrefix(why, RefusedShare) {
		res = -int32(unix.ENOSPC)
	}
	if owner, err := strconv.ParseUint(g.Props["client.id"], 10, 32); err == nil {
		if proxy, ok := s.proxies[uint32(owner)]; ok {
			msg := fmt.Sprintf("audio.liken.sh claim %s: stream %q: %s", uid, g.Props["node.name"], why)
			if err := s.conn.ClientError(proxy, 0, res, msg); err != nil {
				s.cfg.Logf("claim gate: telling client %d of claim %s: %v", owner, uid, err)
			}
		}
	}
	_ = s.conn.Destroy(g.ID)
}
