// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"github.com/liken-sh/operators/internal/bdaddr"
	"github.com/liken-sh/operators/internal/bluez"
	"github.com/liken-sh/operators/internal/dra"
	resourceapi "k8s.io/api/resource/v1"
)

// maxStringAttribute is the API's limit on a string attribute's length in
// bytes (resource.k8s.io/v1 DeviceAttributeMaxValueLength).
const maxStringAttribute = 64

// hidAppearanceCategory is the appearance category of HID devices
// (keyboard, mouse, joystick, gamepad, ...): values 0x03C0..0x03FF, whose
// bits 15..6 are 0x00F (Assigned Numbers section 2.6 "Appearance Values").
const hidAppearanceCategory = 0x00F

// controllerAttributes describes one paired device. Every attribute is in
// the driver's domain and is left out when unknown, never published empty;
// a flag is published only as true.
//
// connected is passed separately because a departed adapter's devices are
// published as not connected whatever BlueZ said last.
func controllerAttributes(peer bdaddr.Address, d bluez.Device, connected bool) dra.Attributes {
	attrs := dra.Attributes{
		"address":   dra.String(peer.String()),
		"connected": dra.Bool(connected),
	}
	setString := func(name, v string) {
		if v = clip(v); v != "" {
			attrs[resourceapi.QualifiedName(name)] = dra.String(v)
		}
	}
	setString("name", displayName(peer, d))
	setString("icon", d.Icon)
	setString("modalias", d.Modalias)
	setString("addressType", d.AddressType)
	if d.Appearance != 0 {
		attrs["appearance"] = dra.Int(int64(d.Appearance))
	}
	if c := Class(d.Class); c != 0 && c <= 0xFFFFFF {
		// The raw value is published even in a format this package
		// cannot decode, so a consumer can still select on it.
		attrs["classOfDevice"] = dra.Int(int64(c))
		setString("majorClass", c.Major())
		setString("minorClass", c.Minor())
		for _, s := range c.Services() {
			attrs[resourceapi.QualifiedName(s)] = dra.Bool(true)
		}
	}
	for _, p := range Profiles(d.UUIDs) {
		attrs[resourceapi.QualifiedName(p)] = dra.Bool(true)
	}
	return attrs
}

// displayName is bluez.Device.DisplayName, the name a Peripheral's
// status.name shows too, with the peer address the device is published
// under standing in for one BlueZ did not report.
func displayName(peer bdaddr.Address, d bluez.Device) string {
	if d.Address == "" {
		d.Address = peer.String()
	}
	return d.DisplayName()
}

// clip makes an outside string fit a string attribute: what a device
// reports is cleaned as bluez.DisplayText cleans a name (no control,
// format or invalid bytes, white space made single spaces and trimmed;
// SDP names are often padded) and cut to the API's 64 bytes without
// splitting a character.
func clip(s string) string {
	return bluez.DisplayText(s, maxStringAttribute)
}

// ExpectsInput reports whether a device should register evdev nodes while
// it is connected: it offers HID (classic or over GATT), its class is
// peripheral, or its appearance is in the HID category. A speaker or a
// phone has no input node by nature, so only such devices are tainted
// no-input-node.
func ExpectsInput(d bluez.Device) bool {
	for _, p := range Profiles(d.UUIDs) {
		if p == "input" {
			return true
		}
	}
	return Class(d.Class).IsPeripheral() || d.Appearance>>6 == hidAppearanceCategory
}
