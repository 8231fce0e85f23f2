// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"errors"
	"fmt"

	"github.com/liken-sh/operators/internal/alsa/eld"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pipewire"
)

// Pass is what one reconcile pass computed from the claimed cards and a
// PipeWire graph: the operator logs Problems, answers prepare from
// Endpoints and Live, and publishes Devices.
type Pass struct {
	// Endpoints are the playback and capture PCMs of the cards that could
	// be read, in the order Endpoints lists them.
	Endpoints []Endpoint
	// Devices are the DRA devices of Endpoints, in the same order.
	Devices []dra.Device
	// Live holds the node.names in the graph; empty when there was no
	// graph.
	Live map[string]bool
	// Speakers are the paired Bluetooth speakers against the graph; the
	// operator fills them in beside the cards' endpoints, and publishes
	// their devices after Devices.
	Speakers []SpeakerEndpoint
	// Problems are the cards and outputs left out, and the outputs
	// published from what could be read (Faults), each naming the card
	// (and the PCM, where one is known) and what was wrong.
	Problems []error
}

// Reconcile is one pass's computation: it reads the claimed cards from
// hw, lists their endpoints for node, and forms each one's device against
// graph g. A nil g means PipeWire is not answering: every device is then
// tainted as having no sink. Problems with single cards or outputs are in
// the Pass; the error is only an unreadable /dev/snd, after which nothing
// may be published from this pass.
func Reconcile(node string, hw Hardware, g *pipewire.Graph) (Pass, error) {
	cards, problems, err := hw.Cards()
	if err != nil {
		return Pass{}, err
	}
	eps, more := Endpoints(node, cards)
	live := map[string]bool{}
	if g != nil {
		for _, n := range g.Nodes {
			// Only a sink or source this operator declared counts: every consumer
			// holds the socket and could create a stream node with an
			// output's node.name to pose as its sink.
			if n.Declared != nil && (n.MediaClass == pipewire.MediaClassSink || n.MediaClass == pipewire.MediaClassSource) {
				live[n.Name] = true
			}
		}
	}
	problems = append(append(problems, more...), Faults(eps)...)
	devices := Devices(eps, live)
	if g == nil {
		devices = Devices(eps, nil) // PipeWire down: no sink, no eviction
	}
	return Pass{Endpoints: eps, Devices: devices, Live: live, Problems: problems}, nil
}

// Faults are what went wrong reading outputs that are published all the
// same, one error per fault naming the card, PCM and output: an ELD
// element that could not be read or holds a corrupt block (published with
// no monitor; an empty block is a port with no monitor, not a fault), and
// a channel map that could not be read (declared without it).
func Faults(eps []Endpoint) []error {
	var out []error
	for _, e := range eps {
		if err := e.PCM.ELD.Err; e.PCM.HasELD && err != nil && !errors.Is(err, eld.ErrEmpty) {
			out = append(out, fmt.Errorf("%s (%s): %w; published with no monitor", e.PCM, e.Name, err))
		}
		if err := e.PCM.ChannelMapErr; err != nil {
			out = append(out, fmt.Errorf("%s (%s): channel map: %w", e.PCM, e.Name, err))
		}
	}
	return out
}
