// SPDX-License-Identifier: Apache-2.0

package eld

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// ErrEmpty is returned for a block that carries nothing: zero bytes (the
// control's count is 0, how the HDA driver reports an absent or invalid
// monitor) or only zero bytes (how ASoC's hdmi-codec reports one). It
// means "no monitor", not a fault.
var ErrEmpty = errors.New("ELD is empty (no monitor)")

// ErrInvalid is wrapped by every error for a block that is present but
// malformed; the error's text names the offending field.
var ErrInvalid = errors.New("invalid ELD")

// Sizes and limits of the block, from hda_eld.c.
const (
	// FixedBytes is the length of the fixed header that precedes the
	// monitor name (ELD_FIXED_BYTES).
	FixedBytes = 20
	// MaxMonitorNameLen is the largest monitor-name length (MNL) the
	// kernel accepts (ELD_MAX_MNL); 17..31 are reserved values.
	MaxMonitorNameLen = 16
	// MaxSize is the largest block Parse reads: the 512 bytes an ALSA
	// BYTES control element holds inline (snd_ctl_elem_value).
	MaxSize = 512
)

// The ELD versions the kernel reads (byte 0, bits 7..3).
const (
	// VersionCEA861D is ELD_VER_CEA_861D: CEA-861-D or below.
	VersionCEA861D = 2
	// VersionPartial is ELD_VER_PARTIAL: the block holds the baseline only.
	VersionPartial = 31
)

// Connection is the ELD's two-bit connection type (byte 5, bits 3..2).
type Connection uint8

// Connection types; 2 and 3 are reserved.
const (
	ConnHDMI        Connection = 0
	ConnDisplayPort Connection = 1
)

// String returns "hdmi", "displayport", or "" for a reserved value: the
// spelling of the connectionType attribute, absent when unknown.
func (c Connection) String() string {
	switch c {
	case ConnHDMI:
		return "hdmi"
	case ConnDisplayPort:
		return "displayport"
	}
	return ""
}

// ELD is one parsed block. Fields hold what the block says, unconverted;
// the methods derive the published values.
type ELD struct {
	// Version is 2 (CEA-861-D) or 31 (baseline only).
	Version int
	// BaselineLen is the baseline block's length in bytes (byte 2 times
	// 4). The meaningful block is 4+BaselineLen bytes; a control value
	// longer than that carries padding, which is ignored.
	BaselineLen int
	// CEAEDIDVersion is byte 4 bits 7..5 (0 none, 1 CEA-861, 2 -A,
	// 3 -B/C/D).
	CEAEDIDVersion int
	// MonitorName is the monitor's name, up to 16 bytes, cut at the first
	// NUL and with trailing spaces, tabs, CR and LF removed (EDID pads
	// the name with a newline and spaces). It may be empty.
	MonitorName string
	// Connection is the connection type (HDMI or DisplayPort).
	Connection Connection
	// HDCP and AI are byte 5 bits 0 and 1 (HDCP support, ACP/ISRC/ISRC2
	// support).
	HDCP, AI bool
	// AudioSyncDelayMs is the sink's audio latency (byte 6, 2 ms units).
	AudioSyncDelayMs int
	// SpeakerAllocation is the raw 7-bit speaker allocation (byte 7).
	// 0 means the sink did not say (the kernel then assumes every
	// speaker and prints 0xffff; this field keeps the 0).
	SpeakerAllocation uint8
	// PortID is bytes 8..15, little-endian; i915 leaves it 0.
	PortID uint64
	// ManufacturerCode is bytes 16..17 read little-endian, the value the
	// kernel prints as manufacture_id. The bytes are EDID's PNP code in
	// EDID (big-endian) order, so this value is byte-swapped relative to
	// the EDID's: GSM (LG) is 0x6d1e here and 0x1e6d in the EDID.
	ManufacturerCode uint16
	// ProductCode is bytes 18..19, little-endian (EDID's order too).
	ProductCode uint16
	// SADs are the short audio descriptors, in block order; at least one.
	SADs []SAD
}

// Parse reads a binary ELD block, such as the value of an "ELD" control
// element. Bytes past the descriptors (padding inside the baseline, or a
// fixed-size buffer past it) are ignored.
//
// It returns ErrEmpty for an empty or all-zero block, and an error
// wrapping ErrInvalid naming the field for a block shorter than the fixed
// header, longer than MaxSize, of a version other than 2 or 31, with a
// reserved monitor-name length, with a name or descriptor running past
// the block's end. A block with no short audio descriptor is valid: a
// monitor that is present and takes no audio (seen on monitors whose
// speakers are off in their menu, and on some docks) says so this way,
// and its presence and connection type are still worth reporting; Audio
// tells it apart.
func Parse(b []byte) (*ELD, error) {
	if len(b) == 0 || allZero(b) {
		return nil, ErrEmpty
	}
	if len(b) < FixedBytes {
		return nil, invalid("block is %d bytes, shorter than the %d-byte fixed header", len(b), FixedBytes)
	}
	if len(b) > MaxSize {
		return nil, invalid("block is %d bytes, longer than %d", len(b), MaxSize)
	}
	e := &ELD{Version: int(b[0] >> 3)}
	if e.Version != VersionCEA861D && e.Version != VersionPartial {
		return nil, invalid("version %d (byte 0 is %#02x): only %d (CEA-861-D) and %d (baseline only) are defined",
			e.Version, b[0], VersionCEA861D, VersionPartial)
	}
	e.BaselineLen = int(b[2]) * 4
	mnl := int(b[4] & 0x1f)
	e.CEAEDIDVersion = int(b[4] >> 5)
	e.HDCP = b[5]&0x01 != 0
	e.AI = b[5]&0x02 != 0
	e.Connection = Connection(b[5] >> 2 & 0x3)
	sadCount := int(b[5] >> 4)
	e.AudioSyncDelayMs = int(b[6]) * 2
	e.SpeakerAllocation = b[7] & 0x7f
	e.PortID = binary.LittleEndian.Uint64(b[8:16])
	e.ManufacturerCode = binary.LittleEndian.Uint16(b[16:18])
	e.ProductCode = binary.LittleEndian.Uint16(b[18:20])

	if mnl > MaxMonitorNameLen {
		return nil, invalid("monitor name length %d is reserved (at most %d)", mnl, MaxMonitorNameLen)
	}
	if FixedBytes+mnl > len(b) {
		return nil, invalid("monitor name of %d bytes runs past the end of the %d-byte block", mnl, len(b))
	}
	e.MonitorName = cleanName(b[FixedBytes : FixedBytes+mnl])
	if sadCount > 0 { // none stays nil, as ParseProc leaves it
		e.SADs = make([]SAD, sadCount)
	}
	for i := range sadCount {
		off := FixedBytes + mnl + 3*i
		if off+3 > len(b) {
			return nil, invalid("short audio descriptor %d of %d runs past the end of the %d-byte block", i, sadCount, len(b))
		}
		e.SADs[i] = parseSAD([3]byte(b[off : off+3]))
	}
	return e, nil
}

// cleanName applies the kernel's copy (which stops at a NUL) and drops the
// EDID padding at the end.
func cleanName(raw []byte) string {
	s := string(raw)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, " \t\r\n")
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
