// SPDX-License-Identifier: Apache-2.0

package mixer

import (
	"fmt"
	"math"
	"strconv"
)

// TLV types that carry a dB scale (SNDRV_CTL_TLVT_*,
// include/uapi/sound/tlv.h). A TLV is 32-bit words: type, payload length
// in bytes, payload.
const (
	// tlvContainer wraps a sequence of TLVs.
	tlvContainer = 0
	// tlvDBScale: min in 0.01 dB (signed), then step in 0.01 dB in bits
	// 0..15 with the mute flag (SNDRV_CTL_TLVD_DB_SCALE_MUTE) in bit 16.
	tlvDBScale = 1
	// tlvDBLinear: levels in 0.01 dB at the lowest and the highest raw
	// value, the gain linear in amplitude between them; a lowest level of
	// SNDRV_CTL_TLVD_DB_GAIN_MUTE means silence.
	tlvDBLinear = 2
	// tlvDBRange: items of raw min, raw max and a nested dB TLV for that
	// stretch of raw values.
	tlvDBRange = 3
	// tlvDBMinMax: levels in 0.01 dB at the lowest and the highest raw
	// value, the level linear in dB between them.
	tlvDBMinMax = 4
	// tlvDBMinMaxMute is tlvDBMinMax whose lowest raw value mutes.
	tlvDBMinMaxMute = 5
)

// dbGainMute is SNDRV_CTL_TLVD_DB_GAIN_MUTE, the level of silence in a
// linear TLV, in 0.01 dB.
const dbGainMute = -9999999

// maxTLVDepth bounds how deep containers and ranges nest; the kernel's
// drivers nest at most two levels (a range of scales).
const maxTLVDepth = 8

// maxScaleSpan bounds the raw span of a dB scale so that step × span stays
// far inside int64: step is at most 65535 (16 bits), so 2^46 raw values
// give at most about 2^62 hundredths of a dB. No real control comes near.
const maxScaleSpan = 1 << 46

// Decibels is a control's dB range as its TLV states it.
type Decibels struct {
	// Min and Max are the levels, in hundredths of a dB, at the control's
	// lowest and highest raw value. For a linear TLV whose lowest level is
	// silence (which has no number), Min is instead the level one raw
	// value above the lowest, rounded to 0.01 dB.
	Min, Max int64
	// MuteAtMin says the lowest raw value mutes rather than plays at Min
	// (a scale's mute flag, a MINMAX_MUTE TLV, a linear TLV from silence);
	// alsa-lib reports that value's level as -9999999 (alsa.DBMute), and
	// amixer prints the scale's nominal minimum with "mute=1".
	MuteAtMin bool
}

// MinString is Min as a decimal string in dB ("-65.25"), as
// status.capabilities spells it.
func (d Decibels) MinString() string { return FormatDecibels(d.Min) }

// MaxString is Max as a decimal string in dB.
func (d Decibels) MaxString() string { return FormatDecibels(d.Max) }

// FormatDecibels spells a level in hundredths of a dB as a decimal number
// of dB without trailing zeros: -6525 is "-65.25", -6550 "-65.5", 0 "0",
// -5 "-0.05". Integer arithmetic, so no rounding creeps in.
func FormatDecibels(hundredths int64) string {
	sign := ""
	u := uint64(hundredths)
	if hundredths < 0 {
		sign = "-"
		u = -u
	}
	whole, frac := u/100, u%100
	switch {
	case frac == 0:
		return sign + strconv.FormatUint(whole, 10)
	case frac%10 == 0:
		return fmt.Sprintf("%s%d.%d", sign, whole, frac/10)
	default:
		return fmt.Sprintf("%s%d.%02d", sign, whole, frac)
	}
}

// DecibelRange reads the dB range of a control whose raw values run from
// min to max out of its TLV data (what alsa.Control.TLV returns: type,
// length in bytes, payload). ok is false, with no error, when the TLV
// holds no dB scale (a container of other types, or a range none of whose
// items covers min..max).
//
// The types are the kernel's (include/uapi/sound/tlv.h): DB_SCALE (the
// level at min plus a step per raw value), DB_LINEAR, DB_MINMAX and
// DB_MINMAX_MUTE (levels at min and max), DB_RANGE (items of raw min, raw
// max and a nested dB TLV; the result spans every item that reaches into
// min..max, each taken over its own raw min up to the lesser of its raw
// max and max, as alsa-lib does), and CONTAINER (the first dB TLV inside;
// other types inside are passed over).
//
// The error names what is wrong: an empty range (min > max), a length
// that is not whole words or runs past the data, a payload too short for
// its type, an empty range item, nesting deeper than 8, a type that is no
// dB type where one is required (at the top or in a range item), a scale
// too wide to compute. It never panics, whatever the words.
func DecibelRange(tlv []uint32, min, max int64) (d Decibels, ok bool, err error) {
	if min > max {
		return Decibels{}, false, fmt.Errorf("dB range of raw values %d..%d: the range is empty", min, max)
	}
	d, ok, err = dbRange(tlv, min, max, 0)
	if err != nil {
		return Decibels{}, false, fmt.Errorf("dB range from TLV: %w", err)
	}
	return d, ok, nil
}

