// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"fmt"
	"strings"

	"github.com/liken-sh/operators/internal/bdaddr"
)

// DriverName is the DRA driver name. It is also the domain of the taint
// keys and the CDI vendor.
const DriverName = "bluetooth.liken.sh"

// CDIClass is the CDI device class: every prepared device, controller or
// media bus, has the CDI kind "bluetooth.liken.sh/controller".
const CDIClass = "controller"

// MediaBusSuffix ends the name of a media bus device; nothing else tells it
// from a controller on the prepare path.
const MediaBusSuffix = "-media"

// ControllerName is a controller's device name: the peer address in
// lowercase with dashes, a DNS label that stays the same across reboots and
// reconnects (unlike the HID instance or the hci connection handle).
func ControllerName(peer bdaddr.Address) string { return peer.Key() }

// MediaBusName is the media bus device name of an adapter.
func MediaBusName(adapter bdaddr.Address) string { return adapter.Key() + MediaBusSuffix }

// ParseDeviceName recovers the address from a device name this driver
// publishes, and whether it names a media bus (then the address is the
// adapter's) or a controller (the peer's).
//
// Errors: a name of any other shape, quoted. Only the published spelling
// (lowercase with dashes) is accepted, so that one device has one name.
func ParseDeviceName(name string) (addr bdaddr.Address, mediaBus bool, err error) {
	key, mediaBus := strings.CutSuffix(name, MediaBusSuffix)
	addr, err = bdaddr.Parse(key)
	if err != nil || addr.Key() != key {
		return bdaddr.Address{}, false, fmt.Errorf("device %q is not a name %s publishes (a Bluetooth address in lowercase with dashes, optionally ending %q)", name, DriverName, MediaBusSuffix)
	}
	return addr, mediaBus, nil
}
