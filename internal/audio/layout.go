// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"slices"

	"github.com/liken-sh/operators/internal/alsa"
	"github.com/liken-sh/operators/internal/pipewire"
)

// LayoutSpec is the source of a layout a Sink's spec.layout gave.
const LayoutSpec alsa.LayoutSource = "Spec"

// direction is the PipeWire node direction of an endpoint.
func direction(e Endpoint) pipewire.Direction {
	if e.Capture() {
		return pipewire.Capture
	}
	return pipewire.Playback
}

// ChooseLayout picks the layout declare writes for an endpoint: the
// Sink's spec.layout when it has one, else what the hardware states (an
// HDMI/DP monitor's ELD, a USB card's channel map), else none (PipeWire's
// stereo). A capture endpoint has none: its channels are whatever the
// card captures.
func ChooseLayout(e Endpoint, spec []string) alsa.Layout {
	if e.Capture() {
		return alsa.Layout{}
	}
	if len(spec) > 0 && ValidSpecLayout(spec) {
		return alsa.Layout{Channels: len(spec), Positions: slices.Clone(spec), Source: LayoutSpec}
	}
	return alsa.ChooseLayout(e.PCM, alsa.ConnectionType(e.PCM, e.Card, e.Identity))
}

// ValidSpecLayout reports whether a spec.layout can be declared: 1 to
// pipewire.MaxChannels channel names, none twice but NA. The CRD's schema already
// refuses anything else; this keeps an object written past it (an older
// CRD, none at all) from making a declaration PipeWire's writer refuses,
// which would stop the pod from starting. Such a layout is ignored, and
// the hardware's applies.
func ValidSpecLayout(spec []string) bool {
	if len(spec) == 0 || len(spec) > pipewire.MaxChannels {
		return false
	}
	seen := map[string]bool{}
	for _, p := range spec {
		if (seen[p] && p != "NA") || !pipewire.IsPositionName(p) {
			return false
		}
		seen[p] = true
	}
	return true
}

// WantedLayout is the layout an endpoint should run with now, given its
// Sink's spec.layout and the output PipeWire was started with. It is
// ChooseLayout, except that an HDMI/DP output whose monitor went away
// (or whose ELD cannot be read) keeps the layout it was declared with:
// a monitor switched off is not a reason to restart every sink of the
// machine, and it most likely comes back with the same layout.
//
// A layout declared from a spec.layout that is gone is not kept: the
// hardware's applies again.
func WantedLayout(e Endpoint, spec []string, declared pipewire.Output) alsa.Layout {
	src := declaredSource(declared)
	if len(spec) == 0 && !e.Capture() && e.PCM.HasELD && !e.PCM.ELD.Valid() && src != LayoutSpec {
		return alsa.Layout{Channels: declared.Channels, Positions: declared.Positions, Source: src}
	}
	return ChooseLayout(e, spec)
}

// LayoutSourceKey is the private property of a declared node that records
// where its layout came from, so that a later pass tells a layout a spec
// asked for from one the monitor's ELD gave.
const LayoutSourceKey = "liken.audio.layout-source"

// setLayout declares layout l on o, with its source.
func setLayout(o *pipewire.Output, l alsa.Layout) {
	o.Channels, o.Positions = 0, nil
	if o.Extra != nil {
		delete(o.Extra, LayoutSourceKey)
	}
	if l.Channels == 0 {
		return
	}
	o.Channels, o.Positions = l.Channels, l.Positions
	if l.Source != alsa.LayoutNone {
		if o.Extra == nil {
			o.Extra = map[string]string{}
		}
		o.Extra[LayoutSourceKey] = string(l.Source)
	}
}

// declaredSource is where a declared output's layout came from: its
// LayoutSourceKey, else (a declaration written before the key existed)
// the ELD when it has positions.
func declaredSource(d pipewire.Output) alsa.LayoutSource {
	if s, ok := d.Extra[LayoutSourceKey]; ok {
		return alsa.LayoutSource(s)
	}
	if len(d.Positions) > 0 {
		return alsa.LayoutELD
	}
	return alsa.LayoutNone
}
