// SPDX-License-Identifier: Apache-2.0

package evdev

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"
)

// NameMax is the longest device name a virtual input device can carry:
// UINPUT_MAX_NAME_SIZE (80) less the terminating NUL.
const NameMax = 79

// ID is an input device's struct input_id: bus type (BUS_BLUETOOTH is 5,
// BUS_USB 3), vendor, product and version, as EVIOCGID returns them.
type ID struct {
	Bus     uint16 `json:"bus"`
	Vendor  uint16 `json:"vendor"`
	Product uint16 `json:"product"`
	Version uint16 `json:"version"`
}

// Axis is one absolute axis: its code (ABS_*) and its range.
type Axis struct {
	Code uint16 `json:"code"`
	AbsInfo
}

// Capabilities is what an input device is, as far as a program that
// opens its event node can tell: its name, identity, phys and uniq
// strings, input properties, and the codes it can report for each event
// type, with the range of every absolute axis and the number of
// force-feedback effects it holds at once. Code lists are sorted and
// without duplicates. The event types are implied: EV_SYN always, EV_KEY
// when Keys is not empty, and so on; Repeat is EV_REP (the input core's
// software key repeat).
type Capabilities struct {
	Name          string   `json:"name"`
	ID            ID       `json:"id"`
	Phys          string   `json:"phys,omitempty"`
	Uniq          string   `json:"uniq,omitempty"`
	Properties    []uint16 `json:"props,omitempty"`
	Keys          []uint16 `json:"key,omitempty"`
	Rel           []uint16 `json:"rel,omitempty"`
	Abs           []Axis   `json:"abs,omitempty"`
	Misc          []uint16 `json:"msc,omitempty"`
	Switches      []uint16 `json:"sw,omitempty"`
	LEDs          []uint16 `json:"led,omitempty"`
	Sounds        []uint16 `json:"snd,omitempty"`
	ForceFeedback []uint16 `json:"ff,omitempty"`
	FFEffects     uint32   `json:"ffEffects,omitempty"`
	Repeat        bool     `json:"rep,omitempty"`
}

// maxMTSlot is the highest ABS_MT_SLOT maximum uinput takes: 100 slots.
const maxMTSlot = 99

// maxFFEffects bounds FFEffects: the input core refuses more than
// FF_MAX_EFFECTS (the range of an effect id, a __s16) for a uinput device.
const maxFFEffects = 0x7fff

// codeLists pairs each plain code list with its event type and limit.
func (c *Capabilities) codeLists() []struct {
	typ   uint16
	name  string
	max   uint16
	codes []uint16
} {
	return []struct {
		typ   uint16
		name  string
		max   uint16
		codes []uint16
	}{
		{EvKey, "key", KeyMax, c.Keys},
		{EvRel, "rel", RelMax, c.Rel},
		{EvMsc, "msc", MscMax, c.Misc},
		{EvSw, "sw", SwMax, c.Switches},
		{EvLed, "led", LedMax, c.LEDs},
		{EvSnd, "snd", SndMax, c.Sounds},
		{EvFF, "ff", FFMax, c.ForceFeedback},
	}
}

// Types returns the event types the device reports, sorted: EV_SYN, then
// each type that has codes (EV_ABS when Abs is not empty), and EV_REP
// when Repeat is set.
func (c *Capabilities) Types() []uint16 {
	types := []uint16{EvSyn}
	for _, l := range c.codeLists() {
		if len(l.codes) > 0 {
			types = append(types, l.typ)
		}
	}
	if len(c.Abs) > 0 {
		types = append(types, EvAbs)
	}
	if c.Repeat {
		types = append(types, EvRep)
	}
	slices.Sort(types)
	return types
}

// AbsInfo returns the range of axis code, and false when the device has
// no such axis.
func (c *Capabilities) AbsInfo(code uint16) (AbsInfo, bool) {
	i, ok := slices.BinarySearchFunc(c.Abs, code, func(a Axis, code uint16) int { return int(a.Code) - int(code) })
	if !ok {
		return AbsInfo{}, false
	}
	return c.Abs[i].AbsInfo, true
}

// Has reports whether the device reports code of event type typ.
func (c *Capabilities) Has(typ, code uint16) bool {
	if typ == EvAbs {
		_, ok := c.AbsInfo(code)
		return ok
	}
	if typ == EvSyn {
		return true
	}
	for _, l := range c.codeLists() {
		if l.typ == typ {
			_, ok := slices.BinarySearch(l.codes, code)
			return ok
		}
	}
	return false
}

