package audio

import (
	"regexp"
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
		if (seen[p] && p != "NA") || !channelName.MatchString(p) {
			return false
		}
		seen[p] = true
	}
	return true
}

var channelName = regexp.MustCompile(`^[A-Z][A-Z0-9]{0,7}$`)

// WantedLayout is the layout an endpoint should run with now, given its
// Sink's spec.layout and the output PipeWire was started with. It is
// ChooseLayout, except that an HDMI/DP output whose monitor went away
// (or whose ELD cannot be read) keeps the layout it was declared with:
// a monitor switched off is not a reason to restart every sink of the
// machine, and it most likely comes back with the same layout.
func WantedLayout(e Endpoint, spec []string, declared pipewire.Output) alsa.Layout {
	if len(spec) == 0 && !e.Capture() && e.PCM.HasELD && !e.PCM.ELD.Valid() {
		src := alsa.LayoutELD
		if len(declared.Positions) == 0 {
			src = alsa.LayoutNone
		}
		return alsa.Layout{Channels: declared.Channels, Positions: declared.Positions, Source: src}
	}
	return ChooseLayout(e, spec)
}
