// SPDX-License-Identifier: Apache-2.0

package eld

import (
	"fmt"
	"strconv"
	"strings"
)

// Audio reports whether the sink takes any audio: an LPCM descriptor, the
// format every HDMI and DisplayPort audio sink must accept if it accepts
// audio at all (CEA-861's basic audio is two-channel LPCM). A block with no descriptor, or with
// bitstream descriptors only, describes a monitor a PCM stream cannot
// play on.
func (e *ELD) Audio() bool { return e.LPCMChannels() > 0 }

// LPCMChannels is the highest channel count of any LPCM descriptor: the
// most uncompressed channels the sink accepts. 0 when no descriptor is
// LPCM (a sink that takes only bitstreams).
func (e *ELD) LPCMChannels() int {
	n := 0
	for _, d := range e.SADs {
		if d.Coding == CodingLPCM {
			n = max(n, d.Channels)
		}
	}
	return n
}

// LPCMMaxRateHz is the highest sample rate any LPCM descriptor names, in
// Hz; 0 when none does.
func (e *ELD) LPCMMaxRateHz() int {
	hz := 0
	for _, d := range e.SADs {
		if d.Coding == CodingLPCM {
			hz = max(hz, d.MaxRateHz())
		}
	}
	return hz
}

// LPCMBitDepths is the union of the LPCM descriptors' sample sizes,
// ascending and space-separated ("16 20 24"); "" when none.
func (e *ELD) LPCMBitDepths() string {
	var mask uint8
	for _, d := range e.SADs {
		if d.Coding == CodingLPCM {
			mask |= d.DepthMask
		}
	}
	parts := make([]string, 0, len(sadDepths))
	for _, depth := range (SAD{DepthMask: mask}).BitDepths() {
		parts = append(parts, strconv.Itoa(depth))
	}
	return strings.Join(parts, " ")
}

// Speaker allocation bits, CEA-861 order (the kernel's
// cea_speaker_allocation_names). The ELD's byte has seven; the kernel's
// table goes on with FLW/FRW, FLH/FRH, TC and FCH, which only its 0xffff
// "unknown" substitute reaches.
const (
	SpeakerFLFR   = 1 << 0
	SpeakerLFE    = 1 << 1
	SpeakerFC     = 1 << 2
	SpeakerRLRR   = 1 << 3
	SpeakerRC     = 1 << 4
	SpeakerFLCFRC = 1 << 5
	SpeakerRLCRRC = 1 << 6
)

var speakerNames = [...]string{"FL/FR", "LFE", "FC", "RL/RR", "RC", "FLC/FRC", "RLC/RRC",
	"FLW/FRW", "FLH/FRH", "TC", "FCH"}

// SpeakerNames renders a speaker allocation as the kernel's proc file does,
// without its leading space: the names of the set bits in bit order, joined
// by spaces, e.g. 0x4f gives "FL/FR LFE FC RL/RR RLC/RRC". Bits past the
// kernel's eleven names are ignored.
func SpeakerNames(allocation uint16) string {
	var parts []string
	for bit, name := range speakerNames {
		if allocation&(1<<bit) != 0 {
			parts = append(parts, name)
		}
	}
	return strings.Join(parts, " ")
}

// Speakers renders the block's speaker allocation with SpeakerNames; ""
// when the allocation is 0 (unknown: never advertise the kernel's
// "everything" stand-in).
func (e *ELD) Speakers() string {
	return SpeakerNames(uint16(e.SpeakerAllocation))
}

// PNPID decodes the manufacturer's three-letter PNP id (EDID's packing:
// three 5-bit letters, 1 = 'A', most significant first, in the EDID's
// big-endian order). "" when a letter falls outside A..Z (e.g. a driver
// that leaves the field 0).
func (e *ELD) PNPID() string {
	return DecodePNP(e.ManufacturerCode>>8 | e.ManufacturerCode<<8)
}

// DecodePNP decodes an EDID-order (big-endian) manufacturer code such as
// 0x1e6d ("GSM"); bit 15 is reserved and ignored. "" when any letter is
// outside A..Z.
func DecodePNP(code uint16) string {
	var id [3]byte
	for i, shift := range [3]uint{10, 5, 0} {
		v := code >> shift & 0x1f
		if v < 1 || v > 26 {
			return ""
		}
		id[i] = byte('A' - 1 + v)
	}
	return string(id[:])
}

// Product is the product code as four lowercase hex digits ("5b09").
func (e *ELD) Product() string {
	return fmt.Sprintf("%04x", e.ProductCode)
}

// MonitorID is the cross-driver pairing identity published as
// monitor.liken.sh/id: lowercase PNP id, "-", the product as four
// lowercase hex digits, and, when the monitor name has any non-space
// character, "-" and the name lowercased with each run of white space
// turned into one dash (trimmed at both ends), e.g.
// "gsm-5b09-lg-ultrawide", or "boe-095f" for a nameless panel. The display
// operator derives the same value from the EDID, and the scheduler
// compares the two byte for byte. "" when the manufacturer does not decode
// (a value with no manufacturer would pair unrelated monitors).
func (e *ELD) MonitorID() string {
	return MonitorID(e.PNPID(), e.ProductCode, e.MonitorName)
}

// MonitorID builds the pairing identity from its parts; see
// (*ELD).MonitorID. pnp is the three-letter id in any case; "" gives "".
func MonitorID(pnp string, product uint16, name string) string {
	if pnp == "" {
		return ""
	}
	id := fmt.Sprintf("%s-%04x", strings.ToLower(pnp), product)
	if words := strings.Fields(strings.ToLower(name)); len(words) > 0 {
		id += "-" + strings.Join(words, "-")
	}
	return id
}
