// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"slices"

	"github.com/liken-sh/operators/internal/dra"
)

// AttributeReference lists every attribute Devices can publish, in the
// order a person reads them: the controllers' own, then the flags named
// after the profiles their service UUIDs announce (from the same table
// Profiles reads) and after their class's service bits (the table
// Class.Services reads), then the media bus's. docs/reference/attributes.md
// is rendered from it, and a test checks that Devices publishes nothing it
// does not list.
func AttributeReference() []dra.AttributeDoc {
	out := []dra.AttributeDoc{
		{Name: "address", Type: "string", Doc: "the peer's Bluetooth address (`E4:17:D8:C5:67:6D`); on a media bus, the adapter's"},
		{Name: "connected", Type: "bool", Doc: "whether the device is connected now (controllers only)"},
		{Name: "name", Type: "string", Doc: "BlueZ's alias for the device, else the name it reported, cut to 64 bytes; absent when it never reported one"},
		{Name: "icon", Type: "string", Doc: "BlueZ's icon name (`input-gaming`, `audio-card`)"},
		{Name: "modalias", Type: "string", Doc: "the device id record as BlueZ reports it (`usb:v2DC8p6101d0001`)"},
		{Name: "vendor", Type: "string", Doc: "the vendor id, four lowercase hex digits as the liken.sh driver spells a USB vendor (`2dc8`): the HID device's (HID_ID) as last seen, so it stays while the device sleeps, else the modalias's; a USB-IF id for a `usb:` modalias, a Bluetooth SIG company id for a `bluetooth:` one; absent when unknown (0)"},
		{Name: "product", Type: "string", Doc: "the product id beside `vendor`, four lowercase hex digits (`3820`); present exactly when `vendor` is"},
		{Name: "addressType", Type: "string", Doc: "`public` or `random` (LE)"},
		{Name: "appearance", Type: "int", Doc: "the GAP appearance value; absent when 0"},
		{Name: "classOfDevice", Type: "int", Doc: "the raw 24-bit Class of Device"},
		{Name: "majorClass", Type: "string", Doc: "the major device class (`peripheral`, `audio-video`, `phone`)"},
		{Name: "minorClass", Type: "string", Doc: "the minor device class under it (`gamepad`, `loudspeaker`, `keyboard-pointing`)"},
	}
	var profiles []string
	for _, p := range profileFlags {
		profiles = append(profiles, p)
	}
	slices.Sort(profiles)
	for _, p := range slices.Compact(profiles) {
		out = append(out, dra.AttributeDoc{Name: dra.QualifiedName(p), Type: "bool", Doc: "true when a service UUID announces this profile; absent otherwise"})
	}
	for _, s := range serviceBits {
		out = append(out, dra.AttributeDoc{Name: dra.QualifiedName(s.name), Type: "bool", Doc: "true when this service class bit of the Class of Device is set; absent otherwise"})
	}
	return append(out,
		dra.AttributeDoc{Name: "kind", Type: "string", Doc: "`" + mediaBusKind + "` on an adapter's media bus device; absent on controllers"},
		dra.AttributeDoc{Name: attrSupportsSound, Type: "bool", Doc: "true on a media bus, which the audio operator's claim selects"},
	)
}

// TaintReference lists every taint Devices can set.
var TaintReference = []dra.TaintDoc{
	{Key: TaintDisconnected, Effect: dra.TaintNoExecute, Doc: "a paired controller that is not connected (asleep, off, out of range); running consumers are evicted after their toleration. On a media bus the effect is NoSchedule: bluetoothd no longer reports the adapter"},
	{Key: TaintNoInputNode, Effect: dra.TaintNoSchedule, Doc: "a device that should have evdev nodes has none (off the air and unknown to the input relay, between connect and HID registration, or a mute HID session); do not tolerate it: prepare would fail"},
}
