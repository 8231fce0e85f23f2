// SPDX-License-Identifier: Apache-2.0

package pwtest

import (
	"maps"
	"slices"

	"github.com/liken-sh/operators/internal/pipewire"
)

// HardwareChannels is the channel count LikeHardware gives a stand-in
// node whose layout the declaration leaves open: stereo, what the
// recorded machines' analog outputs and microphones offer.
const HardwareChannels = 2

// LikeHardware returns outputs with every node declared on ALSA's "null"
// device made to behave as a sound card does. A card's PCM offers its
// own channel count and runs on its own clock; the null device offers
// every count up to 64, which PipeWire takes, and has no clock, so a node
// driving the graph from it runs as fast as the CPU allows and a
// recording of one second ends at once. So each such node without a
// declared layout gets HardwareChannels channels, and none drives the
// graph (node.driver false): they follow PipeWire's Dummy-Driver, a timer
// at real time (pipewire.conf's context.objects), as nodes follow a
// card's clock. Other outputs are returned as they are.
func LikeHardware(outputs []pipewire.Output) []pipewire.Output {
	out := slices.Clone(outputs)
	for i, o := range out {
		if o.Path != "null" {
			continue
		}
		if o.Channels == 0 {
			out[i].Channels = HardwareChannels
		}
		out[i].Extra = maps.Clone(o.Extra)
		if out[i].Extra == nil {
			out[i].Extra = map[string]string{}
		}
		out[i].Extra["node.driver"] = "false"
	}
	return out
}
