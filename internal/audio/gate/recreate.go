// SPDX-License-Identifier: Apache-2.0

package gate

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/liken-sh/operators/internal/backoff"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/internal/pipewire/native"
)

// Making an absent declared node again.
//
// PipeWire's adapter factory opens the ALSA PCM while it makes the node
// (it reads the device's formats), so a PCM that cannot be opened when
// PipeWire loads its declaration (EBUSY: another program holds it, or on
// HDA HDMI every converter of the card is taken by its other PCMs) gets
// no node at all: the declaration's "nofail" flag only keeps PipeWire
// itself running (measured with PipeWire 1.4.2: "spa_alsa_open() ...
// playback open failed", then "create_object() usage: ..."). PipeWire
// never tries again. The gate does: it asks the adapter factory for the
// node with the declaration's arguments, first at once and then
// RecreateFirst after each failure, twice as late each time, at most
// RecreateMax apart, until the factory makes it. The node it gets is
// known by the daemon's bound_id answer to the gate's own request, which
// no other client can send or see, so it is trusted (Trusted.IDs) as the
// declared node while a node any other client makes with its name is
// not. The node belongs to the gate's connection: when that ends (a
// PipeWire restart, or the gate's own), the node goes with it and the
// next session makes it again if PipeWire's start did not.

// Backoff of the attempts to make an absent declared node.
const (
	RecreateFirst = time.Second
	RecreateMax   = 30 * time.Second
)

// Absent is a declared node PipeWire holds none of, as Trusted.Absent
// records it while the gate tries to make it.
type Absent struct {
	// Since is when the gate found it absent.
	Since time.Time `json:"since"`
	// Attempts counts the factory's refusals so far.
	Attempts int `json:"attempts"`
	// Errno is what the gate's own open of the PCM got after the last
	// refusal (probeOpen): 16 (EBUSY) while something holds it; 0 when
	// that open succeeded, or for a PCM that is not a card's hw: device.
	Errno int `json:"errno,omitempty"`
	// Next is when the next attempt is due.
	Next time.Time `json:"next"`
}

// Busy reports whether the PCM was found busy (EBUSY) after the last
// refusal.
func (a Absent) Busy() bool { return a.Errno == int(unix.EBUSY) }

// Reason is that open's error in words ("device or resource busy"), ""
// when it succeeded or was not tried.
func (a Absent) Reason() string {
	if a.Errno == 0 {
		return ""
	}
	return unix.Errno(a.Errno).Error()
}

// probeOpen opens the PCM device of a hw: output the way alsa-lib's hw
// plugin does (src/pcm/pcm_hw.c, snd_pcm_hw_open: O_RDWR, here with
// O_NONBLOCK so a held device answers at once) and closes it again, and
// returns the open's errno, 0 when it succeeded or o is not a card's hw:
// PCM. Why the factory refused is not in its answer (module-adapter
// answers every failure with EINVAL and its usage line, measured with
// PipeWire 1.4.2), and the kernel refuses an open of a playback PCM that
// is held (sound/core/pcm_native.c, snd_pcm_open_file) or, on HDA HDMI,
// whose card has no converter left (sound/pci/hda/patch_hdmi.c,
// hdmi_pcm_open) with EBUSY.
func probeOpen(o pipewire.Output) int {
	if o.Path != "" {
		return 0
	}
	c := byte('p')
	if o.Direction == pipewire.Capture {
		c = 'c'
	}
	fd, err := unix.Open(fmt.Sprintf("/dev/snd/pcmC%dD%d%c", o.Card, o.Device, c), unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errno, ok := err.(unix.Errno); ok {
			return int(errno)
		}
		return int(unix.EIO)
	}
	unix.Close(fd)
	return 0
}

// recreateBackoff is the wait after the attempts-th refusal.
func recreateBackoff(attempts int) time.Duration {
	return backoff.Doubling(RecreateFirst, RecreateMax, attempts-1)
}

// findAbsent marks every declared node the record has none of as absent,
// due now.
func (s *session) findAbsent(now time.Time) {
	for _, name := range sortedKeys(s.outputs) {
		if _, ok := s.trusted.IDs[name]; !ok {
			s.markAbsent(name, now)
		}
	}
	if len(s.absent) > 0 {
		s.writeAbsent()
	}
}

