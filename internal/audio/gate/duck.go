// SPDX-License-Identifier: Apache-2.0

package gate

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/liken-sh/operators/internal/pipewire/native"
)

// The gate sets the gain of every claim's streams: the claim's volume,
// lowered by the sink's ducking while another claim's announcement runs
// on a sink the stream plays to. It is the gate's to do, not
// WirePlumber's: WirePlumber 0.5's role-based linking ducks by routing
// each role through a loopback sink of its own (device.intended-roles)
// at one duck level for the whole daemon, and a claim's stream may only
// be linked to the nodes its claim sees; the gate sees every claim's
// streams and links.
//
// The gain is written to the stream node's Props param (channelVolumes),
// which the daemon hands to the stream's client, whose converter scales
// the samples (wpctl set-volume on a stream does the same). A stream
// "plays" while its node is running: a player that finishes ends its
// stream (pw-play, Home Assistant's players) or pauses it, and either
// ends the ducking. WirePlumber's main-embedded profile stores and
// restores no stream volume (mixin.stateless), so nothing writes over
// the gate's gain but the stream's own client, whose samples are its own
// in any case.

// duckState is what the gate knows of the claims' streams for their
// gain.
type duckState struct {
	proxies  map[uint32]uint32    // stream id: its node proxy
	channels map[uint32]int       // stream id: audio.channels, when it says
	running  map[uint32]bool      // streams whose node runs
	links    map[uint32][2]uint32 // link id: the stream and the sink it feeds
	gains    map[uint32]float64   // the gain last written to each stream
	ducked   map[uint32]string    // sinks ducked now: the announcing claims, for the log
}

func (d *duckState) init() {
	if d.proxies == nil {
		*d = duckState{proxies: map[uint32]uint32{}, channels: map[uint32]int{}, running: map[uint32]bool{},
			links: map[uint32][2]uint32{}, gains: map[uint32]float64{}, ducked: map[uint32]string{}}
	}
}

// duckStream records claim stream g, watched as proxy, and gives it its
// gain.
func (s *session) duckStream(proxy uint32, g native.Global) {
	s.duck.init()
	s.duck.proxies[g.ID] = proxy
	s.duckProps(g.ID, g.Props)
	s.balance()
}

func (s *session) duckProps(id uint32, props map[string]string) {
	if n, err := strconv.Atoi(props["audio.channels"]); err == nil && n >= 1 && n <= 64 {
		s.duck.channels[id] = n
	}
}

// duckInfo follows a claim stream's state (and channels).
func (s *session) duckInfo(info *native.NodeInfo) {
	s.duck.init()
	if _, ok := s.streams[info.ID]; !ok {
		return
	}
	s.duckProps(info.ID, info.Props)
	running := info.State == native.NodeRunning
	if s.duck.running[info.ID] == running {
		return
	}
	if running {
		s.duck.running[info.ID] = true
	} else {
		delete(s.duck.running, info.ID)
	}
	s.balance()
}

// duckLink records a link from a claim's stream into a sink.
func (s *session) duckLink(g native.Global) {
	s.duck.init()
	in, err1 := strconv.ParseUint(g.Props[keyLinkInputNode], 10, 32)
	out, err2 := strconv.ParseUint(g.Props[keyLinkOutputNode], 10, 32)
	if err1 != nil || err2 != nil {
		return
	}
	if _, ok := s.streams[uint32(out)]; !ok {
		return
	}
	if sink, ok := s.globals[uint32(in)]; !ok || sink.Props["media.class"] != "Audio/Sink" {
		return
	}
	s.duck.links[g.ID] = [2]uint32{uint32(out), uint32(in)}
	s.balance()
}

