// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// TLV types of the channel-map API (SNDRV_CTL_TLVT_*, include/uapi/sound/tlv.h):
// a container of maps, each fixed (this order only), variable (any order
// of these positions) or paired (these positions, each pair swappable).
const (
	tlvContainer   = 0
	tlvChmapFixed  = 0x101
	tlvChmapVar    = 0x102
	tlvChmapPaired = 0x103
)

// ChannelMapKind says which orders of an offered map the driver takes.
type ChannelMapKind int

const (
	// ChannelMapFixed takes exactly this order.
	ChannelMapFixed ChannelMapKind = iota
	// ChannelMapVar takes these positions in any order.
	ChannelMapVar
	// ChannelMapPaired takes this order, with the two positions of each pair
	// (channels 0-1, 2-3, ...) swappable.
	ChannelMapPaired
)

// OfferedChannelMap is one map a PCM's channel-map element's TLV offers
// (sound/core/pcm_lib.c pcm_chmap_ctl_tlv; the HDA HDMI driver's
// sound/hda/hdmi_chmap.c hdmi_chmap_ctl_tlv lists one per channel
// allocation of the monitor).
type OfferedChannelMap struct {
	Kind ChannelMapKind
	// Positions are SNDRV_CHMAP_* values, one per channel.
	Positions []uint32
}

// Takes reports whether the driver takes map want (SNDRV_CHMAP_* values)
// under this offer.
func (o OfferedChannelMap) Takes(want []uint32) bool {
	if len(want) != len(o.Positions) {
		return false
	}
	switch o.Kind {
	case ChannelMapVar:
		a, b := slices.Clone(want), slices.Clone(o.Positions)
		slices.Sort(a)
		slices.Sort(b)
		return slices.Equal(a, b)
	case ChannelMapPaired:
		for i := 0; i < len(want); i += 2 {
			if i+1 == len(want) {
				return want[i] == o.Positions[i]
			}
			same := want[i] == o.Positions[i] && want[i+1] == o.Positions[i+1]
			swapped := want[i] == o.Positions[i+1] && want[i+1] == o.Positions[i]
			if !same && !swapped {
				return false
			}
		}
		return true
	}
	return slices.Equal(want, o.Positions)
}

// ParseChannelMapTLV reads the TLV of a channel-map element (words as
// Control.TLV returns them): a container of maps, or a single map. A
// child of another type is skipped; a length that does not fit is an
// error.
func ParseChannelMapTLV(words []uint32) ([]OfferedChannelMap, error) {
	if len(words) < 2 {
		return nil, fmt.Errorf("channel-map TLV of %d words has no header", len(words))
	}
	if words[0] != tlvContainer {
		m, ok, err := chmapTLV(words)
		if err != nil || !ok {
			return nil, err
		}
		return []OfferedChannelMap{m}, nil
	}
	if words[1]%4 != 0 || int(words[1]/4) > len(words)-2 {
		return nil, fmt.Errorf("channel-map container of %d bytes in %d words", words[1], len(words))
	}
	rest := words[2 : 2+words[1]/4]
	var out []OfferedChannelMap
	for len(rest) > 0 {
		if len(rest) < 2 || rest[1]%4 != 0 || int(rest[1]/4) > len(rest)-2 {
			return nil, fmt.Errorf("channel-map TLV: a map overruns its container")
		}
		n := 2 + int(rest[1]/4)
		m, ok, err := chmapTLV(rest[:n])
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, m)
		}
		rest = rest[n:]
	}
	return out, nil
}

// chmapTLV reads one map TLV; ok is false for a type that is not a map.
func chmapTLV(w []uint32) (OfferedChannelMap, bool, error) {
	var kind ChannelMapKind
	switch w[0] {
	case tlvChmapFixed:
		kind = ChannelMapFixed
	case tlvChmapVar:
		kind = ChannelMapVar
	case tlvChmapPaired:
		kind = ChannelMapPaired
	default:
		return OfferedChannelMap{}, false, nil
	}
	if w[1]%4 != 0 || int(w[1]/4) != len(w)-2 {
		return OfferedChannelMap{}, false, fmt.Errorf("channel map of %d bytes in %d words", w[1], len(w)-2)
	}
	return OfferedChannelMap{Kind: kind, Positions: slices.Clone(w[2:])}, true, nil
}

// ChannelPositions turns SPA channel names ("FL", "LFE") into SNDRV_CHMAP_*
// values; the error names the first name that has none.
func ChannelPositions(names []string) ([]uint32, error) {
	out := make([]uint32, len(names))
	for i, n := range names {
		p := slices.Index(chmapSPANames[:], n)
		if p <= 0 {
			return nil, fmt.Errorf("channel %d: %q is not an ALSA channel position", i, n)
		}
		out[i] = uint32(p)
	}
	return out, nil
}

// SpellChannelMap spells SNDRV_CHMAP_* values for people: "FL,FR,RL",
// with "?" for a value that has no name (0 is UNKNOWN: nothing set).
func SpellChannelMap(m []uint32) string {
	s := make([]string, len(m))
	for i, p := range m {
		if n, ok := ChannelPositionName(p); ok {
			s[i] = n
		} else {
			s[i] = "?"
		}
	}
	return strings.Join(s, ",")
}