// cutTLV splits the first TLV off words: its type, its payload, and the
// words after it.
func cutTLV(words []uint32) (typ uint32, payload, rest []uint32, err error) {
	if len(words) < 2 {
		return 0, nil, nil, fmt.Errorf("a TLV header needs 2 words, %d left", len(words))
	}
	typ, length := words[0], words[1]
	if length%4 != 0 {
		return 0, nil, nil, fmt.Errorf("TLV type %d: length %d bytes is not whole 32-bit words", typ, length)
	}
	n := uint64(length / 4)
	if n > uint64(len(words)-2) {
		return 0, nil, nil, fmt.Errorf("TLV type %d: length %d bytes runs past the end (%d bytes left)", typ, length, 4*(len(words)-2))
	}
	return typ, words[2 : 2+n], words[2+n:], nil
}

// dbRange reads the first TLV in words for raw values lo..hi (lo <= hi).
func dbRange(words []uint32, lo, hi int64, depth int) (Decibels, bool, error) {
	if depth > maxTLVDepth {
		return Decibels{}, false, fmt.Errorf("TLV nested deeper than %d levels", maxTLVDepth)
	}
	typ, p, _, err := cutTLV(words)
	if err != nil {
		return Decibels{}, false, err
	}
	need := func(n int) error {
		if len(p) < n {
			return fmt.Errorf("TLV type %d: payload of %d words, want at least %d", typ, len(p), n)
		}
		return nil
	}
	switch typ {
	case tlvContainer:
		for len(p) > 0 {
			t, _, rest, err := cutTLV(p)
			if err != nil {
				return Decibels{}, false, fmt.Errorf("in container: %w", err)
			}
			if t == tlvContainer || isDBType(t) {
				d, ok, err := dbRange(p, lo, hi, depth+1)
				if err != nil || ok {
					return d, ok, err
				}
			}
			p = rest
		}
		return Decibels{}, false, nil
	case tlvDBScale:
		if err := need(2); err != nil {
			return Decibels{}, false, err
		}
		min := int64(int32(p[0]))
		step := int64(p[1] & 0xffff)
		span := uint64(hi) - uint64(lo) // exact: hi >= lo
		if span > maxScaleSpan {
			return Decibels{}, false, fmt.Errorf("dB scale over %d raw values is too wide", span)
		}
		return Decibels{Min: min, Max: min + step*int64(span), MuteAtMin: p[1]&0x10000 != 0}, true, nil
	case tlvDBLinear:
		if err := need(2); err != nil {
			return Decibels{}, false, err
		}
		min, max := int64(int32(p[0])), int64(int32(p[1]))
		if min > dbGainMute {
			return Decibels{Min: min, Max: max}, true, nil
		}
		// From silence: the first raw step up is 1/span of the top
		// amplitude, 20·log10(1/span) dB below the top level.
		span := float64(uint64(hi) - uint64(lo))
		if span < 1 {
			return Decibels{Min: max, Max: max, MuteAtMin: true}, true, nil
		}
		return Decibels{Min: max - int64(math.Round(2000*math.Log10(span))), Max: max, MuteAtMin: true}, true, nil
	case tlvDBMinMax, tlvDBMinMaxMute:
		if err := need(2); err != nil {
			return Decibels{}, false, err
		}
		return Decibels{Min: int64(int32(p[0])), Max: int64(int32(p[1])), MuteAtMin: typ == tlvDBMinMaxMute}, true, nil
	case tlvDBRange:
		return dbRangeItems(p, lo, hi, depth)
	}
	return Decibels{}, false, fmt.Errorf("TLV type %d is not a dB type", typ)
}

// dbRangeItems reads a DB_RANGE payload: items of raw min, raw max and a
// nested TLV. The lowest level and mute flag come from the item that
// starts lowest.
func dbRangeItems(p []uint32, lo, hi int64, depth int) (Decibels, bool, error) {
	var out Decibels
	found := false
	var lowest int64
	for n := 0; len(p) > 0; n++ {
		if len(p) < 2 {
			return Decibels{}, false, fmt.Errorf("DB_RANGE item %d: %d words, want a raw min, a raw max and a TLV", n, len(p))
		}
		rmin, rmax := int64(int32(p[0])), int64(int32(p[1]))
		if rmin > rmax {
			return Decibels{}, false, fmt.Errorf("DB_RANGE item %d: raw range %d..%d is empty", n, rmin, rmax)
		}
		_, _, rest, err := cutTLV(p[2:])
		if err != nil {
			return Decibels{}, false, fmt.Errorf("DB_RANGE item %d: %w", n, err)
		}
		sub := p[2 : len(p)-len(rest)]
		p = rest
		if rmax < lo || rmin > hi {
			continue // outside the control's values
		}
		d, ok, err := dbRange(sub, rmin, min(rmax, hi), depth+1)
		if err != nil {
			return Decibels{}, false, fmt.Errorf("DB_RANGE item %d: %w", n, err)
		}
		if !ok {
			continue
		}
		if !found {
			out, lowest, found = d, rmin, true
			continue
		}
		out.Min, out.Max = min(out.Min, d.Min), max(out.Max, d.Max)
		if rmin < lowest {
			lowest, out.MuteAtMin = rmin, d.MuteAtMin
		}
	}
	return out, found, nil
}

func isDBType(t uint32) bool { return t >= tlvDBScale && t <= tlvDBMinMaxMute }