// duckForget drops a global that went away: a stream or a link.
func (s *session) duckForget(id uint32) {
	s.duck.init()
	_, link := s.duck.links[id]
	_, stream := s.duck.proxies[id]
	if !link && !stream {
		return
	}
	delete(s.duck.links, id)
	delete(s.duck.proxies, id)
	delete(s.duck.channels, id)
	delete(s.duck.running, id)
	delete(s.duck.gains, id)
	for l, ends := range s.duck.links {
		if ends[0] == id {
			delete(s.duck.links, l)
		}
	}
	s.balance()
}

func (s *session) claimOf(uid string) (Claim, bool) {
	if sv := s.served[uid]; sv != nil {
		return sv.claim, true
	}
	return Claim{}, false
}

// balance writes each claim stream's gain where it changed: its claim's
// volume, times the ducking of the sink it plays to while a stream of
// another claim whose role is announcement runs into that sink (the
// deepest ducking of several sinks). A stream whose claim sets no volume
// and that was never ducked is left alone.
func (s *session) balance() {
	s.duck.init()
	feeds := map[uint32][]uint32{} // stream: sinks
	for _, ends := range s.duck.links {
		if !slices.Contains(feeds[ends[0]], ends[1]) {
			feeds[ends[0]] = append(feeds[ends[0]], ends[1])
		}
	}
	announcers := map[uint32][]string{} // sink: the claims announcing on it
	for id := range s.duck.running {
		uid := s.streams[id]
		if c, ok := s.claimOf(uid); !ok || c.Role != RoleAnnouncement {
			continue
		}
		for _, sink := range feeds[id] {
			if !slices.Contains(announcers[sink], uid) {
				announcers[sink] = append(announcers[sink], uid)
			}
		}
	}
	var decibels map[string]int
	if len(announcers) > 0 {
		var err error
		if decibels, err = ReadDucking(s.cfg.RuntimeDir); err != nil {
			s.cfg.Logf("claim gate: %v; ducking by %d dB", err, DefaultDuckDecibels)
		}
	}
	duckOf := func(sink uint32) int {
		if db, ok := decibels[s.globals[sink].Props["node.name"]]; ok {
			return db
		}
		return DefaultDuckDecibels
	}
	s.logDucking(announcers, duckOf)
	for id, proxy := range s.duck.proxies {
		uid := s.streams[id]
		c, _ := s.claimOf(uid)
		gain, set := 1.0, false
		if c.Volume != nil {
			gain, set = float64(*c.Volume)/100, true
		}
		if c.Role != RoleAnnouncement {
			deepest := -1
			for _, sink := range feeds[id] {
				if others := slices.DeleteFunc(slices.Clone(announcers[sink]), func(a string) bool { return a == uid }); len(others) > 0 {
					deepest = max(deepest, duckOf(sink))
				}
			}
			if deepest >= 0 {
				gain, set = gain*DuckGain(deepest), true
			}
		}
		prev, written := s.duck.gains[id]
		if written && prev == gain || !written && !set {
			continue
		}
		channels := max(s.duck.channels[id], 1)
		if err := s.conn.SetNodeVolume(proxy, float32(gain), channels); err != nil {
			s.cfg.Logf("claim gate: gain of stream %d of claim %s: %v", id, uid, err)
			continue
		}
		s.duck.gains[id] = gain
	}
}

// logDucking logs each sink whose ducking starts, changes or ends.
func (s *session) logDucking(announcers map[uint32][]string, duckOf func(uint32) int) {
	for sink, uids := range announcers {
		slices.Sort(uids)
		now := fmt.Sprintf("%v by %d dB", uids, duckOf(sink))
		if s.duck.ducked[sink] != now {
			s.cfg.Logf("claim gate: %s ducked: announcement of claim %s", s.globals[sink].Props["node.name"], now)
			s.duck.ducked[sink] = now
		}
	}
	for sink := range s.duck.ducked {
		if _, ok := announcers[sink]; !ok {
			s.cfg.Logf("claim gate: %s restored: no announcement runs on it", s.globals[sink].Props["node.name"])
			delete(s.duck.ducked, sink)
		}
	}
}
