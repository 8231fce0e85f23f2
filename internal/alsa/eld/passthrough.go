// SPDX-License-Identifier: Apache-2.0

package eld

// Passthrough names of the compressed codings a sink decodes itself, which
// a player can send it unchanged as IEC 61937 bursts in an IEC 958 stream
// (HDMI passthrough). They are the lower-case spellings a claim's codec
// parameter uses, in the style of PipeWire's Bluetooth codec names
// ("aptx_hd"); PipeWire's own IEC 958 codec names (AC3, EAC3, DTS, DTS-HD,
// TrueHD in spa/param/audio/iec958-types.h) are the audio operator's to
// map them to.
const (
	PassthroughAC3    = "ac3"
	PassthroughEAC3   = "eac3"
	PassthroughDTS    = "dts"
	PassthroughDTSHD  = "dts_hd"
	PassthroughTrueHD = "truehd"
)

// passthroughCodings maps each coding type a player can pass through to
// its passthrough name, in ascending coding type. CEA-861's MLP coding
// (12) is what carries Dolby TrueHD (and MAT); the other compressed
// codings (MPEG-1, MP3, MPEG-2, AAC, ATRAC, DSD, DST, WMA Pro) are not
// offered.
var passthroughCodings = [...]struct {
	coding Coding
	name   string
}{
	{CodingAC3, PassthroughAC3},
	{CodingDTS, PassthroughDTS},
	{CodingEAC3, PassthroughEAC3},
	{CodingDTSHD, PassthroughDTSHD},
	{CodingMLP, PassthroughTrueHD},
}

// PassthroughNames lists every passthrough name, in ascending coding type
// (ac3 dts eac3 dts_hd truehd).
func PassthroughNames() []string {
	out := make([]string, len(passthroughCodings))
	for i, p := range passthroughCodings {
		out[i] = p.name
	}
	return out
}

// Passthrough lists the passthrough names of the compressed codings the
// block's descriptors name, once each, in ascending coding type: the
// formats a player may send this sink as IEC 61937 bursts. Nil when the
// block names none (a plain monitor lists LPCM alone).
func (e *ELD) Passthrough() []string {
	var out []string
	for _, p := range passthroughCodings {
		for _, d := range e.SADs {
			if d.Coding == p.coding {
				out = append(out, p.name)
				break
			}
		}
	}
	return out
}
