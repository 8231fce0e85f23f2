// SPDX-License-Identifier: Apache-2.0

package bluetooth

// The connection states a claim's device status gives a controller
// (controllerStatus), the Peripheral's words for them where it has one.
const (
	StateConnected    = "connected"
	StateAsleep       = "asleep"
	StateDisconnected = "disconnected"
	StateAdapterOff   = "adapterOff"
	StateAdapterGone  = "adapterGone"
)

// controllerStatus is the data a claim's status.devices entry shows of a
// controller (KEP-4817, dra.Device.StatusData): its address, its name,
// its connection state and its battery charge in percent. BlueZ drops
// Battery1 with the link, so off the air the charge is the one last seen,
// under batteryWhenLastConnected instead of battery. connected is what
// controller decided; the state of a device off the air follows the same
// order as its Problem (controllerProblem).
func controllerStatus(c candidate, connected bool) map[string]any {
	data := map[string]any{"address": c.peer.String()}
	if name := clip(displayName(c.peer, c.device)); name != "" {
		data["name"] = name
	}
	switch {
	case connected:
		data["connectionState"] = StateConnected
	case !c.live:
		data["connectionState"] = StateAdapterGone
	case !c.powered:
		data["connectionState"] = StateAdapterOff
	case ExpectsInput(c.device) && c.device.Trusted:
		data["connectionState"] = StateAsleep
	default:
		data["connectionState"] = StateDisconnected
	}
	switch {
	case c.live && c.device.HasBattery && c.device.Battery <= 100:
		data["battery"] = int(c.device.Battery)
	case c.hasLastBattery:
		data["batteryWhenLastConnected"] = int(c.lastBattery)
	}
	return data
}

// mediaBusStatus is the data a claim's entry shows of an adapter's media
// bus: the adapter's address, and whether bluetoothd still reports it.
func mediaBusStatus(adapter string, live bool) map[string]any {
	state := "present"
	if !live {
		state = StateAdapterGone
	}
	return map[string]any{"address": adapter, "adapterState": state}
}
