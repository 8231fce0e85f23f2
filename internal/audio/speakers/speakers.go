// SPDX-License-Identifier: Apache-2.0

// Package speakers is the audio operator's reader of BlueZ: which paired
// Bluetooth speakers (A2DP sinks) the node's bluetoothd knows, whether each
// is connected, and what it is called. It reads BlueZ's documented D-Bus
// API (doc/org.bluez.Device.rst) over the media bus the operator's claim
// delivered, through internal/bluez, and follows BlueZ's ObjectManager and
// PropertiesChanged signals (matched on the sender org.bluez); when the bus
// goes away it watches the socket's directory with fsnotify and connects to
// the bus that replaces it.
package speakers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluez"
)

// AudioSinkUUID is the service class of an A2DP sink, a device that plays
// what it is sent (Bluetooth Assigned Numbers, Service Class 0x110B
// AudioSink), in BlueZ's lower-case spelling of Device1.UUIDs.
const AudioSinkUUID = "0000110b-0000-1000-8000-00805f9b34fb"

// Speaker is one paired A2DP sink as BlueZ reports it.
type Speaker struct {
	// Address is BlueZ's spelling, upper case with colons.
	Address bdaddr.Address
	// Alias is Device1.Alias cleaned by bluez.DisplayText (no control,
	// escape or bidi character, at most bluez.MaxNameBytes): the name to
	// show (a person's alias, else the device's own name); "" when BlueZ
	// reports none.
	Alias string
	// Connected is Device1.Connected: a baseband link is up.
	Connected bool
	// Path is the Device1 object path.
	Path dbus.ObjectPath
}

// Name is the speaker's DRA device name and object name: the address in
// lower case with dashes ("a0-ab-51-33-b7-12"), as the Bluetooth
// operator names its Peripheral.
func (s Speaker) Name() string { return s.Address.Key() }

// FromObjects returns the speakers in BlueZ's tree: every Device1 that is
// paired and lists AudioSinkUUID, sorted by address. A device whose
// Address is not a Bluetooth address is left out with an error naming its
// path and the address as BlueZ gave it; an adapter is never a speaker.
func FromObjects(objs bluez.Objects) ([]Speaker, []error) {
	var out []Speaker
	var problems []error
	for _, d := range objs.Devices {
		if !d.Paired || !slices.Contains(d.UUIDs, AudioSinkUUID) {
			continue
		}
		addr, err := bdaddr.Parse(d.Address)
		if err != nil || !strings.EqualFold(addr.String(), d.Address) {
			problems = append(problems, fmt.Errorf("BlueZ device %s: address %q is not a Bluetooth address (six colon-separated octets); ignored", d.Path, clip(d.Address)))
			continue
		}
		// The alias is what the speaker called itself over the air unless
		// a person renamed it: untrusted text, shown in the Sink's status
		// and the slice, so it is cleaned as every such name is.
		out = append(out, Speaker{Address: addr, Alias: bluez.DisplayText(d.Alias, 0), Connected: d.Connected, Path: d.Path})
	}
	slices.SortFunc(out, func(a, b Speaker) int { return cmp.Compare(a.Name(), b.Name()) })
	out = slices.CompactFunc(out, func(a, b Speaker) bool { return a.Address == b.Address })
	return out, problems
}

// clip keeps a quoted value of the bus short in a log line.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