// Validate checks that a virtual device can be made from c: a name of 1
// to NameMax bytes of UTF-8 with no NUL, phys and uniq of at most 63
// bytes with no NUL, every code within its type's limit (KEY_MAX,
// ABS_MAX ...), each list sorted without duplicates, every axis with
// min <= max, a value in range and a flat no wider than max - min,
// ABS_MT_SLOT with a max of at most 99, and a force-feedback effect count
// only with force-feedback codes. The error names the first field that is
// wrong.
func (c *Capabilities) Validate() error {
	if c.Name == "" || len(c.Name) > NameMax || !utf8.ValidString(c.Name) || bytes.IndexByte([]byte(c.Name), 0) >= 0 {
		return fmt.Errorf("name %q: want 1 to %d bytes of UTF-8 with no NUL", c.Name, NameMax)
	}
	for _, s := range []struct{ field, v string }{{"phys", c.Phys}, {"uniq", c.Uniq}} {
		if len(s.v) > 63 || bytes.IndexByte([]byte(s.v), 0) >= 0 || !utf8.ValidString(s.v) {
			return fmt.Errorf("%s %q: want at most 63 bytes of UTF-8 with no NUL", s.field, s.v)
		}
	}
	if err := checkCodes("props", c.Properties, PropMax); err != nil {
		return err
	}
	for _, l := range c.codeLists() {
		if err := checkCodes(l.name, l.codes, l.max); err != nil {
			return err
		}
	}
	for i, a := range c.Abs {
		if a.Code > AbsMax {
			return fmt.Errorf("abs: code %#x is above ABS_MAX (%#x)", a.Code, AbsMax)
		}
		if i > 0 && a.Code <= c.Abs[i-1].Code {
			return fmt.Errorf("abs: code %#x after %#x: want ascending codes without duplicates", a.Code, c.Abs[i-1].Code)
		}
		if a.Minimum > a.Maximum {
			return fmt.Errorf("abs %#x: min %d is above max %d", a.Code, a.Minimum, a.Maximum)
		}
		if a.Value < a.Minimum || a.Value > a.Maximum {
			return fmt.Errorf("abs %#x: value %d is outside %d..%d", a.Code, a.Value, a.Minimum, a.Maximum)
		}
		if a.Fuzz < 0 || a.Flat < 0 || a.Resolution < 0 {
			return fmt.Errorf("abs %#x: fuzz, flat and resolution must not be negative", a.Code)
		}
		// uinput's own checks on an axis (uinput_validate_absinfo in the
		// kernel's drivers/input/misc/uinput.c): a dead zone no wider than
		// the range, when the range fits an int, and at most 100 touch
		// slots (since Linux 6.11).
		if rng := int64(a.Maximum) - int64(a.Minimum); rng <= math.MaxInt32 && int64(a.Flat) > rng {
			return fmt.Errorf("abs %#x: flat %d is wider than the range %d..%d", a.Code, a.Flat, a.Minimum, a.Maximum)
		}
		if a.Code == AbsMTSlot && a.Maximum > maxMTSlot {
			return fmt.Errorf("abs %#x (ABS_MT_SLOT): max %d is more than the %d touch slots uinput allows", a.Code, a.Maximum, maxMTSlot+1)
		}
	}
	if c.FFEffects > maxFFEffects {
		return fmt.Errorf("ffEffects %d: want at most %d", c.FFEffects, maxFFEffects)
	}
	if c.FFEffects > 0 && len(c.ForceFeedback) == 0 {
		return errors.New("ffEffects is set but the device has no force-feedback codes")
	}
	return nil
}

func checkCodes(name string, codes []uint16, max uint16) error {
	for i, code := range codes {
		if code > max {
			return fmt.Errorf("%s: code %#x is above the limit %#x", name, code, max)
		}
		if i > 0 && code <= codes[i-1] {
			return fmt.Errorf("%s: code %#x after %#x: want ascending codes without duplicates", name, code, codes[i-1])
		}
	}
	return nil
}

// Parse decodes the JSON form of Capabilities (what json.Marshal writes)
// and validates it. Unknown fields are refused, so a snapshot written by
// a newer version with a field this one would drop is not half-used. The
// error says what was wrong.
func Parse(data []byte) (Capabilities, error) {
	var c Capabilities
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Capabilities{}, fmt.Errorf("input device capabilities: %w", err)
	}
	if dec.More() {
		return Capabilities{}, errors.New("input device capabilities: data after the JSON object")
	}
	if err := c.Validate(); err != nil {
		return Capabilities{}, fmt.Errorf("input device capabilities: %w", err)
	}
	return c, nil
}

// SameDevice reports whether a and b describe the same kind of input
// device: the same name, identity (bus, vendor, product; the version may
// change with firmware) and the same event codes and axes ranges. It is
// how a controller's node after a wake is matched to the virtual device
// made for it before; phys, uniq and the axes' current values are not
// compared.
func SameDevice(a, b Capabilities) bool {
	if a.Name != b.Name || a.ID.Bus != b.ID.Bus || a.ID.Vendor != b.ID.Vendor || a.ID.Product != b.ID.Product {
		return false
	}
	la, lb := a.codeLists(), b.codeLists()
	for i := range la {
		if !slices.Equal(la[i].codes, lb[i].codes) {
			return false
		}
	}
	return slices.Equal(a.Properties, b.Properties) &&
		slices.EqualFunc(a.Abs, b.Abs, func(x, y Axis) bool {
			return x.Code == y.Code && x.Minimum == y.Minimum && x.Maximum == y.Maximum
		})
}
