package audio

import (
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pipewire"
)

// Pass is what one reconcile pass computed from the claimed cards and a
// PipeWire graph: the operator logs Problems, answers prepare from
// Endpoints and Live, and publishes Devices.
type Pass struct {
	// Endpoints are the playback PCMs of the cards that could be read,
	// in card then PCM order.
	Endpoints []Endpoint
	// Devices are the DRA devices of Endpoints, in the same order.
	Devices []dra.Device
	// Live holds the node.names in the graph; empty when there was no
	// graph.
	Live map[string]bool
	// Problems are the cards and outputs left out, each naming the card
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
			live[n.Name] = true
		}
	}
	return Pass{Endpoints: eps, Devices: Devices(eps, live), Live: live, Problems: append(problems, more...)}, nil
}
