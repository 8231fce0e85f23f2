// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/dra"
)

// CapacityStreams is every output's and input's capacity of streams
// (KEP-5075, DRA consumable capacity): the PipeWire streams that the
// claims holding the device may have on it at once, MaxStreams in all.
// A claim that asks for no streams is allocated DefaultStreams of them,
// so four such claims share one speaker (music, announcements, a voice
// satellite and a recorder in a home); a claim that asks for MaxStreams
// holds the device alone. The claim gate lets each claim's clients make
// at most the streams its allocation consumed.
//
// Sixteen is far from what PipeWire can mix (its graph runs hundreds of
// streams), and near what a household runs on one speaker; it bounds a
// tenant that opens streams in a loop. Four streams a claim cover a
// player that crossfades (two streams) beside a short sound effect.
const (
	CapacityStreams = "streams"
	MaxStreams      = gate.DefaultMaxStreams
	DefaultStreams  = 4
)

// streamsCapacity is a device's capacity of streams: MaxStreams,
// DefaultStreams for a claim that does not say, any whole number from 1
// to MaxStreams for one that does.
func streamsCapacity() map[dra.QualifiedName]resourceapi.DeviceCapacity {
	one := resource.MustParse("1")
	def := resource.MustParse(strconv.Itoa(DefaultStreams))
	all := resource.MustParse(strconv.Itoa(MaxStreams))
	return map[dra.QualifiedName]resourceapi.DeviceCapacity{
		CapacityStreams: {Value: all, RequestPolicy: &resourceapi.CapacityRequestPolicy{
			Default:    &def,
			ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: &one, Max: &all, Step: &one},
		}},
	}
}

// shareable makes d a device several claims may hold at once, each with
// its share of streams.
func shareable(d dra.Device) dra.Device {
	d.Capacity = streamsCapacity()
	d.AllowMultipleAllocations = true
	return d
}

// consumedStreams is the streams an allocation result consumed of its
// device. A result without consumed capacity (a cluster whose API server
// keeps no consumable capacity, where every device is exclusive, or an
// allocation made before the device was shareable) holds the device
// alone, so it gets every stream.
func consumedStreams(r resourceapi.DeviceRequestAllocationResult) int {
	q, ok := r.ConsumedCapacity[CapacityStreams]
	if !ok {
		return MaxStreams
	}
	return int(min(max(q.Value(), 1), MaxStreams))
}
