// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Dump is one card's control interface as recorded, the file format of the
// recorded backend: JSON, one card per file (card<N>.json in a [DumpDir]).
// Package alsatest's importers build dumps from what people
// post (alsa-info.sh reports, `amixer contents`); a test or a demo edits
// them to make hardware change.
type Dump struct {
	// Card is the card number.
	Card int `json:"card"`
	// Source says where the recording came from.
	Source string `json:"source,omitempty"`
	// Info is what CARD_INFO answers.
	Info DumpCardInfo `json:"info"`
	// PCMs are the card's PCM devices, one entry per direction.
	PCMs []DumpPCM `json:"pcms,omitempty"`
	// Controls are the card's control elements.
	Controls []DumpControl `json:"controls,omitempty"`
}

// DumpCardInfo is CardInfo in the dump. Lengths are the kernel's fields'
// less the NUL: id and driver 15 bytes, name 31, longname and mixername
// 79, components 127.
type DumpCardInfo struct {
	ID         string `json:"id"`
	Driver     string `json:"driver"`
	Name       string `json:"name"`
	LongName   string `json:"longname,omitempty"`
	MixerName  string `json:"mixername,omitempty"`
	Components string `json:"components,omitempty"`
}

// DumpPCM is one direction of one PCM device.
type DumpPCM struct {
	Device int `json:"device"`
	// Stream is "playback" or "capture".
	Stream string `json:"stream"`
	// ID (at most 63 bytes), Name (79) and Subname (31) are PCM_INFO's.
	ID      string `json:"id"`
	Name    string `json:"name,omitempty"`
	Subname string `json:"subname,omitempty"`
	// Class and Subclass are SNDRV_PCM_CLASS_* and _SUBCLASS_*.
	Class    int `json:"class,omitempty"`
	Subclass int `json:"subclass,omitempty"`
	// Subdevices is the substream count (at least 1); SubdevicesAvail how
	// many are free (0 when a player holds the only one).
	Subdevices      int `json:"subdevices"`
	SubdevicesAvail int `json:"subdevicesAvail"`
}

// DumpControl is one control element with its value.
type DumpControl struct {
	NumID     uint32 `json:"numid"`
	Iface     string `json:"iface"`
	Device    uint32 `json:"device,omitempty"`
	Subdevice uint32 `json:"subdevice,omitempty"`
	Name      string `json:"name"`
	Index     uint32 `json:"index,omitempty"`
	// Type is BOOLEAN, INTEGER, ENUMERATED, BYTES, IEC958 or INTEGER64.
	Type string `json:"type"`
	// Access holds Access words: "read write", "read volatile".
	Access string `json:"access"`
	// Count is the number of values (bytes for BYTES; 1 for IEC958).
	Count int `json:"count"`
	// Min, Max and Step bound an INTEGER or INTEGER64 element.
	Min  int64 `json:"min,omitempty"`
	Max  int64 `json:"max,omitempty"`
	Step int64 `json:"step,omitempty"`
	// Items name an ENUMERATED element's items.
	Items []string `json:"items,omitempty"`
	// Values holds Count values of a BOOLEAN (0/1), INTEGER, INTEGER64
	// or ENUMERATED (item number) element.
	Values []int64 `json:"values,omitempty"`
	// Bytes holds a BYTES element's Count bytes, or an IEC958 element's
	// 176-byte record, in hex.
	Bytes string `json:"bytes,omitempty"`
	// TLV is the element's TLV data as 32-bit words (type, length in
	// bytes, payload); present only with the tlv_read access bit.
	TLV []uint32 `json:"tlv,omitempty"`
	// DBMin and DBMax are alsactl's dB range in 0.01 dB, kept for a
	// reader; the backend does not serve them. DBMute (-9999999) is
	// alsa-lib's "muted" sentinel, not a level.
	DBMin *int64 `json:"dbMin,omitempty"`
	DBMax *int64 `json:"dbMax,omitempty"`
}

// DBMute is alsa-lib's SND_CTL_TLV_DB_GAIN_MUTE: the dB value of a muted
// minimum, in 0.01 dB.
const DBMute = -9999999

