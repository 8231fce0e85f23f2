// SPDX-License-Identifier: Apache-2.0

package capture

import (
	"strconv"
	"strings"

	"github.com/liken-sh/operators/internal/captureapi"
	"github.com/liken-sh/operators/internal/pipewire"
)

// defaultClockRate is PipeWire's default.clock.rate (pipewire.conf), the
// rate a suspended node that declares none runs at when a stream wakes
// it.
const defaultClockRate = 48000

// target is the node a tap records, found in one graph reading.
type target struct {
	node     pipewire.Node
	rate     int
	channels int
	position []string
	monitor  bool // a sink: record its monitor ports
}

// resolve finds the node of the Sink or Source name in g: the node whose
// liken.audio.output is name and whose media class is the resource's
// (Audio/Sink, Audio/Source), since pw-record links to whatever
// WirePlumber picks when its target is not there. The rate and channels
// are the node's negotiated format while it runs; else what it declares
// (audio.rate, audio.channels or audio.position) or offers (EnumFormat),
// the rate falling back to PipeWire's default clock rate. A node whose
// channel count none of these gives is a problem: no tap assumes stereo.
func resolve(g *pipewire.Graph, res captureapi.Resource, name string) (target, *captureapi.Problem) {
	class := pipewire.MediaClassSink
	if res == captureapi.Sources {
		class = pipewire.MediaClassSource
	}
	var found []pipewire.Node
	for _, n := range g.Nodes {
		if n.Declared != nil && n.Declared.Output == name && n.MediaClass == class {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 0:
		return target{}, captureapi.NewProblem(captureapi.ProblemNoNode, "PipeWire on this machine has no %s node for the %s %q.", class, res.Kind, name)
	case 1:
	default:
		return target{}, captureapi.NewProblem(captureapi.ProblemInternal, "PipeWire has %d %s nodes for %q; the declaration gives each output one.", len(found), class, name)
	}
	n := found[0]
	t := target{node: n, monitor: res == captureapi.Sinks}
	if f := n.Format; f != nil && f.Rate > 0 && f.Channels > 0 {
		t.rate, t.channels, t.position = f.Rate, f.Channels, f.Positions
		return checkChannels(t, class)
	}
	if r, err := strconv.Atoi(n.Props["audio.rate"]); err == nil && r > 0 {
		t.rate = r
	}
	if c, err := strconv.Atoi(n.Props["audio.channels"]); err == nil && c > 0 {
		t.channels = c
	}
	if p := strings.FieldsFunc(n.Props["audio.position"], func(r rune) bool { return r == ',' || r == ' ' || r == '[' || r == ']' }); len(p) > 0 {
		if t.channels == 0 {
			t.channels = len(p)
		}
		if len(p) == t.channels {
			t.position = p
		}
	}
	if e := n.EnumFormat; e != nil {
		if t.channels == 0 {
			t.channels = e.Channels
		}
		if t.rate == 0 {
			t.rate = e.Rate
		}
	}
	if t.rate == 0 {
		t.rate = defaultClockRate
	}
	if t.channels == 0 {
		return target{}, captureapi.NewProblem(captureapi.ProblemUnavailable, "The %s node %s is %s and neither declares nor offers a channel count; play to it or set its layout.", class, n.Name, n.State)
	}
	return checkChannels(t, class)
}

// maxChannels is the most channels a PipeWire raw audio format carries
// (SPA_AUDIO_MAX_CHANNELS, spa/param/audio/raw.h); a node that claims
// more is not believed, and a WAV header's 16-bit channel field could
// not hold every such claim either.
const maxChannels = 64

// checkChannels refuses a resolved target whose channel count is past
// maxChannels, naming the node.
func checkChannels(t target, class string) (target, *captureapi.Problem) {
	if t.channels > maxChannels {
		return target{}, captureapi.NewProblem(captureapi.ProblemUnavailable, "The %s node %s says it has %d channels; PipeWire carries at most %d.", class, t.node.Name, t.channels, maxChannels)
	}
	return t, nil
}
