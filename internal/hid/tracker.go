// SPDX-License-Identifier: Apache-2.0

package hid

import (
	"path"
	"strings"
	"sync"

	"github.com/liken-sh/operators/internal/uevent"
)

// Change is what one uevent means for Bluetooth HID discovery.
//
// Relevant is true when the event concerns a Bluetooth HID device or an
// input device below one, so the caller should rescan (Discover). Address is
// the peer's address in BlueZ's spelling when the event or the Tracker's
// memory names it, "" otherwise.
type Change struct {
	Relevant bool
	Address  string
}

// Tracker maps kernel uevents to Changes. It remembers each Bluetooth HID
// device's DEVPATH and address, because when a device goes away its sysfs
// directory is gone before the removal events arrive, and the input
// devices' removals carry no HID variables. It is safe for concurrent use.
type Tracker struct {
	mu    sync.Mutex
	paths map[string]string // DEVPATH of a HID device -> address
}

// NewTracker returns a Tracker that remembers nothing yet.
func NewTracker() *Tracker { return &Tracker{paths: map[string]string{}} }

// Reset replaces the Tracker's memory with the devices of a fresh scan, so
// that memory stays bounded after lost events (uevent.ErrOverflow).
func (t *Tracker) Reset(devices []Device) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.paths = make(map[string]string, len(devices))
	for _, d := range devices {
		t.paths[d.DevPath] = d.Address
	}
}

// Remembered returns the address remembered for a HID device's DEVPATH.
func (t *Tracker) Remembered(devPath string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.paths[devPath]
	return a, ok
}

// Observe classifies one uevent.
//
// Subsystem "hid": relevant when HID_ID names bus 0005, or, lacking HID_ID,
// when the DEVPATH's last element is a bus-0005 HID name. The address is
// HID_UNIQ when it is one, else the remembered one. "add" and "bind"
// remember DEVPATH -> address; "remove" forgets it, because the instance
// part of a DEVPATH can be reused.
//
// Subsystem "input": relevant when the DEVPATH lies below a remembered
// Bluetooth HID device (the address is then the remembered one) or below a
// path element that is a bus-0005 HID name (the address is then the input
// device's UNIQ when it is one, else unknown).
//
// Any other subsystem is not relevant.
func (t *Tracker) Observe(ev uevent.Event) Change {
	switch ev.Subsystem {
	case "hid":
		return t.observeHID(ev)
	case "input":
		return t.observeInput(ev)
	}
	return Change{}
}

func (t *Tracker) observeHID(ev uevent.Event) Change {
	if id, ok := ev.Env["HID_ID"]; ok {
		bus, _, _, err := parseID(id)
		if err != nil || bus != BusBluetooth {
			return Change{}
		}
	} else if !isBluetoothName(path.Base(ev.DevPath)) {
		return Change{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	addr, err := normalizeAddress(ev.Env["HID_UNIQ"])
	if err != nil {
		addr = t.paths[ev.DevPath]
	}
	switch ev.Action {
	case "add", "bind":
		if addr != "" {
			t.paths[ev.DevPath] = addr
		}
	case "remove":
		delete(t.paths, ev.DevPath)
	}
	return Change{Relevant: true, Address: addr}
}

func (t *Tracker) observeInput(ev uevent.Event) Change {
	t.mu.Lock()
	// The nearest remembered ancestor: walk up the DEVPATH.
	for p := path.Dir(ev.DevPath); p != "/" && p != "."; p = path.Dir(p) {
		if addr, ok := t.paths[p]; ok {
			t.mu.Unlock()
			return Change{Relevant: true, Address: addr}
		}
	}
	t.mu.Unlock()
	for _, elem := range strings.Split(ev.DevPath, "/") {
		if isBluetoothName(elem) {
			// The input core quotes UNIQ ("UNIQ=\"...\"",
			// input_dev_uevent in drivers/input/input.c).
			addr, _ := normalizeAddress(strings.Trim(ev.Env["UNIQ"], `"`))
			return Change{Relevant: true, Address: addr}
		}
	}
	return Change{}
}

// isBluetoothName reports whether a sysfs name is a bus-0005 HID name.
func isBluetoothName(name string) bool {
	return strings.HasPrefix(name, bluetoothPrefix) && sysNamePattern.MatchString(name)
}
