// SPDX-License-Identifier: Apache-2.0

package audio

import "github.com/liken-sh/operators/internal/dra"

// statusAttributes are the attributes a claim's status.devices entry
// repeats as its data (KEP-4817), under the same names: which Sink or
// Source it is, the PipeWire node.name a client plays to, how the output
// is connected, and for a Bluetooth speaker its name, address and the
// codec it runs; for an HDMI/DP output, the monitor's name. A value the
// device does not publish now (no node, no monitor) is left out.
var statusAttributes = []dra.QualifiedName{"sink", "source", "nodeName", "connectionType", "codec", "name", "address", "monitorName"}

// WithStatusData returns devices with each one's StatusData built from
// its attributes (statusAttributes). The share of a shared device is not
// in the data: the claim's entry carries it as its shareID.
func WithStatusData(devices []dra.Device) []dra.Device {
	out := make([]dra.Device, len(devices))
	for i, d := range devices {
		data := map[string]any{}
		for _, name := range statusAttributes {
			a, ok := d.Attributes[name]
			switch {
			case !ok:
			case a.StringValue != nil:
				data[string(name)] = *a.StringValue
			case a.IntValue != nil:
				data[string(name)] = *a.IntValue
			case a.BoolValue != nil:
				data[string(name)] = *a.BoolValue
			}
		}
		d.StatusData = data
		out[i] = d
	}
	return out
}
