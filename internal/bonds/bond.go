// SPDX-License-Identifier: Apache-2.0

package bonds

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/evdev"
)

// Size limits. A Secret holds at most 1 MiB of data (the API server's
// limit), and a bond's two files share one Secret, so they share the MiB.
// An info file is a few hundred bytes (343 measured by the reference, 315
// and 714 in the fixtures); the cache is the larger file, with SDP records
// and, for LE, the GATT database.
const (
	// MaxInfoSize bounds an info file, in bytes.
	MaxInfoSize = 64 << 10
	// MaxCacheSize bounds a cache file, in bytes.
	MaxCacheSize = 1<<20 - MaxInfoSize
)

// Bond is one bonded device of one adapter: BlueZ's two files about it,
// byte for byte.
type Bond struct {
	// Adapter is the local adapter's address.
	Adapter bdaddr.Address
	// Device is the remote device's address.
	Device bdaddr.Address
	// Info is <ADAPTER>/<DEVICE>/info: never empty in a valid bond.
	Info []byte
	// Cache is <ADAPTER>/cache/<DEVICE>, or nil when there is none.
	Cache []byte
	// Input is what the device is as an input device, when it is one
	// and has connected: the JSON list of evdev.Capabilities the input
	// relay recorded, one per input device, or nil. It is not a BlueZ
	// file: the operator fills it in from the relay, and keeps it with
	// the bond so a relay in a new pod can make a claim's devices while
	// the controller sleeps.
	Input []byte
}

// MaxInputSize bounds a bond's Input, in bytes: a controller's snapshot
// is a few kilobytes.
const MaxInputSize = 64 << 10

// MaxInputDevices bounds the input devices of a bond's Input: the input
// relay's bound on one controller's snapshot (relayd.MaxDevices), which
// would refuse a longer list.
const MaxInputDevices = 16

// CheckInput returns an error when data cannot be a bond's Input: larger
// than MaxInputSize, not a JSON list, a list of more than MaxInputDevices,
// or holding an entry evdev.Parse refuses (which names what is wrong).
// Empty data is no Input, and fine.
func CheckInput(data []byte) error {
	_, err := ParseInput(data)
	return err
}

// ParseInput decodes a bond's Input into its input devices' capabilities,
// each checked by evdev.Parse; empty data is none.
func ParseInput(data []byte) ([]evdev.Capabilities, error) {
	if len(data) == 0 {
		return nil, nil
	}
	if len(data) > MaxInputSize {
		return nil, fmt.Errorf("input capabilities of %d bytes are over the %d-byte bound", len(data), MaxInputSize)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("input capabilities: %w", err)
	}
	if raw == nil {
		return nil, errors.New("input capabilities: null, want a JSON list")
	}
	if len(raw) > MaxInputDevices {
		return nil, fmt.Errorf("input capabilities: %d input devices, more than the %d a controller may have", len(raw), MaxInputDevices)
	}
	out := make([]evdev.Capabilities, 0, len(raw))
	for i, r := range raw {
		c, err := evdev.Parse(r)
		if err != nil {
			return nil, fmt.Errorf("input device %d: %w", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// CheckInfo returns an error when data cannot be a bond's info file: empty,
// larger than MaxInfoSize, or refused by ParseInfo.
func CheckInfo(data []byte) error {
	switch {
	case len(data) == 0:
		return errors.New("info is empty")
	case len(data) > MaxInfoSize:
		return fmt.Errorf("info is %d bytes, more than the %d allowed", len(data), MaxInfoSize)
	}
	if _, err := ParseInfo(data); err != nil {
		return fmt.Errorf("info is not a BlueZ key file: %w", err)
	}
	return nil
}

// checkBonded returns an error when info, a file CheckInfo accepts, holds
// no link key and no long term key (Info.Bonded is false) and is not a
// trusted keyless device (Info.Keyless, a sixaxis controller). BlueZ
// rewrites a bond's file without its key after a failed re-pair: that is
// no bond, and stored over one it would lose the key that lets the device
// reconnect; Sync never writes a keyless file over a keyed one.
func checkBonded(info []byte) error {
	parsed, err := ParseInfo(info)
	if err != nil {
		return fmt.Errorf("info is not a BlueZ key file: %w", err)
	}
	if !parsed.Bonded() && !parsed.Keyless() {
		return errors.New("info holds no link key or long term key: not a bond")
	}
	return nil
}

// keyless reports whether info parses and is Info.Keyless.
func keyless(info []byte) bool {
	parsed, err := ParseInfo(info)
	return err == nil && parsed.Keyless()
}

// CheckCache returns an error when non-empty data cannot be a cache file:
// larger than MaxCacheSize, or not a key file. Empty data means "no cache"
// and passes.
func CheckCache(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	if len(data) > MaxCacheSize {
		return fmt.Errorf("cache is %d bytes, more than the %d allowed", len(data), MaxCacheSize)
	}
	if _, err := ParseKeyFile(data); err != nil {
		return fmt.Errorf("cache is not a BlueZ key file: %w", err)
	}
	return nil
}

// Check returns an error when b is not a bond this package would store or
// write: a zero adapter or device address, a device that is the broadcast
// address or the adapter itself, or an info or cache that fails CheckInfo
// or CheckCache.
func (b Bond) Check() error {
	switch {
	case b.Adapter.IsZero() || b.Device.IsZero():
		return fmt.Errorf("bond %s of adapter %s: zero address", b.Device, b.Adapter)
	case b.Device.IsBroadcast():
		return fmt.Errorf("bond %s of adapter %s: the broadcast address names no device", b.Device, b.Adapter)
	case b.Device == b.Adapter:
		return fmt.Errorf("bond %s of adapter %s: the adapter's own address names no device", b.Device, b.Adapter)
	}
	if err := CheckInfo(b.Info); err != nil {
		return fmt.Errorf("bond %s of adapter %s: %w", b.Device, b.Adapter, err)
	}
	if err := CheckCache(b.Cache); err != nil {
		return fmt.Errorf("bond %s of adapter %s: %w", b.Device, b.Adapter, err)
	}
	if err := CheckInput(b.Input); err != nil {
		return fmt.Errorf("bond %s of adapter %s: %w", b.Device, b.Adapter, err)
	}
	return nil
}
