// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"strings"

	"github.com/liken-sh/operators/internal/alsa/eld"
)

// Channel positions of the ALSA channel-map API (SNDRV_CHMAP_* in
// include/uapi/sound/asound.h, in enum order from 0) spelled as PipeWire's
// SPA channel names (spa/param/audio/raw.h), which name the same
// positions. 0 is UNKNOWN and has no SPA spelling here.
var chmapSPANames = [...]string{
	"", "NA", "MONO", "FL", "FR", "RL", "RR", "FC", "LFE", "SL", "SR", "RC",
	"FLC", "FRC", "RLC", "RRC", "FLW", "FRW", "FLH", "FCH", "FRH", "TC",
	"TFL", "TFR", "TFC", "TRL", "TRR", "TRC", "TFLC", "TFRC", "TSL", "TSR",
	"LLFE", "RLFE", "BC", "BLC", "BRC",
}

// Channel-map value flags (SNDRV_CHMAP_POSITION_MASK, _PHASE_INVERSE,
// _DRIVER_SPEC).
const (
	chmapPositionMask = 0xffff
	chmapDriverSpec   = 0x02 << 16
)

// ChannelPositionName spells one SNDRV_CHMAP_* value as a SPA channel name
// ("FL"). ok is false for UNKNOWN (0), a driver-specific value, or a
// number past the table; the phase-inverse flag is ignored.
func ChannelPositionName(pos uint32) (name string, ok bool) {
	if pos&chmapDriverSpec != 0 {
		return "", false
	}
	p := pos & chmapPositionMask
	if p == 0 || int(p) >= len(chmapSPANames) {
		return "", false
	}
	return chmapSPANames[p], true
}

// LayoutSource says where a layout came from.
type LayoutSource string

// Sources, in the order declare tries them.
const (
	// LayoutNone: nothing said; PipeWire's default (stereo) applies.
	LayoutNone LayoutSource = ""
	// LayoutELD: an HDMI/DP monitor's ELD.
	LayoutELD LayoutSource = "ELD"
	// LayoutChannelMap: a USB card's channel map.
	LayoutChannelMap LayoutSource = "ChannelMap"
)

// Layout is a channel layout for a PipeWire node's audio.channels and
// audio.position.
type Layout struct {
	// Channels is the channel count; 0 with LayoutNone.
	Channels int
	// Positions are SPA channel names, one per channel, in the order the
	// hardware takes the channels.
	Positions []string
	// Source says where the layout came from.
	Source LayoutSource
}

// Position joins the positions as audio.position takes them: "FL,FR".
func (l Layout) Position() string { return strings.Join(l.Positions, ",") }

// The layouts an ELD selects, in ALSA's channel order: the order the
// kernel's HDMI driver maps onto the CEA-861 slots for surround51 and
// surround71 (front pair, rear pair, centre, LFE, side pair;
// sound/hda/hdmi_chmap.c), which differs from the WAVE/SMPTE order (centre
// and LFE third and fourth). A stream declared in the wrong order would
// put the centre channel in the rear left speaker.
var (
	layoutStereo = []string{"FL", "FR"}
	layout51     = []string{"FL", "FR", "RL", "RR", "FC", "LFE"}
	layout71     = []string{"FL", "FR", "RL", "RR", "FC", "LFE", "SL", "SR"}
)

// Speaker-allocation bits that a 5.1 and a 7.1 layout need.
const (
	speakers51 = eld.SpeakerFLFR | eld.SpeakerLFE | eld.SpeakerFC | eld.SpeakerRLRR
	speakers71 = speakers51 | eld.SpeakerRLCRRC
)

// LayoutFromELD picks the layout of an HDMI/DP output from its monitor's
// ELD: 8 channels when an LPCM descriptor allows 8 and the speaker
// allocation has front, LFE, centre, rear and rear-centre pairs; 6 when
// LPCM allows 6 and the allocation has front, LFE, centre and rear; stereo
// otherwise. An allocation of 0 says nothing (the kernel's "assume
// everything" stand-in is not trusted), so it gives stereo however many
// channels the LPCM descriptors list. A nil ELD gives LayoutNone.
func LayoutFromELD(e *eld.ELD) Layout {
	if e == nil {
		return Layout{}
	}
	n, spk := e.LPCMChannels(), e.SpeakerAllocation
	switch {
	case n >= 8 && spk&speakers71 == speakers71:
		return Layout{Channels: 8, Positions: layout71, Source: LayoutELD}
	case n >= 6 && spk&speakers51 == speakers51:
		return Layout{Channels: 6, Positions: layout51, Source: LayoutELD}
	}
	return Layout{Channels: 2, Positions: layoutStereo, Source: LayoutELD}
}

// LayoutFromChannelMap turns a card's channel map (SNDRV_CHMAP_* values,
// one per channel) into a layout. A map that is empty, holds an unknown or
// driver-specific position (a USB device whose descriptors state no
// cluster, or a map nothing has set yet, reads all 0), or names a position
// twice says nothing: LayoutNone.
func LayoutFromChannelMap(chmap []uint32) Layout {
	if len(chmap) == 0 {
		return Layout{}
	}
	positions := make([]string, 0, len(chmap))
	for _, pos := range chmap {
		name, ok := ChannelPositionName(pos)
		if !ok {
			return Layout{}
		}
		for _, seen := range positions {
			if seen == name && name != "NA" {
				return Layout{}
			}
		}
		positions = append(positions, name)
	}
	return Layout{Channels: len(positions), Positions: positions, Source: LayoutChannelMap}
}

// ChooseLayout picks a playback PCM's layout as declare writes it: the ELD
// for an output whose monitor's block is valid; the channel map for a USB
// output (connectionType "usb"); otherwise none, leaving stereo to
// PipeWire.
func ChooseLayout(p PCM, connectionType string) Layout {
	if p.ELD.Valid() {
		return LayoutFromELD(p.ELD.ELD)
	}
	if connectionType == ConnUSB {
		return LayoutFromChannelMap(p.ChannelMap)
	}
	return Layout{}
}