// DecodeDump reads a dump from JSON; unknown fields are refused. The dump
// is validated (Validate), so a decoded dump can always be served.
func DecodeDump(data []byte) (*Dump, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var d Dump
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("ALSA dump: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("ALSA dump: data after the dump object")
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &d, nil
}

// Encode writes the dump as indented JSON with a final newline.
func (d *Dump) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Validate checks that the dump describes a card the kernel could have:
// fields fit the kernel's structures, numeric ids are unique and not 0, no
// two elements share an id, values agree with type and count. The error
// names the card, the element and the problem.
func (d *Dump) Validate() error {
	_, err := d.build()
	return err
}

// recElem is one element as the recorded backend holds it.
type recElem struct {
	info         ElemInfo
	value        Value
	tlv          []uint32
	dbMin, dbMax *int64
}

// recCard is a dump converted to the backend's form.
type recCard struct {
	source string
	info   CardInfo
	pcms   []PCMInfo
	elems  []*recElem // sorted by numid
}

func (d *Dump) build() (*recCard, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("ALSA dump of card %d: %s", d.Card, fmt.Sprintf(format, args...))
	}
	if d.Card < 0 || d.Card > 255 {
		return nil, fail("card number outside 0..255")
	}
	for _, f := range []struct {
		name, value string
		max         int
	}{
		{"id", d.Info.ID, 15}, {"driver", d.Info.Driver, 15}, {"name", d.Info.Name, 31},
		{"longname", d.Info.LongName, 79}, {"mixername", d.Info.MixerName, 79}, {"components", d.Info.Components, 127},
	} {
		if err := checkCString(f.value, f.max); err != nil {
			return nil, fail("info.%s: %v", f.name, err)
		}
	}
	c := &recCard{source: d.Source, info: CardInfo{Card: d.Card, ID: d.Info.ID, Driver: d.Info.Driver, Name: d.Info.Name,
		LongName: d.Info.LongName, MixerName: d.Info.MixerName, Components: d.Info.Components}}

	for _, p := range d.PCMs {
		stream, err := ParseStream(p.Stream)
		if err != nil {
			return nil, fail("PCM %d: %v", p.Device, err)
		}
		where := fmt.Sprintf("PCM %d %s", p.Device, stream)
		switch {
		case p.Device < 0 || p.Device > 255:
			return nil, fail("%s: device outside 0..255", where)
		case p.Subdevices < 1 || p.Subdevices > 64:
			return nil, fail("%s: %d subdevices (1..64)", where, p.Subdevices)
		case p.SubdevicesAvail < 0 || p.SubdevicesAvail > p.Subdevices:
			return nil, fail("%s: %d of %d subdevices available", where, p.SubdevicesAvail, p.Subdevices)
		}
		for _, f := range []struct {
			name, value string
			max         int
		}{{"id", p.ID, 63}, {"name", p.Name, 79}, {"subname", p.Subname, 31}} {
			if err := checkCString(f.value, f.max); err != nil {
				return nil, fail("%s: %s: %v", where, f.name, err)
			}
		}
		for _, q := range c.pcms {
			if q.Device == p.Device && q.Stream == stream {
				return nil, fail("%s appears twice", where)
			}
		}
		c.pcms = append(c.pcms, PCMInfo{Card: d.Card, Device: p.Device, Stream: stream, ID: p.ID, Name: p.Name,
			Subname: p.Subname, Class: p.Class, Subclass: p.Subclass, Subdevices: p.Subdevices, SubdevicesAvail: p.SubdevicesAvail})
	}
	slices.SortFunc(c.pcms, func(a, b PCMInfo) int {
		if a.Device != b.Device {
			return a.Device - b.Device
		}
		return int(a.Stream) - int(b.Stream)
	})

	for _, dc := range d.Controls {
		e, err := dc.build()
		if err != nil {
			return nil, fail("control numid=%d name=%q: %v", dc.NumID, dc.Name, err)
		}
		for _, o := range c.elems {
			if o.info.ID.NumID == e.info.ID.NumID {
				return nil, fail("numid %d is used by %q and %q", dc.NumID, o.info.ID.Name, dc.Name)
			}
			if o.info.ID.sameElement(e.info.ID) {
				return nil, fail("two elements are %s", e.info.ID)
			}
		}
		c.elems = append(c.elems, e)
	}
	slices.SortFunc(c.elems, func(a, b *recElem) int { return cmp.Compare(a.info.ID.NumID, b.info.ID.NumID) })
	return c, nil
}

