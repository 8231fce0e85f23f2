// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"fmt"

	"github.com/liken-sh/operators/internal/pipewire"
)

// DeclareConfig is what the declare init container runs with.
type DeclareConfig struct {
	Hardware
	// Node is the node's name (NODE_NAME), the first part of every name.
	Node string
	// PipeWireDir and WirePlumberDir are the drop-in directories.
	PipeWireDir, WirePlumberDir string
	// MediaBus is true when the claim delivered a Bluetooth media bus
	// (DBUS_SYSTEM_BUS_ADDRESS is set): WirePlumber's Bluetooth monitor
	// is turned on.
	MediaBus bool
	// ALSAPath, when set, replaces hw:<card>,<pcm> in every declaration
	// and Rate sets audio.rate: tests and the demo declare ALSA's "null"
	// device where there is no card.
	ALSAPath string
	Rate     int
	// SpecLayouts, when set, reads the spec.layout of the named Sinks
	// (device names); a Sink it leaves out keeps its hardware layout. An
	// error makes every output fall back to its hardware layout, and is
	// reported once in Problems.
	SpecLayouts func(sinks []string) (map[string][]string, error)
}

// DeclareResult says what Declare wrote.
type DeclareResult struct {
	Declaration string   // the PipeWire drop-in's path
	Fragments   []string // the WirePlumber drop-ins written
	Endpoints   []Endpoint
	// Problems are the cards and outputs left out, and the outputs
	// declared from what could be read (Faults: a corrupt ELD gives no
	// ELD layout), each naming card and PCM.
	Problems []error
}

// Declare writes PipeWire's declaration of every playback and capture PCM
// of the claimed cards (HDMI outputs with no monitor included), each
// Sink's layout chosen by ChooseLayout, and WirePlumber's fragments. Problems with single cards or outputs are reported and the
// rest is declared; an error means /dev/snd could not be read or a file
// could not be written, and the pod must not start on it.
func Declare(cfg DeclareConfig) (DeclareResult, error) {
	if cfg.PipeWireDir == "" {
		cfg.PipeWireDir = pipewire.DeclarationDir
	}
	if cfg.WirePlumberDir == "" {
		cfg.WirePlumberDir = pipewire.WirePlumberDropInDir
	}
	var res DeclareResult
	cards, problems, err := cfg.Hardware.Cards()
	if err != nil {
		return res, err
	}
	eps, more := Endpoints(cfg.Node, cards)
	res.Endpoints, res.Problems = eps, append(append(problems, more...), Faults(eps)...)
	// WirePlumber's fragments first: they are the same at every start, so
	// a failure there must not already have replaced the declaration.
	frags, err := pipewire.WriteWirePlumberFragments(cfg.WirePlumberDir, cfg.MediaBus)
	if err != nil {
		return res, fmt.Errorf("WirePlumber fragments: %w", err)
	}
	res.Fragments = frags
	var spec map[string][]string
	if cfg.SpecLayouts != nil {
		var sinks []string
		for _, e := range eps {
			if !e.Capture() {
				sinks = append(sinks, e.Name)
			}
		}
		if spec, err = cfg.SpecLayouts(sinks); err != nil {
			spec = nil
			res.Problems = append(res.Problems, fmt.Errorf("Sink layouts unreadable, every output takes its hardware layout: %w", err))
		}
	}
	path, err := pipewire.WriteDeclaration(cfg.PipeWireDir, Outputs(eps, cfg.ALSAPath, cfg.Rate, spec))
	if err != nil {
		return res, fmt.Errorf("declaration: %w", err)
	}
	res.Declaration = path
	return res, nil
}

// Outputs are the PipeWire declarations of endpoints, with the channel
// layout ChooseLayout picks from spec (spec.layout by device name; nil
// for none) and the hardware, and withheld (no node) where Withheld says
// so.
func Outputs(eps []Endpoint, alsaPath string, rate int, spec map[string][]string) []pipewire.Output {
	out := make([]pipewire.Output, 0, len(eps))
	for _, e := range eps {
		o := pipewire.Output{
			Card: e.PCM.Card(), Device: e.PCM.Device(), Direction: direction(e),
			PCMID: e.PCM.Info.ID, Name: e.NodeName, Output: e.Name,
			Description: fmt.Sprintf("%s (%s)", e.PCM.Info.ID, e.Card.Name),
			Path:        alsaPath, Rate: rate,
		}
		setLayout(&o, ChooseLayout(e, spec[e.Name]))
		o.Withheld = Withheld(e)
		out = append(out, o)
	}
	return out
}

// Withheld says why an endpoint must get no PipeWire node, "" when it
// gets one: an HDMI/DP output whose monitor is present but whose ELD
// lists no audio format (its speakers are off in its menu, a receiver
// that takes only bitstreams). A stream routed there would be lost
// without a sound, so there is nothing to route it to; the Sink is still
// published with the monitor and its connection type, tainted.
func Withheld(e Endpoint) string {
	if !e.Capture() && e.PCM.HasELD && e.PCM.ELD.Valid() && !e.PCM.ELD.ELD.Audio() {
		return "the monitor's ELD lists no audio format"
	}
	return ""
}