// Errors of SetChannelMap, each wrapped with the PCM and the maps.
var (
	// ErrNoChannelMap: the driver offers no channel-map element for the
	// PCM; nothing was written.
	ErrNoChannelMap = errors.New("the driver offers no channel map for this PCM")
	// ErrChannelMapFixed: the element is read-only (the driver's map is
	// fixed, e.g. sound/core/pcm_lib.c's standard maps); nothing was
	// written.
	ErrChannelMapFixed = errors.New("the driver's channel map is read-only")
	// ErrChannelMapNotOffered: the element's TLV lists no map that takes
	// the wanted one; nothing was written.
	ErrChannelMapNotOffered = errors.New("the driver offers no such channel map")
	// ErrChannelMapMismatch: the write was taken, and the element reads
	// back another map.
	ErrChannelMapMismatch = errors.New("the channel map reads back different")
)

// ChannelMapWrite is what SetChannelMap did.
type ChannelMapWrite struct {
	// Before and After are the element's values before the write and as
	// read back after it (SNDRV_CHMAP_* values, the element's count);
	// After equals Before when nothing was written.
	Before, After []uint32
	// Offered are the maps the element's TLV lists; nil when it has none.
	Offered []OfferedChannelMap
	// Wrote is true when ELEM_WRITE was issued.
	Wrote bool
}

// SetChannelMap sets the channel map of a PCM substream to positions (SPA
// names, one per channel) through its channel-map element and reads it
// back. Where the element's TLV lists maps, the wanted one must be among
// them. An element with more values than channels gets UNKNOWN (0) in the
// rest, as alsa-lib's snd_pcm_set_chmap leaves them. A map that already
// reads as wanted is not written again.
//
// Drivers keep the map only while a stream holds the PCM: the HDA HDMI
// driver (sound/hda/hdmi_chmap.c hdmi_chmap_ctl_put) accepts a write and
// discards it while the PCM is closed, refuses it with EBUSY while it
// runs, and forgets the map when it is closed; read-back is what tells.
//
// Errors wrap ErrNoChannelMap, ErrChannelMapFixed, ErrChannelMapNotOffered,
// ErrChannelMapMismatch or the ioctl's error (unix.EBUSY), naming the PCM
// and both maps.
func SetChannelMap(c Control, device, subdevice int, stream Stream, positions []string) (ChannelMapWrite, error) {
	var w ChannelMapWrite
	where := fmt.Sprintf("PCM %d %s channel map", device, stream)
	want, err := ChannelPositions(positions)
	if err != nil {
		return w, fmt.Errorf("%s: %w", where, err)
	}
	id := ChannelMapElemID(device, subdevice, stream)
	info, err := c.ElemInfo(id)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return w, fmt.Errorf("%s: %w", where, ErrNoChannelMap)
		}
		return w, fmt.Errorf("%s: %w", where, err)
	}
	if info.Type != TypeInteger || info.Count < len(want) {
		return w, fmt.Errorf("%s: %s of %d values cannot hold %d channels", where, info.Type, info.Count, len(want))
	}
	if w.Before, err = ReadChannelMap(c, device, subdevice, stream); err != nil {
		return w, fmt.Errorf("%s: %w", where, err)
	}
	w.After = w.Before
	if info.Access&AccessTLVRead != 0 {
		words, err := c.TLV(info.ID)
		if err != nil {
			return w, fmt.Errorf("%s: %w", where, err)
		}
		if w.Offered, err = ParseChannelMapTLV(words); err != nil {
			return w, fmt.Errorf("%s: %w", where, err)
		}
	}
	full := make([]uint32, info.Count)
	copy(full, want)
	if slices.Equal(w.Before, full) {
		return w, nil
	}
	if info.Access&AccessWrite == 0 {
		return w, fmt.Errorf("%s: %w (reads %s, wanted %s)", where, ErrChannelMapFixed, SpellChannelMap(w.Before), SpellChannelMap(want))
	}
	if w.Offered != nil && !slices.ContainsFunc(w.Offered, func(o OfferedChannelMap) bool { return o.Takes(want) }) {
		return w, fmt.Errorf("%s: %w: %s is not among %d offered maps", where, ErrChannelMapNotOffered, SpellChannelMap(want), len(w.Offered))
	}
	v := Value{Type: TypeInteger, Ints: make([]int64, info.Count)}
	for i, p := range full {
		v.Ints[i] = int64(p)
	}
	if err := c.Write(info.ID, v); err != nil {
		return w, fmt.Errorf("%s: writing %s: %w", where, SpellChannelMap(want), err)
	}
	w.Wrote = true
	if w.After, err = ReadChannelMap(c, device, subdevice, stream); err != nil {
		return w, fmt.Errorf("%s: reading back: %w", where, err)
	}
	if !slices.Equal(w.After, full) {
		return w, fmt.Errorf("%s: %w: wrote %s, reads %s", where, ErrChannelMapMismatch, SpellChannelMap(want), SpellChannelMap(w.After))
	}
	return w, nil
}