func (dc *DumpControl) build() (*recElem, error) {
	iface, err := ParseIface(dc.Iface)
	if err != nil {
		return nil, err
	}
	typ, err := ParseElemType(dc.Type)
	if err != nil {
		return nil, err
	}
	access, err := ParseAccess(dc.Access)
	if err != nil {
		return nil, err
	}
	if dc.NumID == 0 {
		return nil, fmt.Errorf("numid 0 names no element")
	}
	if dc.Name == "" {
		return nil, fmt.Errorf("empty name")
	}
	if err := checkCString(dc.Name, ctlElemNameMaxLen-1); err != nil {
		return nil, fmt.Errorf("name: %v", err)
	}
	if dc.Count < 0 || dc.Count > typ.MaxCount() || typ == TypeIEC958 && dc.Count != 1 {
		return nil, fmt.Errorf("count %d for a %s element (at most %d)", dc.Count, typ, typ.MaxCount())
	}
	e := &recElem{info: ElemInfo{
		ID:   ElemID{NumID: dc.NumID, Iface: iface, Device: dc.Device, Subdevice: dc.Subdevice, Name: dc.Name, Index: dc.Index},
		Type: typ, Access: access, Count: dc.Count,
	}, value: Value{Type: typ}, dbMin: dc.DBMin, dbMax: dc.DBMax}

	if typ != TypeInteger && typ != TypeInteger64 && (dc.Min != 0 || dc.Max != 0 || dc.Step != 0) {
		return nil, fmt.Errorf("min, max or step on a %s element", typ)
	}
	if typ != TypeEnumerated && len(dc.Items) > 0 {
		return nil, fmt.Errorf("items on a %s element", typ)
	}
	switch typ {
	case TypeBoolean, TypeInteger, TypeInteger64, TypeEnumerated:
		if dc.Bytes != "" {
			return nil, fmt.Errorf("bytes on a %s element", typ)
		}
		if len(dc.Values) != dc.Count {
			return nil, fmt.Errorf("%d values for count %d", len(dc.Values), dc.Count)
		}
		e.value.Ints = slices.Clone(dc.Values)
		if e.value.Ints == nil {
			e.value.Ints = []int64{}
		}
	case TypeBytes, TypeIEC958:
		if len(dc.Values) > 0 {
			return nil, fmt.Errorf("values on a %s element (bytes go in \"bytes\")", typ)
		}
		b, err := hex.DecodeString(dc.Bytes)
		if err != nil {
			return nil, fmt.Errorf("bytes: %v", err)
		}
		want := dc.Count
		if typ == TypeIEC958 {
			want = IEC958Size
		}
		if len(b) != want {
			return nil, fmt.Errorf("%d bytes for a %s element that holds %d", len(b), typ, want)
		}
		e.value.Bytes = b
	}
	switch typ {
	case TypeBoolean:
		for _, x := range dc.Values {
			if x != 0 && x != 1 {
				return nil, fmt.Errorf("BOOLEAN value %d", x)
			}
		}
	case TypeInteger, TypeInteger64:
		if dc.Min > dc.Max {
			return nil, fmt.Errorf("min %d above max %d", dc.Min, dc.Max)
		}
		if dc.Step < 0 {
			return nil, fmt.Errorf("negative step %d", dc.Step)
		}
		e.info.Min, e.info.Max, e.info.Step = dc.Min, dc.Max, dc.Step
		for _, x := range dc.Values {
			if x < dc.Min || x > dc.Max {
				return nil, fmt.Errorf("value %d outside %d..%d", x, dc.Min, dc.Max)
			}
		}
	case TypeEnumerated:
		if len(dc.Items) == 0 || len(dc.Items) > MaxEnumItems {
			return nil, fmt.Errorf("%d items (1..%d)", len(dc.Items), MaxEnumItems)
		}
		for _, it := range dc.Items {
			if err := checkCString(it, 63); err != nil {
				return nil, fmt.Errorf("item: %v", err)
			}
		}
		e.info.Items = slices.Clone(dc.Items)
		for _, x := range dc.Values {
			if x < 0 || x >= int64(len(dc.Items)) {
				return nil, fmt.Errorf("item %d of %d", x, len(dc.Items))
			}
		}
	}
	if len(dc.TLV) > 0 {
		if access&AccessTLVRead == 0 {
			return nil, fmt.Errorf("TLV data without the tlv_read access")
		}
		if len(dc.TLV) < 2 || len(dc.TLV) > 4096 || int(dc.TLV[1]) != 4*(len(dc.TLV)-2) {
			return nil, fmt.Errorf("TLV of %d words says length %d", len(dc.TLV), tlvLen(dc.TLV))
		}
		e.tlv = slices.Clone(dc.TLV)
	}
	return e, nil
}

func tlvLen(w []uint32) int64 {
	if len(w) < 2 {
		return -1
	}
	return int64(w[1])
}

// checkCString checks a string for a kernel char array of max bytes plus
// the NUL.
func checkCString(s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%q is %d bytes, more than %d", s, len(s), max)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%q holds a NUL", s)
	}
	return nil
}

// dump converts the backend's form back to the file format.
func (c *recCard) dump() *Dump {
	d := &Dump{Card: c.info.Card, Source: c.source, Info: DumpCardInfo{ID: c.info.ID, Driver: c.info.Driver, Name: c.info.Name,
		LongName: c.info.LongName, MixerName: c.info.MixerName, Components: c.info.Components}}
	for _, p := range c.pcms {
		d.PCMs = append(d.PCMs, DumpPCM{Device: p.Device, Stream: p.Stream.String(), ID: p.ID, Name: p.Name,
			Subname: p.Subname, Class: p.Class, Subclass: p.Subclass, Subdevices: p.Subdevices, SubdevicesAvail: p.SubdevicesAvail})
	}
	for _, e := range c.elems {
		id := e.info.ID
		dc := DumpControl{NumID: id.NumID, Iface: id.Iface.String(), Device: id.Device, Subdevice: id.Subdevice,
			Name: id.Name, Index: id.Index, Type: e.info.Type.String(), Access: e.info.Access.String(),
			Count: e.info.Count, Min: e.info.Min, Max: e.info.Max, Step: e.info.Step,
			Items: slices.Clone(e.info.Items), TLV: slices.Clone(e.tlv), DBMin: e.dbMin, DBMax: e.dbMax}
		switch e.info.Type {
		case TypeBytes, TypeIEC958:
			dc.Bytes = hex.EncodeToString(e.value.Bytes)
		default:
			dc.Values = slices.Clone(e.value.Ints)
		}
		d.Controls = append(d.Controls, dc)
	}
	return d
}
