// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/hid"
)

// productID is a device's vendor and product id; the zero value is
// unknown.
type productID struct {
	vendor, product uint32
}

// known reports whether the id names a vendor: 0 is what a device without
// a Device ID record reports.
func (id productID) known() bool { return id.vendor != 0 }

// attributes are the id as the vendor and product attributes spell them:
// lowercase hex of at least four digits, no prefix, as the liken.sh
// inventory driver spells a USB device's idVendor and idProduct.
func (id productID) attributes() (vendor, product string) {
	return fmt.Sprintf("%04x", id.vendor), fmt.Sprintf("%04x", id.product)
}

// parseModalias reads the vendor and product of a Device ID modalias as
// bluetoothd spells it in Device1.Modalias: "usb:vVVVVpPPPPdDDDD" or
// "bluetooth:vVVVVpPPPPdDDDD", four hex digits each (BlueZ's bt_modalias,
// src/uuid-helper.c, from the device's PnP or Device ID record, which
// bluetoothd keeps in the bond's [DeviceID] group). Anything else, and a
// vendor of 0, is unknown.
func parseModalias(s string) productID {
	source, rest, ok := strings.Cut(s, ":")
	if !ok || (source != "usb" && source != "bluetooth") || len(rest) != 15 ||
		rest[0] != 'v' || rest[5] != 'p' || rest[10] != 'd' {
		return productID{}
	}
	var v [3]uint64
	for i, field := range []string{rest[1:5], rest[6:10], rest[11:15]} {
		n, err := strconv.ParseUint(field, 16, 16)
		if err != nil {
			return productID{}
		}
		v[i] = n
	}
	if v[0] == 0 {
		return productID{}
	}
	return productID{vendor: uint32(v[0]), product: uint32(v[1])}
}

// ObserveHID records the vendor and product id (HID_ID) of every
// Bluetooth HID device the kernel has now, by peer, so that a controller's
// vendor and product attributes stay while it naps and its HID device is
// gone. It keeps the ids of the devices Observe last saw paired (or held
// by a departed adapter) and forgets the others, so call it after Observe.
// A device whose HID_ID has vendor 0 records nothing.
func (inv *Inventory) ObserveHID(devices []hid.Device) {
	if inv.ids == nil {
		inv.ids = map[bdaddr.Address]productID{}
	}
	for _, d := range devices {
		peer, err := bdaddr.Parse(d.Address)
		if id := (productID{vendor: d.Vendor, product: d.Product}); err == nil && id.known() {
			inv.ids[peer] = id
		}
	}
	paired := map[bdaddr.Address]bool{}
	add := func(ds []bluez.Device) {
		for _, d := range ds {
			if peer, err := bdaddr.Parse(d.Address); err == nil && (d.Paired || d.Bonded) {
				paired[peer] = true
			}
		}
	}
	add(inv.current.Devices)
	for _, d := range inv.departed {
		add(d.devices)
	}
	for peer := range inv.ids {
		if !paired[peer] {
			delete(inv.ids, peer)
		}
	}
}

// productID is the peer's id: the one its HID device last gave (HID_ID,
// what the kernel's device says), else the one bluetoothd reports in the
// device's modalias.
func (inv *Inventory) productID(peer bdaddr.Address, d bluez.Device) productID {
	if id, ok := inv.ids[peer]; ok {
		return id
	}
	return parseModalias(d.Modalias)
}
