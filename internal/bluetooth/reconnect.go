// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"maps"
	"slices"
	"time"

	"github.com/godbus/dbus/v5"
	"k8s.io/apimachinery/pkg/types"

	"github.com/liken-sh/operators/internal/backoff"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluez"
)

// Defaults of Config.ReconnectFirst and Config.ReconnectCeiling: the wait
// after a held speaker's first failed connect, and the most it grows to.
// A page that goes unanswered costs the radio a page timeout (5.12 s by
// default), so a speaker that stays off is paged a few times a minute at
// most, and one switched on waits at most 2 min.
const (
	DefaultReconnectFirst   = 10 * time.Second
	DefaultReconnectCeiling = 2 * time.Minute
)

// claimHolder is a ResourceClaim that holds a device.
type claimHolder struct {
	Namespace, Name string
	UID             types.UID
}

// Reconnectable reports whether the operator connects d while a claim
// holds it: a speaker, i.e. a device offering the A2DP sink (Profiles
// "audioSink") and nothing that makes it an input device (ExpectsInput:
// HID, a peripheral class or a HID appearance), that is paired, trusted,
// and not connected. A speaker does not page the host when it is switched
// on, so without the host's page it would stay off the air; a game
// controller pages the host itself, and a connect from the host would
// wake one that was put to sleep.
func Reconnectable(d bluez.Device) bool {
	return d.Paired && d.Trusted && !d.Connected &&
		slices.Contains(Profiles(d.UUIDs), "audioSink") && !ExpectsInput(d)
}

// reconnectSchedule decides when to connect each held speaker that is not
// connected: at once when it is first seen so (held, reconnectable), then
// after each failed attempt n (1, 2, ...) backoff.Doubling(first,
// ceiling, n-1) later. A new holder (a claim UID not seen in the
// episode) or a success starts the waits from the beginning again. The
// episode ends, and its state goes, when the speaker is connected, no
// longer held or no longer reconnectable. It holds no lock and reads no
// clock: the caller passes the time.
type reconnectSchedule struct {
	first, ceiling time.Duration
	links          map[string]*speakerLink // by device name (bdaddr.Address.Key)
	busy           map[string]uint64       // device name -> episode of the attempt in flight
	episodes       uint64                  // numbers episodes, so a late outcome finds its own
}

// speakerLink is one episode of a held speaker that is not connected.
type speakerLink struct {
	episode  uint64
	attempts int       // made since the start or the last reset
	due      time.Time // the next attempt may start then
	holders  []claimHolder
	seen     map[types.UID]bool // the holders counted in the episode
}

// connectAttempt is one Device1.Connect the schedule asks for.
type connectAttempt struct {
	Name    string          // the device name, the address in key form
	Address string          // as BlueZ spells it
	Alias   string          // the name to show, cleaned
	Path    dbus.ObjectPath // the Device1 object
	Episode uint64
	Number  int           // 1 for the first attempt of the episode or since a reset
	Holders []claimHolder // the claims that hold it, sorted
}

// connectOutcome is what the schedule made of an attempt's result.
type connectOutcome struct {
	// Current is false when the attempt's episode had ended meanwhile
	// (the claim went, the speaker connected by itself): nothing is
	// scheduled from it.
	Current bool
	// Wait is the wait before the next attempt; zero after a success.
	Wait time.Duration
}

func newReconnectSchedule(first, ceiling time.Duration) *reconnectSchedule {
	return &reconnectSchedule{first: first, ceiling: ceiling, links: map[string]*speakerLink{}, busy: map[string]uint64{}}
}

// plan returns the attempts to start at now, in device name order, and
// the earliest time a waiting one falls due (zero when none waits), given
// BlueZ's devices and the claims holding each device name.
func (s *reconnectSchedule) plan(now time.Time, devices []bluez.Device, held map[string][]claimHolder) ([]connectAttempt, time.Time) {
	wanted := map[string]bluez.Device{}
	for _, d := range devices {
		addr, err := bdaddr.Parse(d.Address)
		if err != nil || len(held[addr.Key()]) == 0 || !Reconnectable(d) {
			continue
		}
		wanted[addr.Key()] = d
	}
	for name := range s.links {
		if _, ok := wanted[name]; !ok {
			delete(s.links, name)
		}
	}
	var start []connectAttempt
	var next time.Time
	for _, name := range slices.Sorted(maps.Keys(wanted)) {
		d, holders := wanted[name], held[name]
		l := s.links[name]
		if l == nil {
			s.episodes++
			l = &speakerLink{episode: s.episodes, due: now, seen: map[types.UID]bool{}}
			s.links[name] = l
		}
		fresh := false
		seen := make(map[types.UID]bool, len(holders))
		for _, h := range holders {
			fresh = fresh || !l.seen[h.UID]
			seen[h.UID] = true
		}
		l.seen, l.holders = seen, holders
		if fresh && l.attempts > 0 {
			// A new claim: someone wants to play now, so the waits
			// start over.
			l.attempts, l.due = 0, now
		}
		if _, inFlight := s.busy[name]; inFlight {
			continue
		}
		if now.Before(l.due) {
			if next.IsZero() || l.due.Before(next) {
				next = l.due
			}
			continue
		}
		s.busy[name] = l.episode
		start = append(start, connectAttempt{Name: name, Address: d.Address, Alias: bluez.DisplayText(d.DisplayName(), 0),
			Path: d.Path, Episode: l.episode, Number: l.attempts + 1, Holders: slices.Clone(holders)})
	}
	return start, next
}

// done records the result of attempt a, ended at now.
func (s *reconnectSchedule) done(a connectAttempt, now time.Time, err error) connectOutcome {
	if s.busy[a.Name] == a.Episode {
		delete(s.busy, a.Name)
	}
	l := s.links[a.Name]
	if l == nil || l.episode != a.Episode {
		return connectOutcome{}
	}
	if err == nil {
		// BlueZ reports the link up within moments, which ends the
		// episode; until then, no second attempt.
		l.attempts, l.due = 0, now.Add(s.first)
		return connectOutcome{Current: true}
	}
	l.attempts++
	wait := backoff.Doubling(s.first, s.ceiling, l.attempts-1)
	l.due = now.Add(wait)
	return connectOutcome{Current: true, Wait: wait}
}

// reconnecting is the number of speakers in an episode.
func (s *reconnectSchedule) reconnecting() int { return len(s.links) }
