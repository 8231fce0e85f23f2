// SPDX-License-Identifier: Apache-2.0

package mixer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/liken-sh/operators/internal/alsa"
)

// Control is one mixer control element as a person sees and sets it.
type Control struct {
	// ID is the element's id; ID.Name is the kernel's control name
	// ("Master Playback Volume").
	ID alsa.ElemID
	// Key names the control among one endpoint's controls, the key of
	// status.capabilities and spec.controls: the name, made unique when
	// the name repeats (see Mixer.Sink). Empty from Read.
	Key string
	// Type is the element's type: BOOLEAN, INTEGER, INTEGER64 or
	// ENUMERATED (Kind spells it for status).
	Type alsa.ElemType
	// Access is the element's access bits; Write needs AccessWrite.
	Access alsa.Access
	// Channels is how many values the element holds (its count).
	Channels int
	// Min, Max and Step bound an INTEGER or INTEGER64 control's raw
	// values; Step 0 means every value between. Zero for other types.
	Min, Max, Step int64
	// Items are an ENUMERATED control's item names, in order.
	Items []string
	// Decibels is the dB range from the element's TLV; nil when it has
	// none (or it could not be read, which Mixer.Err reports).
	Decibels *Decibels
	// Value is the current raw value of each channel: 0/1 for BOOLEAN,
	// the item number for ENUMERATED.
	Value []int64
}

// Kind spells the type as status.capabilities does: "integer" (INTEGER
// and INTEGER64), "boolean" or "enumerated".
func (c Control) Kind() string {
	switch c.Type {
	case alsa.TypeBoolean:
		return "boolean"
	case alsa.TypeInteger, alsa.TypeInteger64:
		return "integer"
	case alsa.TypeEnumerated:
		return "enumerated"
	}
	return strings.ToLower(c.Type.String())
}

// MinDecibels is the dB range's low end as a decimal string ("-65.25"),
// "" when the control has no dB range.
func (c Control) MinDecibels() string {
	if c.Decibels == nil {
		return ""
	}
	return c.Decibels.MinString()
}

// MaxDecibels is the dB range's high end as a decimal string, "" when the
// control has no dB range.
func (c Control) MaxDecibels() string {
	if c.Decibels == nil {
		return ""
	}
	return c.Decibels.MaxString()
}

// String names the control for errors and logs: its Key when it has one,
// else its name with ",index" when the index is not 0 (amixer's spelling
// of a simple control, 'Capture',1).
func (c Control) String() string {
	if c.Key != "" {
		return c.Key
	}
	return nameIndex(c.ID)
}

func nameIndex(id alsa.ElemID) string {
	if id.Index == 0 {
		return id.Name
	}
	return fmt.Sprintf("%s,%d", id.Name, id.Index)
}

// Mixer is what Read found on one card.
type Mixer struct {
	// Controls are the card's settable mixer controls, in the card's
	// element order.
	Controls []Control
	// HDMISlots maps each HDMI/DP PCM device of the card to the index of
	// its IEC958 controls, -1 when it has none (see HDMISlots).
	HDMISlots map[int]int
	// Err joins what could not be read without stopping the rest: an
	// element left out because its info or value did not read, or a TLV
	// that did not read or parse (that control is kept without a dB
	// range). nil when everything was read.
	Err error
}

