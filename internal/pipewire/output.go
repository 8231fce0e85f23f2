// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Direction is the stream direction of a PCM device, which decides the
// adapter's SPA factory and its media class.
type Direction int

const (
	// Playback is a playback PCM (pcmC<c>D<d>p): an Audio/Sink node.
	Playback Direction = iota
	// Capture is a capture PCM (pcmC<c>D<d>c): an Audio/Source node.
	Capture
)

// SPA factory names of the ALSA PCM nodes (spa/plugins/alsa).
const (
	FactorySink   = "api.alsa.pcm.sink"
	FactorySource = "api.alsa.pcm.source"
)

// Media classes WirePlumber and clients look for. Without one of these a
// node is not treated as a device at all.
const (
	MediaClassSink   = "Audio/Sink"
	MediaClassSource = "Audio/Source"
)

// Factory returns the SPA factory name for d: FactorySink or
// FactorySource.
func (d Direction) Factory() string {
	if d == Capture {
		return FactorySource
	}
	return FactorySink
}

// MediaClass returns the media.class for d: MediaClassSink or
// MediaClassSource.
func (d Direction) MediaClass() string {
	if d == Capture {
		return MediaClassSource
	}
	return MediaClassSink
}

// String returns "playback" or "capture".
func (d Direction) String() string {
	switch d {
	case Playback:
		return "playback"
	case Capture:
		return "capture"
	}
	return "direction(" + strconv.Itoa(int(d)) + ")"
}

// MaxChannels is the most channels a SPA audio format carries
// (SPA_AUDIO_MAX_CHANNELS, spa/param/audio/raw.h, PipeWire 1.4).
const MaxChannels = 64

// MaxRate bounds Output.Rate, in Hz: ALSA's highest standard rate
// (SNDRV_PCM_RATE_768000). It catches a field or unit mix-up.
const MaxRate = 768000

// Output is one PCM device declared to PipeWire: one adapter object in
// context.objects, which PipeWire turns into one node at start.
//
// The liken.audio.* properties are private to this project. PipeWire
// keeps unknown properties on the node as they are, so the operator finds
// its output again in pw-dump by them (measured with PipeWire 1.4.2; note
// that pw-dump prints a value that reads as a number as a JSON number).
type Output struct {
	// Card is the ALSA card number (this boot's), written as
	// liken.audio.card and api.alsa.pcm.card.
	Card int
	// Device is the PCM device number on the card, written as
	// liken.audio.pcm and api.alsa.pcm.device.
	Device int
	// Direction selects the factory (api.alsa.pcm.sink or .source) and
	// media.class (Audio/Sink or Audio/Source).
	Direction Direction
	// PCMID is the PCM's id from SNDRV_CTL_IOCTL_PCM_INFO, e.g. "HDMI 0"
	// or "USB Audio", written as liken.audio.pcm-id; empty is omitted.
	PCMID string
	// Name is the node.name: stable, unique in the declaration, with no
	// white space or control characters, because clients name it as a
	// single word (PIPEWIRE_NODE, pw-play --target).
	Name string
	// Description is node.description, the human-readable label; empty
	// is omitted and PipeWire falls back to the name.
	Description string
	// Output is the published device this node belongs to, written as
	// liken.audio.output; empty is omitted.
	Output string
	// Path is api.alsa.path. Empty means "hw:<Card>,<Device>", and
	// ReadDeclaration returns empty for that default. Tests use "null",
	// ALSA's null device, where there is no card.
	Path string
	// Rate is audio.rate in Hz; 0 leaves the rate to PipeWire. ALSA's
	// null device accepts any rate and reports 2147483647 Hz, which
	// crashed PipeWire 1.4.2's converter when a stream started (measured:
	// SIGSEGV in libspa-audioconvert), so a "null" node needs a rate.
	Rate int
	// Channels is audio.channels; 0 leaves the count to PipeWire, which
	// takes what the device offers (all 64 of ALSA's null device,
	// measured).
	Channels int
	// Positions is audio.position, one SPA channel name per channel
	// ("FL", "FR", "LFE", ...). When set, its length equals Channels.
	Positions []string
	// UseChannelMap sets api.alsa.use-chmap, so PipeWire takes the
	// positions from the card's ALSA channel map (USB cards). It excludes
	// Positions.
	UseChannelMap bool
	// Extra holds further adapter properties, written as they are after
	// the ones above. A key must not be one the fields above write.
	// ReadDeclaration returns nil when there are none.
	Extra map[string]string
	// Withheld, when not empty, says why PipeWire gets no node for the
	// output (an HDMI/DP monitor whose ELD lists no audio format): the
	// output is recorded, written as liken.audio.withheld, in a section
	// PipeWire does not read, so that no stream can be routed to it and
	// a later rewrite can declare it again. It must be one line of text.
	Withheld string
}

// PCM names one PCM stream of a card: the identity a declaration and a
// node share, and what the operator compares to notice that the PCM set
// changed since PipeWire loaded its declaration.
type PCM struct {
	// Card and Device are the ALSA card and PCM device numbers.
	Card, Device int
	// Direction is playback or capture.
	Direction Direction
}

// String returns "card C PCM D playback".
func (p PCM) String() string {
	return fmt.Sprintf("card %d PCM %d %s", p.Card, p.Device, p.Direction)
}

// PCM returns the PCM stream o declares.
func (o Output) PCM() PCM { return PCM{Card: o.Card, Device: o.Device, Direction: o.Direction} }