// markAbsent starts the attempts to make the declared node name; the
// first is due now. The caller writes the record.
func (s *session) markAbsent(name string, now time.Time) {
	if _, declared := s.outputs[name]; !declared || s.absent[name] != nil {
		return
	}
	s.absent[name] = &Absent{Since: now, Next: now}
	s.cfg.Logf("claim gate: declared node %s is absent; asking the adapter factory for it", name)
}

// armRetry sets t to fire when the next attempt is due (never while
// every absent node's attempt is under way, or none is absent).
func (s *session) armRetry(t *time.Timer, now time.Time) {
	var due time.Time
	for name, a := range s.absent {
		if s.pending(name) {
			continue
		}
		if due.IsZero() || a.Next.Before(due) {
			due = a.Next
		}
	}
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	if !due.IsZero() {
		t.Reset(max(due.Sub(now), 0))
	}
}

// pending reports whether an attempt to make name awaits the daemon's
// answer.
func (s *session) pending(name string) bool {
	for _, n := range s.creating {
		if n == name {
			return true
		}
	}
	for _, n := range s.made {
		if n == name {
			return true
		}
	}
	return false
}

// recreate asks the adapter factory for every absent node whose attempt
// is due.
func (s *session) recreate(now time.Time) {
	for _, name := range sortedKeys(s.absent) {
		a := s.absent[name]
		if s.pending(name) || now.Before(a.Next) {
			continue
		}
		proxy, err := s.conn.CreateNode("adapter", s.outputs[name].Args())
		if err != nil {
			s.cfg.Logf("claim gate: asking for declared node %s: %v", name, err)
			a.Next = now.Add(recreateBackoff(a.Attempts + 1))
			continue
		}
		s.creating[proxy] = name
	}
}

// recreated follows the daemon's answers to recreate: a refusal (an
// error on the request's proxy) backs off, and the node the daemon made
// is trusted once both its Bound answer and its announcement are in.
func (s *session) recreated(ev native.Event) {
	switch {
	case ev.Error != nil:
		name, ok := s.creating[ev.Error.ID]
		if !ok {
			return
		}
		delete(s.creating, ev.Error.ID)
		a := s.absent[name]
		if a == nil {
			return
		}
		a.Attempts++
		a.Errno = probeOpen(s.outputs[name])
		a.Next = time.Now().Add(recreateBackoff(a.Attempts))
		if a.Attempts == 1 || a.Attempts%10 == 0 {
			why := a.Reason()
			if why == "" {
				why = "see PipeWire's log"
			}
			s.cfg.Logf("claim gate: declared node %s cannot be made: its PCM cannot be opened (%s); attempt %d, next in %v",
				name, why, a.Attempts, recreateBackoff(a.Attempts))
		}
		s.writeAbsent()
	case ev.Bound != nil:
		name, ok := s.creating[ev.Bound.Proxy]
		if !ok {
			return
		}
		delete(s.creating, ev.Bound.Proxy)
		if g, there := s.globals[ev.Bound.Global]; there {
			s.adopt(name, g)
			s.regrant(g)
			return
		}
		s.made[ev.Bound.Global] = name
	case ev.Global != nil:
		if name, ok := s.made[ev.Global.ID]; ok {
			delete(s.made, ev.Global.ID)
			s.adopt(name, *ev.Global)
		}
	case ev.Removed != nil:
		delete(s.made, *ev.Removed)
	}
}

// adopt records g, the node the daemon made at the gate's request, as
// the declared node name.
func (s *session) adopt(name string, g native.Global) {
	v, _ := serial(g)
	s.trusted.Nodes[name], s.trusted.IDs[name] = v, g.ID
	a := s.absent[name]
	delete(s.absent, name)
	tries := 0
	if a != nil {
		tries = a.Attempts
	}
	s.cfg.Logf("claim gate: declared node %s made again as node %d after %d refusals", name, g.ID, tries)
	s.writeAbsent()
}

// writeAbsent writes the record with the absent nodes of now.
func (s *session) writeAbsent() {
	s.trusted.Absent = make(map[string]Absent, len(s.absent))
	for name, a := range s.absent {
		s.trusted.Absent[name] = *a
	}
	if err := writeTrusted(s.cfg.RuntimeDir, s.trusted); err != nil {
		s.cfg.Logf("claim gate: writing %s: %v", TrustedFile, err)
	}
}
