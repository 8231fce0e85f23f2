// SPDX-License-Identifier: Apache-2.0

package audio

import (
	"fmt"
	"slices"
	"strings"

	"github.com/liken-sh/operators/internal/alsa/eld"
	"github.com/liken-sh/operators/internal/dra"
	"github.com/liken-sh/operators/internal/pipewire"
)

// A claim passes compressed audio (AC-3, DTS, E-AC-3, DTS-HD, TrueHD)
// through an HDMI/DP output to the receiver behind it by naming the
// formats in its codec parameter. The formats come from the monitor's
// ELD (eld.Passthrough, the output's codecs attribute) and never from
// anywhere else: a format the ELD does not list is refused, naming those
// it lists. While the claim is prepared the output's PipeWire node takes
// those IEC 958 codecs (its iec958Codecs, beside PCM), so a player's
// stream in one of them is written to the PCM as IEC 61937 bursts
// instead of being refused; the passes set the node back to PCM alone
// once no prepared claim's file names them (unprepare, or an operator
// that restarted meanwhile).
//
// An IEC 958 stream is not mixed: PipeWire links it to the sink in
// passthrough and plays no other stream there meanwhile. So a claim that
// asks for a compressed codec must hold the output whole, every one of
// its MaxStreams streams, or have it allocated alone (a cluster without
// consumable capacity); a share is refused, saying to request them all.

// passthroughIEC958 maps each passthrough name to PipeWire's IEC 958
// codec name.
var passthroughIEC958 = map[string]string{
	eld.PassthroughAC3:    pipewire.IEC958AC3,
	eld.PassthroughEAC3:   pipewire.IEC958EAC3,
	eld.PassthroughDTS:    pipewire.IEC958DTS,
	eld.PassthroughDTSHD:  pipewire.IEC958DTSHD,
	eld.PassthroughTrueHD: pipewire.IEC958TrueHD,
}

// IEC958Codecs returns PipeWire's names of passthrough names, in their
// order; a name that is not a passthrough name is left out.
func IEC958Codecs(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if c, ok := passthroughIEC958[n]; ok {
			out = append(out, c)
		}
	}
	return out
}

// MaxCodecText bounds the codec parameter: the 64 bytes of the codecs
// attribute it names its codecs from.
const MaxCodecText = 64

// codecNames splits a codec parameter into its names: one, or several
// separated by single spaces, as the codecs attribute lists them. It
// fails, quoting the text (or giving its length when it is long), on a
// name not spelt as a codec's, an empty name, or a name given twice.
func codecNames(codec string) ([]string, error) {
	const spelling = "names of 1 to 32 lower-case letters, digits and '_', separated by single spaces, as a device's codecs attribute lists them"
	if len(codec) > MaxCodecText {
		return nil, fmt.Errorf("codec: %d bytes of text is not a codec name or a list of them (at most %d bytes)", len(codec), MaxCodecText)
	}
	names := strings.Split(codec, " ")
	for i, n := range names {
		if !pipewire.CodecNameValid(n) {
			return nil, fmt.Errorf("codec %q is not a codec name or a list of them (%s)", codec, spelling)
		}
		if slices.Contains(names[:i], n) {
			return nil, fmt.Errorf("codec %q names %s twice", codec, n)
		}
	}
	return names, nil
}

// checkPassthrough refuses what a claim cannot pass through to HDMI/DP
// output name (the request's result r): a codec its monitor's ELD does not
// list (offered), naming those it lists, and a share of fewer than all its
// streams. It returns PipeWire's names of the codecs.
func checkPassthrough(name string, names, offered []string, r dra.DeviceRequest[Params]) ([]string, error) {
	codec := strings.Join(names, " ")
	if len(offered) == 0 {
		return nil, fmt.Errorf("output %s cannot pass codec %q through: its monitor's ELD lists no compressed format (it takes PCM alone)", name, codec)
	}
	for _, n := range names {
		if !slices.Contains(offered, n) {
			return nil, fmt.Errorf("output %s cannot pass codec %q through: its monitor's ELD lists %s", name, n, strings.Join(offered, ", "))
		}
	}
	if got := consumedStreams(r.Result); got < MaxStreams {
		return nil, fmt.Errorf("output %s: passthrough (codec %q) cannot be mixed with other claims' streams, so the claim must hold the output whole: request all %d %s (capacity.requests.%s: \"%d\"); this one holds %d",
			name, codec, MaxStreams, CapacityStreams, CapacityStreams, MaxStreams, got)
	}
	return IEC958Codecs(names), nil
}