// ALSAPath returns the api.alsa.path written for o: o.Path, or
// "hw:<Card>,<Device>" when it is empty.
func (o Output) ALSAPath() string {
	if o.Path != "" {
		return o.Path
	}
	return DefaultALSAPath(o.Card, o.Device)
}

// DefaultALSAPath returns ALSA's hardware PCM name "hw:<card>,<device>",
// which opens the device directly with no plugin in between.
func DefaultALSAPath(card, device int) string {
	return "hw:" + strconv.Itoa(card) + "," + strconv.Itoa(device)
}

// Property keys the declaration writes. The liken.audio.* ones are ours.
const (
	PropFactoryName = "factory.name"
	PropNodeName    = "node.name"
	PropDescription = "node.description"
	PropMediaClass  = "media.class"
	PropALSAPath    = "api.alsa.path"
	PropALSACard    = "api.alsa.pcm.card"
	PropALSADevice  = "api.alsa.pcm.device"
	PropRate        = "audio.rate"
	PropChannels    = "audio.channels"
	PropPosition    = "audio.position"
	PropUseChmap    = "api.alsa.use-chmap"
	PropCard        = "liken.audio.card"
	PropPCM         = "liken.audio.pcm"
	PropPCMID       = "liken.audio.pcm-id"
	PropOutput      = "liken.audio.output"
	PropWithheld    = "liken.audio.withheld"
)

// modelKeys are the keys Output's own fields write; Extra may not use
// them.
var modelKeys = map[string]bool{
	PropFactoryName: true, PropNodeName: true, PropDescription: true,
	PropMediaClass: true, PropALSAPath: true, PropALSACard: true,
	PropALSADevice: true, PropRate: true, PropChannels: true,
	PropPosition: true, PropUseChmap: true, PropCard: true, PropPCM: true,
	PropPCMID: true, PropOutput: true, PropWithheld: true,
}

// Validate reports the first thing wrong with o, naming the field: a
// negative card or device, an unknown direction, a node name that is
// empty or holds white space or control characters, text that is not
// UTF-8 or holds NUL (PipeWire keeps properties as C strings), a rate or
// channel count out of range, positions that do not match the count or
// are not channel names, positions together with UseChannelMap, or an
// Extra key that is malformed or one the model writes.
func (o Output) Validate() error {
	if o.Card < 0 {
		return fmt.Errorf("card %d is negative", o.Card)
	}
	if o.Device < 0 {
		return fmt.Errorf("card %d: PCM device %d is negative", o.Card, o.Device)
	}
	where := fmt.Sprintf("card %d PCM %d", o.Card, o.Device)
	if o.Direction != Playback && o.Direction != Capture {
		return fmt.Errorf("%s: unknown direction %d", where, int(o.Direction))
	}
	if o.Name == "" {
		return fmt.Errorf("%s: empty node name", where)
	}
	if err := checkText(o.Name); err != nil {
		return fmt.Errorf("%s: node name %q: %w", where, o.Name, err)
	}
	if strings.IndexFunc(o.Name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("%s: node name %q holds white space or a control character", where, o.Name)
	}
	for _, f := range []struct{ name, value string }{
		{"PCM id", o.PCMID}, {"description", o.Description},
		{"output", o.Output}, {"ALSA path", o.Path},
	} {
		if err := checkText(f.value); err != nil {
			return fmt.Errorf("%s: %s %q: %w", where, f.name, f.value, err)
		}
	}
	if o.Rate < 0 || o.Rate > MaxRate {
		return fmt.Errorf("%s: rate %d Hz is outside 0..%d", where, o.Rate, MaxRate)
	}
	if o.Channels < 0 || o.Channels > MaxChannels {
		return fmt.Errorf("%s: %d channels is outside 0..%d", where, o.Channels, MaxChannels)
	}
	if len(o.Positions) > 0 {
		if len(o.Positions) != o.Channels {
			return fmt.Errorf("%s: %d positions for %d channels", where, len(o.Positions), o.Channels)
		}
		if o.UseChannelMap {
			return fmt.Errorf("%s: explicit positions and the ALSA channel map exclude each other", where)
		}
		for _, p := range o.Positions {
			if !IsPositionName(p) {
				return fmt.Errorf("%s: position %q is not a SPA channel name", where, p)
			}
		}
	}
	if err := checkText(o.Withheld); err != nil || strings.ContainsAny(o.Withheld, "\r\n") {
		return fmt.Errorf("%s: withheld reason %q is not one line of text", where, o.Withheld)
	}
	for k, v := range o.Extra {
		if !isPropertyKey(k) {
			return fmt.Errorf("%s: extra property key %q is not a property key (letters, digits, '.', '-', '_')", where, k)
		}
		if modelKeys[k] {
			return fmt.Errorf("%s: extra property %q is one the declaration writes itself", where, k)
		}
		if err := checkText(v); err != nil {
			return fmt.Errorf("%s: extra property %s = %q: %w", where, k, v, err)
		}
	}
	return nil
}

// checkText refuses what cannot survive PipeWire's C-string properties
// or a JSON round trip: invalid UTF-8 and NUL.
func checkText(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("not valid UTF-8")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("holds a NUL byte")
	}
	return nil
}

// IsPositionName accepts SPA channel names as PipeWire spells them (the
// audio.position words of spa/param/audio/raw.h): upper case letters and
// digits, starting with a letter (FL, LFE, AUX12, TFLC).
func IsPositionName(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// isPropertyKey accepts the keys PipeWire's own properties use.
func isPropertyKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}
