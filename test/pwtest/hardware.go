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

// DummyDriverGroup is the node.group of PipeWire's Dummy-Driver, the
// timer node pipewire.conf's context.objects create (factory
// support.node.driver, priority.driver 200000). PipeWire schedules the
// nodes of one group under one driver, the highest-priority one among
// them (src/pipewire/context.c, collect_nodes and
// pw_context_recalc_graph).
const DummyDriverGroup = "pipewire.dummy"

// MonotonicClockName is the clock.name the Dummy-Driver gives its clock
// when pipewire.conf names none (spa/plugins/support/node-driver.c:
// "clock.system." and the clock id, CLOCK_MONOTONIC by default).
const MonotonicClockName = "clock.system.monotonic"

// LikeHardware returns outputs with every node declared on ALSA's "null"
// device made to behave as a sound card does. A card's PCM offers its
// own channel count and runs on its own clock. The null device offers
// every count up to 64, which PipeWire takes, so each such node without
// a declared layout gets HardwareChannels channels.
//
// The null device has no clock, and an ALSA node driving the graph from
// it runs away. In timer mode PipeWire's ALSA driver steers its wake-ups
// with a DLL fed the device's fill level less its target
// (spa/plugins/alsa/alsa-pcm.c, update_time); the null device reports
// an empty buffer (delay 0) on every cycle, so the error never closes,
// the DLL's integrator grows without bound and the graph runs faster and
// faster. Measured with PipeWire 1.4.2 playing into a null sink: 1.3
// times real time over the first 30 s, 4.4 over the fourth 30 s, and
// after 10 minutes 95 % of a core spent re-arming, about 36,000 times a
// second, a timer whose target had already passed. Declaring node.driver
// false does not prevent it: the ALSA node reports node.driver true in
// its own node info (alsa-pcm.c, spa_alsa_emit_node_info), which
// replaces the declared value (src/pipewire/impl-node.c, node_info).
//
// So each null node joins DummyDriverGroup, where the Dummy-Driver
// drives it at real time from CLOCK_MONOTONIC, as a card's clock would,
// and takes MonotonicClockName as its clock.name: with the driver's
// clock name the ALSA follower does not rate-match against the device
// (alsa-pcm.c, setup_matching), which would steer a resampler from the
// same empty-buffer reading. Other outputs are returned as they are.
func LikeHardware(outputs []pipewire.Output) []pipewire.Output {
	out := slices.Clone(outputs)
	for i, o := range out {
		if o.Path == "null" {
			out[i] = paced(o)
		}
	}
	return out
}

// paced returns o, a node on ALSA's null device (or a plugin over it),
// with HardwareChannels channels when it declares no count, in
// DummyDriverGroup and with MonotonicClockName as its clock.name, as
// LikeHardware says why. o's Extra is copied, not changed.
func paced(o pipewire.Output) pipewire.Output {
	if o.Channels == 0 {
		o.Channels = HardwareChannels
	}
	o.Extra = maps.Clone(o.Extra)
	if o.Extra == nil {
		o.Extra = map[string]string{}
	}
	o.Extra["node.group"] = DummyDriverGroup
	o.Extra["clock.name"] = MonotonicClockName
	return o
}
