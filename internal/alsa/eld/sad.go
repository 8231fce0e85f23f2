// SPDX-License-Identifier: Apache-2.0

package eld

import "strconv"

// Coding is a short audio descriptor's audio coding type (CEA-861 table
// "Audio Format Code"; the kernel's AUDIO_CODING_TYPE_*).
type Coding uint8

// Coding types.
const (
	CodingRefStreamHeader Coding = 0
	CodingLPCM            Coding = 1
	CodingAC3             Coding = 2
	CodingMPEG1           Coding = 3
	CodingMP3             Coding = 4
	CodingMPEG2           Coding = 5
	CodingAACLC           Coding = 6
	CodingDTS             Coding = 7
	CodingATRAC           Coding = 8
	CodingDSD             Coding = 9
	CodingEAC3            Coding = 10
	CodingDTSHD           Coding = 11
	CodingMLP             Coding = 12
	CodingDST             Coding = 13
	CodingWMAPro          Coding = 14
	// CodingExtended means the real type is in byte 2 bits 7..3
	// (SAD.ExtendedCoding).
	CodingExtended Coding = 15
)

var codingNames = [...]string{
	"reference stream header", "LPCM", "AC-3", "MPEG-1", "MP3", "MPEG-2",
	"AAC-LC", "DTS", "ATRAC", "DSD", "E-AC-3", "DTS-HD", "MLP", "DST",
	"WMA Pro", "extended",
}

// String names the coding type, or gives its number when it has no name.
func (c Coding) String() string {
	if int(c) < len(codingNames) {
		return codingNames[c]
	}
	return "coding " + strconv.Itoa(int(c))
}

// Rates a descriptor's rate bits name, in CEA-861 bit order (bit 0 first).
var sadRatesHz = [7]int{32000, 44100, 48000, 88200, 96000, 176400, 192000}

// Bit depths an LPCM descriptor's byte 2 names, bit 0 first.
var sadDepths = [3]int{16, 20, 24}

// SAD is one short audio descriptor: three bytes per format the sink
// accepts.
type SAD struct {
	// Coding is byte 0 bits 6..3.
	Coding Coding
	// Channels is byte 0 bits 2..0 plus one (1..8).
	Channels int
	// RateMask is byte 1 bits 6..0: 32, 44.1, 48, 88.2, 96, 176.4 and
	// 192 kHz from bit 0 up.
	RateMask uint8
	// DepthMask is byte 2 bits 2..0 for LPCM (16, 20, 24 bits); 0 for
	// other codings.
	DepthMask uint8
	// MaxBitrate is the maximum bit rate in bits per second for the
	// codings whose byte 2 states one (AC-3 through ATRAC: byte 2 times
	// 8000); 0 otherwise.
	MaxBitrate int
	// ExtendedCoding is byte 2 bits 7..3 when Coding is CodingExtended.
	ExtendedCoding uint8
}

func parseSAD(s [3]byte) SAD {
	d := SAD{
		Coding:   Coding(s[0] >> 3 & 0xf),
		Channels: int(s[0]&0x7) + 1,
		RateMask: s[1] & 0x7f,
	}
	switch {
	case d.Coding == CodingLPCM:
		d.DepthMask = s[2] & 0x7
	case d.Coding >= CodingAC3 && d.Coding <= CodingATRAC:
		d.MaxBitrate = int(s[2]) * 8000
	case d.Coding == CodingExtended:
		d.ExtendedCoding = s[2] >> 3
	}
	return d
}

// RatesHz lists the sample rates the descriptor names, ascending.
func (d SAD) RatesHz() []int {
	var out []int
	for bit, hz := range sadRatesHz {
		if d.RateMask&(1<<bit) != 0 {
			out = append(out, hz)
		}
	}
	return out
}

// MaxRateHz is the highest rate the descriptor names, 0 when none.
func (d SAD) MaxRateHz() int {
	r := d.RatesHz()
	if len(r) == 0 {
		return 0
	}
	return r[len(r)-1]
}

// BitDepths lists the LPCM sample sizes the descriptor names, ascending.
func (d SAD) BitDepths() []int {
	var out []int
	for bit, depth := range sadDepths {
		if d.DepthMask&(1<<bit) != 0 {
			out = append(out, depth)
		}
	}
	return out
}
