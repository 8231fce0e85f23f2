// SPDX-License-Identifier: Apache-2.0

package bluez

import (
	"fmt"
	"slices"

	"github.com/godbus/dbus/v5"
)

// ChangeKind says what BlueZ announced.
type ChangeKind int

// The kinds of Change.
const (
	// InterfacesAdded: an object gained interfaces (a device was found or
	// an adapter registered).
	InterfacesAdded ChangeKind = iota + 1
	// InterfacesRemoved: an object lost interfaces (a device was removed,
	// an adapter left).
	InterfacesRemoved
	// PropertiesChanged: properties of an adapter or device changed or
	// were invalidated.
	PropertiesChanged
	// Resync: changes were not delivered one by one (the consumer fell
	// behind, or a signal could not be decoded); re-read everything.
	Resync
)

func (k ChangeKind) String() string {
	switch k {
	case InterfacesAdded:
		return "InterfacesAdded"
	case InterfacesRemoved:
		return "InterfacesRemoved"
	case PropertiesChanged:
		return "PropertiesChanged"
	case Resync:
		return "Resync"
	}
	return fmt.Sprintf("ChangeKind(%d)", int(k))
}

// Change is one announcement from bluetoothd. It says what changed, not
// the new values: the operator re-reads the tree after a settle window, so
// a missed value can never leave it with a stale one.
type Change struct {
	Kind ChangeKind
	// Path is the object the change is about; empty for Resync.
	Path dbus.ObjectPath
	// Interfaces are the interfaces added or removed, or for
	// PropertiesChanged the one interface whose properties changed.
	Interfaces []string
	// Properties are, for PropertiesChanged, the names that changed or
	// were invalidated, sorted.
	Properties []string
}

func (c Change) String() string {
	switch c.Kind {
	case PropertiesChanged:
		return fmt.Sprintf("%s %s %s %v", c.Kind, c.Path, c.Interfaces, c.Properties)
	case Resync:
		return c.Kind.String()
	}
	return fmt.Sprintf("%s %s %v", c.Kind, c.Path, c.Interfaces)
}

// maxQueued bounds the changes held for a slow consumer; past it the queue
// collapses into one Resync, so memory stays bounded and nothing is lost
// silently.
const maxQueued = 256

// pump turns signals into Changes until org.bluez loses its owner or the
// connection closes. It always drains godbus's channel, because godbus
// spawns a goroutine per signal (and loses their order) once the channel
// is full.
func (c *Client) pump() {
	defer close(c.done)
	defer close(c.changes)
	var queue []Change
	for {
		var out chan<- Change
		var next Change
		if len(queue) > 0 {
			out, next = c.changes, queue[0]
		}
		select {
		case s, ok := <-c.sigs:
			if !ok {
				c.stop(ErrConnectionLost)
				return
			}
			change, gone, keep := c.translate(s)
			if gone != nil {
				c.stop(gone)
				return
			}
			if keep {
				queue = enqueue(queue, change)
			}
		case out <- next:
			queue = queue[1:]
		}
	}
}

// enqueue appends ch, collapsing the queue into one Resync when it is full
// or already ends in one (a Resync covers everything after it too).
func enqueue(queue []Change, ch Change) []Change {
	if n := len(queue); n > 0 && queue[n-1].Kind == Resync {
		return queue
	}
	if ch.Kind == Resync || len(queue) >= maxQueued {
		return append(queue[:0], Change{Kind: Resync})
	}
	return append(queue, ch)
}

// translate reads one signal. gone is non-nil when org.bluez lost the
// owner this client follows; keep is false for signals that carry nothing
// (another sender, an owner change that is not a departure).
func (c *Client) translate(s *dbus.Signal) (ch Change, gone error, keep bool) { //nolint:revive // gone is not the call's failure but a result beside the change
	if s.Name == "org.freedesktop.DBus.NameOwnerChanged" {
		var name, old, now string
		if err := dbus.Store(s.Body, &name, &old, &now); err != nil || name != Service {
			return Change{}, nil, false
		}
		if now != c.owner {
			if now == "" {
				return Change{}, fmt.Errorf("%w (%s released org.bluez)", ErrBlueZGone, c.owner), false
			}
			return Change{}, fmt.Errorf("%w (org.bluez passed from %s to %s)", ErrBlueZGone, c.owner, now), false
		}
		return Change{}, nil, false
	}
	if s.Sender != c.owner {
		return Change{}, nil, false
	}
	switch s.Name {
	case objectManagerInterface + ".InterfacesAdded":
		var p dbus.ObjectPath
		var ifaces map[string]map[string]dbus.Variant
		if err := dbus.Store(s.Body, &p, &ifaces); err != nil {
			return Change{Kind: Resync}, nil, true
		}
		names := make([]string, 0, len(ifaces))
		for n := range ifaces {
			names = append(names, n)
		}
		slices.Sort(names)
		return Change{Kind: InterfacesAdded, Path: p, Interfaces: names}, nil, true
	case objectManagerInterface + ".InterfacesRemoved":
		var p dbus.ObjectPath
		var names []string
		if err := dbus.Store(s.Body, &p, &names); err != nil {
			return Change{Kind: Resync}, nil, true
		}
		return Change{Kind: InterfacesRemoved, Path: p, Interfaces: names}, nil, true
	case propertiesInterface + ".PropertiesChanged":
		var iface string
		var changed map[string]dbus.Variant
		var invalidated []string
		if err := dbus.Store(s.Body, &iface, &changed, &invalidated); err != nil {
			return Change{Kind: Resync}, nil, true
		}
		props := slices.Clone(invalidated)
		for n := range changed {
			props = append(props, n)
		}
		slices.Sort(props)
		return Change{Kind: PropertiesChanged, Path: s.Path, Interfaces: []string{iface}, Properties: slices.Compact(props)}, nil, true
	}
	return Change{}, nil, false
}
