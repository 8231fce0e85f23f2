// SPDX-License-Identifier: Apache-2.0

package captureapi

import "strings"

// Format is one encoding a tap serves.
type Format struct {
	// Name is the format's short name as the CLI's --format takes it
	// ("wav", "flac", "opus") and the path extension of its fixed route.
	Name string
	// MediaType is the Content-Type a tap in this format is sent with.
	MediaType string
	// Aliases are further media types (lowercase, without parameters)
	// that Accept may name for this format.
	Aliases []string
	// Bitrate reports whether the format takes the "bitrate" query
	// parameter.
	Bitrate bool
	// MaxChannels is the most channels the format carries.
	MaxChannels int
}

// The formats, in the server's order of preference when Accept ranks
// several equally (lossless and cheapest first).
var (
	// WAV is RIFF WAVE (RFC 2361) with 16-bit signed little-endian PCM;
	// audio/wav is the type the IANA registry lists, the aliases are the
	// older names clients still send.
	WAV = Format{Name: "wav", MediaType: "audio/wav", Aliases: []string{"audio/wave", "audio/x-wav", "audio/vnd.wave"}, MaxChannels: 1<<16 - 1}
	// FLAC is a native FLAC stream (RFC 9639), registered as audio/flac;
	// its frame header codes at most 8 channels (RFC 9639 section 9.1.3).
	FLAC = Format{Name: "flac", MediaType: "audio/flac", Aliases: []string{"audio/x-flac"}, MaxChannels: 8}
	// Opus is Opus in Ogg (RFC 7845), audio/ogg with the codecs parameter
	// of RFC 5334 section 4; plain audio/ogg and audio/opus name it too.
	// An Ogg Opus stream carries at most 255 channels (RFC 7845 section 5.1.1).
	Opus = Format{Name: "opus", MediaType: "audio/ogg; codecs=opus", Aliases: []string{"audio/ogg", "audio/opus"}, Bitrate: true, MaxChannels: 255}
)

// Formats are the formats a tap serves, most preferred first.
var Formats = []Format{WAV, FLAC, Opus}

// FormatByName returns the format whose Name (and fixed route extension)
// is name, compared without regard to case.
func FormatByName(name string) (Format, bool) {
	for _, f := range Formats {
		if strings.EqualFold(f.Name, name) {
			return f, true
		}
	}
	return Format{}, false
}

// Carrying returns the formats of candidates that carry channels
// channels, in their order.
func Carrying(candidates []Format, channels int) []Format {
	var out []Format
	for _, f := range candidates {
		if channels <= f.MaxChannels {
			out = append(out, f)
		}
	}
	return out
}

// FormatNames returns the formats' names in order of preference.
func FormatNames() []string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = f.Name
	}
	return names
}

// mediaTypes returns f's media type without parameters followed by its
// aliases.
func (f Format) mediaTypes() []string {
	base, _, _ := strings.Cut(f.MediaType, ";")
	return append([]string{strings.TrimSpace(base)}, f.Aliases...)
}

// Media types of the documents the API serves.
const (
	// MediaTypeJSON is the discovery document's and an endpoint's
	// information's type.
	MediaTypeJSON = "application/json"
	// MediaTypeOpenAPI is the OpenAPI document's type (OpenAPI 3.1,
	// registered with IANA as application/openapi+json).
	MediaTypeOpenAPI = "application/openapi+json"
	// MediaTypeProblem is the type of every error body (RFC 9457 section 3).
	MediaTypeProblem = "application/problem+json"
)
