// SPDX-License-Identifier: Apache-2.0

package relayd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/liken-sh/operators/internal/atomicfile"
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/evdev"
)

// state is the state file's content: the controllers' snapshots by
// address and the claims' controllers by claim UID.
type state struct {
	Snapshots map[string][]evdev.Capabilities `json:"snapshots"`
	Claims    map[string]string               `json:"claims"`
}

// maxState bounds the state file: a snapshot is about a kilobyte, and a
// node holds a handful of controllers and claims. The daemon never writes
// a state over it (saveLocked refuses), so what it wrote it can read at
// its next start.
const maxState = 4 << 20

// MaxDevices bounds the input devices of one controller's snapshot: a
// DualSense has three, a keyboard with media keys a few; each claim on
// the controller gets one virtual device per entry, and the kernel's
// evdev minors (1,024) are shared by the whole node. A snapshot from the
// API or a state file with more is refused; a controller the kernel shows
// with more has its first MaxDevices nodes (by path) recorded.
const MaxDevices = 16

// parseState decodes a state file and checks everything in it: each
// address is a Bluetooth address in BlueZ's spelling, each snapshot
// passes evdev's checks, each claim UID is a UID and names a controller
// with a snapshot. The error names the first entry that is wrong.
func parseState(data []byte) (state, error) {
	st := state{Snapshots: map[string][]evdev.Capabilities{}, Claims: map[string]string{}}
	if len(data) > maxState {
		return st, fmt.Errorf("relay state of %d bytes is over the %d-byte bound", len(data), maxState)
	}
	var raw struct {
		Snapshots map[string][]json.RawMessage `json:"snapshots"`
		Claims    map[string]string            `json:"claims"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return st, fmt.Errorf("relay state: %w", err)
	}
	for address, list := range raw.Snapshots {
		if a, err := bdaddr.Parse(address); err != nil || a.String() != address {
			return st, fmt.Errorf("relay state: snapshot key %q is not an address in BlueZ's spelling", address)
		}
		if len(list) > MaxDevices {
			return st, fmt.Errorf("relay state: controller %s has %d input devices, more than the %d a snapshot may have", address, len(list), MaxDevices)
		}
		for i, item := range list {
			caps, err := evdev.Parse(item)
			if err != nil {
				return st, fmt.Errorf("relay state: controller %s device %d: %w", address, i, err)
			}
			st.Snapshots[address] = append(st.Snapshots[address], caps)
		}
	}
	for uid, address := range raw.Claims {
		if !uidPattern.MatchString(uid) {
			return st, fmt.Errorf("relay state: claim UID %q is not a UID", uid)
		}
		if len(st.Snapshots[address]) == 0 {
			return st, fmt.Errorf("relay state: claim %s names controller %q, which has no snapshot", uid, address)
		}
		st.Claims[uid] = address
	}
	return st, nil
}

// loadState reads the state file at path; a missing file (or path "")
// is an empty state.
func loadState(path string) (state, error) {
	if path == "" {
		return parseState([]byte(`{}`))
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return parseState([]byte(`{}`))
	}
	if err != nil {
		return state{}, fmt.Errorf("relay state: %w", err)
	}
	st, err := parseState(data)
	if err != nil {
		return st, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// saveLocked writes the state file whole (atomicfile), so a crash leaves
// the old state or the new one. A state over maxState is not written
// (the file keeps the last one) and is an error, which the caller undoes
// its change on.
func (d *Daemon) saveLocked() error {
	if d.cfg.StatePath == "" {
		return nil
	}
	st := state{Snapshots: d.snapshots, Claims: map[string]string{}}
	for uid, c := range d.claims {
		st.Claims[uid] = c.address
	}
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if len(data) > maxState {
		return fmt.Errorf("relay state: %d bytes would be over the %d-byte bound, so it is not written (%d controllers, %d claims)", len(data), maxState, len(st.Snapshots), len(st.Claims))
	}
	if err := atomicfile.WriteFile(d.cfg.StatePath, data, 0o600); err != nil {
		return fmt.Errorf("relay state: %w", err)
	}
	return nil
}