// Read lists the card's mixer controls: every element on the MIXER
// interface of type BOOLEAN, INTEGER, INTEGER64 or ENUMERATED that can be
// read, with its info (ELEM_INFO), its current value (ELEM_READ) and, for
// an integer element whose access has tlv_read, its dB range (TLV_READ,
// DecibelRange). Jack elements (names ending " Jack") are left out: they
// report, they do not steer. The IEC958 status elements ("IEC958 Playback
// Default", the Con and Pro masks) are of type IEC958 and so left out too;
// so are elements without read access, which could be neither shown nor
// checked.
//
// Only a failure to list the elements is returned as an error; one
// element that fails is left out and reported in Mixer.Err, so one bad
// element hides no other.
func Read(c alsa.Control) (*Mixer, error) {
	ids, err := c.Elements()
	if err != nil {
		return nil, fmt.Errorf("mixer: %w", err)
	}
	m := &Mixer{HDMISlots: HDMISlots(ids)}
	var errs []error
	for _, id := range ids {
		if id.Iface != alsa.IfaceMixer || strings.HasSuffix(id.Name, " Jack") {
			continue
		}
		ctl, err := readControl(c, id)
		if err != nil {
			errs = append(errs, err)
		}
		if ctl != nil {
			m.Controls = append(m.Controls, *ctl)
		}
	}
	m.Err = errors.Join(errs...)
	return m, nil
}

// readControl reads one element. It returns nil for an element that is
// not a settable control, and with a non-nil control an error that only
// concerns its dB range.
func readControl(c alsa.Control, id alsa.ElemID) (*Control, error) {
	info, err := c.ElemInfo(id)
	if err != nil {
		return nil, fmt.Errorf("mixer control %s: %w", nameIndex(id), err)
	}
	switch info.Type {
	case alsa.TypeBoolean, alsa.TypeInteger, alsa.TypeInteger64, alsa.TypeEnumerated:
	default:
		return nil, nil
	}
	if info.Access&alsa.AccessRead == 0 {
		return nil, nil
	}
	ctl := &Control{ID: info.ID, Type: info.Type, Access: info.Access, Channels: info.Count}
	if info.Count < 1 {
		return nil, fmt.Errorf("mixer control %s: %s element with %d values", ctl, info.Type, info.Count)
	}
	switch info.Type {
	case alsa.TypeInteger, alsa.TypeInteger64:
		if info.Min > info.Max {
			return nil, fmt.Errorf("mixer control %s: range %d..%d is empty", ctl, info.Min, info.Max)
		}
		ctl.Min, ctl.Max, ctl.Step = info.Min, info.Max, info.Step
	case alsa.TypeEnumerated:
		if len(info.Items) == 0 {
			return nil, fmt.Errorf("mixer control %s: enumerated element with no items", ctl)
		}
		ctl.Items = info.Items
	}
	v, err := c.Read(info.ID)
	if err != nil {
		return nil, fmt.Errorf("mixer control %s: %w", ctl, err)
	}
	if v.Type != info.Type || len(v.Ints) != info.Count {
		return nil, fmt.Errorf("mixer control %s: read %d %s values of a %s element with %d", ctl, len(v.Ints), v.Type, info.Type, info.Count)
	}
	ctl.Value = v.Ints
	if ctl.Kind() != "integer" || info.Access&alsa.AccessTLVRead == 0 {
		return ctl, nil
	}
	tlv, err := c.TLV(info.ID)
	if err != nil {
		return ctl, fmt.Errorf("mixer control %s: %w", ctl, err)
	}
	d, ok, err := DecibelRange(tlv, ctl.Min, ctl.Max)
	if err != nil {
		return ctl, fmt.Errorf("mixer control %s: %w", ctl, err)
	}
	if ok {
		ctl.Decibels = &d
	}
	return ctl, nil
}

// Write sets ctl to v through the control interface (ELEM_WRITE), v
// usually from ctl.Parse. It refuses, before any write, a control without
// write access, and a value of another type or channel count or outside
// the control's range or items; the kernel's own refusal (EPERM, EINVAL,
// EBUSY for an element another process locked) comes back wrapped. Every
// error names the control.
func Write(c alsa.Control, ctl Control, v alsa.Value) error {
	if ctl.Access&alsa.AccessWrite == 0 {
		return fmt.Errorf("%s: the control is read-only", ctl)
	}
	if err := ctl.check(v); err != nil {
		return err
	}
	if err := c.Write(ctl.ID, v); err != nil {
		return fmt.Errorf("%s: %w", ctl, err)
	}
	return nil
}
