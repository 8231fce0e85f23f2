// SPDX-License-Identifier: Apache-2.0

package bluetooth

import (
	"fmt"

	"github.com/liken-sh/operators/internal/dra"
)

// What a device's dra.Device.Problem says, which the pods using it show
// as the message of their allocatedResourcesStatus (KEP-4680). A sleeping
// controller's is ProblemAsleep with its charge in brackets when known
// (see controllerProblem).
const (
	// ProblemAsleep: a trusted controller that expects input, bonded,
	// off the air while its adapter is on; it reconnects when woken
	// (for a gamepad, its home button). The Peripheral's Connected
	// condition says Asleep then too.
	ProblemAsleep = "asleep"
	// ProblemUntrusted: off the air and not trusted, so BlueZ refuses
	// its reconnection unless an agent accepts it.
	ProblemUntrusted = "not connected; not trusted, so it cannot reconnect by itself"
	// ProblemNotConnected: a device without input (a speaker, a phone)
	// off the air.
	ProblemNotConnected = "not connected"
	// ProblemAdapterOff: the adapter's radio is off (rfkill, or powered
	// down), so nothing can connect.
	ProblemAdapterOff = "not connected: the adapter is powered off"
	// ProblemAdapterGone: bluetoothd no longer reports the adapter
	// (unplugged, or bluetoothd left); a controller of it and its media
	// bus both say so.
	ProblemAdapterGone = "adapter gone"
	// ProblemNoInputNode: connected, and the kernel has registered no
	// evdev node for it (between connect and HID registration, or a mute
	// HID session).
	ProblemNoInputNode = "connected, but the kernel has no input node for it"
)

// controllerProblem says why a paired device is unfit, "" when it is fit:
// connected and, when it ExpectsInput, with an evdev node. connected and
// hasNode are what controller found. A trusted controller that expects
// input and is off the air is asleep, with the charge BlueZ reports now
// ("asleep (battery 40%)") or, since BlueZ's GATT battery plugin drops
// Battery1 with the link, the charge last seen ("asleep (battery 40% when
// last connected)").
func controllerProblem(c candidate, connected, hasNode bool) string {
	input := ExpectsInput(c.device)
	switch {
	case !c.live:
		return ProblemAdapterGone
	case connected && input && !hasNode:
		return ProblemNoInputNode
	case connected:
		return ""
	case !c.powered:
		return ProblemAdapterOff
	case !input:
		return ProblemNotConnected
	case !c.device.Trusted:
		return ProblemUntrusted
	case c.device.HasBattery && c.device.Battery <= 100:
		return fmt.Sprintf("%s (battery %d%%)", ProblemAsleep, c.device.Battery)
	case c.hasLastBattery:
		return fmt.Sprintf("%s (battery %d%% when last connected)", ProblemAsleep, c.lastBattery)
	}
	return ProblemAsleep
}

// ProblemReference lists every problem Devices can give a device, for
// docs/reference.
var ProblemReference = []dra.ProblemDoc{
	{Problem: ProblemAsleep, Doc: "a trusted controller that should have input nodes (a gamepad, a keyboard, a mouse) is off the air while the adapter is on: it reconnects when woken. With its charge when BlueZ reports one (`asleep (battery 40%)`), or the charge last seen (`asleep (battery 40% when last connected)`): BlueZ drops a GATT battery with the link"},
	{Problem: ProblemUntrusted, Doc: "off the air and not trusted: BlueZ takes its reconnection only through an agent; set the Peripheral's `spec.trusted: true`"},
	{Problem: ProblemNotConnected, Doc: "a paired device without input nodes (a speaker, a phone) is off the air"},
	{Problem: ProblemAdapterOff, Doc: "the adapter's radio is off, so nothing paired with it can connect"},
	{Problem: ProblemAdapterGone, Doc: "bluetoothd no longer reports the adapter (unplugged, or bluetoothd left the bus); on its controllers and on its media bus"},
	{Problem: ProblemNoInputNode, Doc: "connected, but the kernel has registered no evdev node for it yet (between connect and HID registration, or a mute HID session)"},
}
