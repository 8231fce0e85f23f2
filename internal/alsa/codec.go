// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"encoding/binary"
	"fmt"
)

// Conversions between the kernel structures and this package's types. The
// real backend decodes what the kernel filled; the recorded backend fills
// the same structures as the kernel would and decodes them through the
// same functions, so its tests exercise this code too.

func decodeCardInfo(c *ctlCardInfo) CardInfo {
	return CardInfo{
		Card: int(c.card), ID: cString(c.id[:]), Driver: cString(c.driver[:]), Name: cString(c.name[:]),
		LongName: cString(c.longname[:]), MixerName: cString(c.mixername[:]), Components: cString(c.components[:]),
	}
}

func encodeCardInfo(i CardInfo) ctlCardInfo {
	var c ctlCardInfo
	c.card = int32(i.Card)
	copy(c.id[:len(c.id)-1], i.ID)
	copy(c.driver[:len(c.driver)-1], i.Driver)
	copy(c.name[:len(c.name)-1], i.Name)
	copy(c.longname[:len(c.longname)-1], i.LongName)
	copy(c.mixername[:len(c.mixername)-1], i.MixerName)
	copy(c.components[:len(c.components)-1], i.Components)
	return c
}

func decodePCMInfo(p *pcmInfo) PCMInfo {
	return PCMInfo{
		Card: int(p.card), Device: int(p.device), Subdevice: int(p.subdevice), Stream: Stream(p.stream),
		ID: cString(p.id[:]), Name: cString(p.name[:]), Subname: cString(p.subname[:]),
		Class: int(p.devClass), Subclass: int(p.devSubclass),
		Subdevices: int(p.subdevicesCount), SubdevicesAvail: int(p.subdevicesAvail),
	}
}

func encodePCMInfo(i PCMInfo) pcmInfo {
	p := pcmInfo{
		device: uint32(i.Device), subdevice: uint32(i.Subdevice), stream: int32(i.Stream), card: int32(i.Card),
		devClass: int32(i.Class), devSubclass: int32(i.Subclass),
		subdevicesCount: uint32(i.Subdevices), subdevicesAvail: uint32(i.SubdevicesAvail),
	}
	copy(p.id[:len(p.id)-1], i.ID)
	copy(p.name[:len(p.name)-1], i.Name)
	copy(p.subname[:len(p.subname)-1], i.Subname)
	return p
}

// decodeElemInfo reads everything but enumerated item names, which take
// one ioctl per item.
func decodeElemInfo(c *ctlElemInfo) ElemInfo {
	info := ElemInfo{ID: c.id.toID(), Type: ElemType(c.typ), Access: Access(c.access), Count: int(c.count), Owner: c.owner}
	switch info.Type {
	case TypeInteger, TypeInteger64:
		info.Min = int64(binary.NativeEndian.Uint64(c.value[0:]))
		info.Max = int64(binary.NativeEndian.Uint64(c.value[8:]))
		info.Step = int64(binary.NativeEndian.Uint64(c.value[16:]))
	}
	return info
}

// enumItems is value.enumerated.items; enumItemName the name of the item
// whose number was asked in value.enumerated.item.
func enumItems(c *ctlElemInfo) uint32      { return binary.NativeEndian.Uint32(c.value[0:]) }
func setEnumItem(c *ctlElemInfo, i uint32) { binary.NativeEndian.PutUint32(c.value[4:], i) }
func enumItemName(c *ctlElemInfo) string   { return cString(c.value[8:72]) }

// encodeElemInfo fills the structure as the kernel does for an
// ELEM_INFO query; for an ENUMERATED element, item names the one item whose
// name goes in.
func encodeElemInfo(info ElemInfo, item uint32) ctlElemInfo {
	c := ctlElemInfo{id: fromID(info.ID), typ: uint32(info.Type), access: uint32(info.Access),
		count: uint32(info.Count), owner: info.Owner}
	switch info.Type {
	case TypeInteger, TypeInteger64:
		binary.NativeEndian.PutUint64(c.value[0:], uint64(info.Min))
		binary.NativeEndian.PutUint64(c.value[8:], uint64(info.Max))
		binary.NativeEndian.PutUint64(c.value[16:], uint64(info.Step))
	case TypeEnumerated:
		binary.NativeEndian.PutUint32(c.value[0:], uint32(len(info.Items)))
		binary.NativeEndian.PutUint32(c.value[4:], item)
		if int(item) < len(info.Items) {
			copy(c.value[8:8+63], info.Items[item])
		}
	}
	return c
}

// decodeValue reads count values of type t out of the value union; a
// boolean reads as 0 or 1.
func decodeValue(t ElemType, count int, raw *[1024]byte) (Value, error) {
	if count < 0 || count > t.MaxCount() {
		return Value{}, fmt.Errorf("%s element with %d values (at most %d)", t, count, t.MaxCount())
	}
	v := Value{Type: t}
	switch t {
	case TypeBoolean:
		// The kernel does not check what a driver's get callback puts in
		// a boolean's long (sound/core/control.c, snd_ctl_elem_read); any
		// non-zero value is on, as amixer shows it. Reading it as 1 keeps
		// a value read back writable (encodeValue takes 0 and 1 only).
		v.Ints = make([]int64, count)
		for i := range v.Ints {
			if binary.NativeEndian.Uint64(raw[8*i:]) != 0 {
				v.Ints[i] = 1
			}
		}
	case TypeInteger:
		v.Ints = make([]int64, count)
		for i := range v.Ints {
			v.Ints[i] = int64(binary.NativeEndian.Uint64(raw[8*i:]))
		}
	case TypeInteger64:
		v.Ints = make([]int64, count)
		for i := range v.Ints {
			v.Ints[i] = int64(binary.NativeEndian.Uint64(raw[8*i:]))
		}
	case TypeEnumerated:
		v.Ints = make([]int64, count)
		for i := range v.Ints {
			v.Ints[i] = int64(binary.NativeEndian.Uint32(raw[4*i:]))
		}
	case TypeBytes:
		v.Bytes = append([]byte{}, raw[:count]...)
	case TypeIEC958:
		v.Bytes = append([]byte{}, raw[:IEC958Size]...)
	}
	return v, nil
}

// encodeValue writes v into the value union of an element of type t that
// holds count values.
func encodeValue(v Value, t ElemType, count int, raw *[1024]byte) error {
	if v.Type != t {
		return fmt.Errorf("value of type %s for a %s element", v.Type, t)
	}
	want, got := count, len(v.Ints)
	switch t {
	case TypeBytes:
		got = len(v.Bytes)
	case TypeIEC958:
		want, got = IEC958Size, len(v.Bytes)
	}
	if got != want || count > t.MaxCount() {
		return fmt.Errorf("%d values for a %s element that holds %d", got, t, want)
	}
	switch t {
	case TypeBoolean:
		for i, x := range v.Ints {
			if x != 0 && x != 1 {
				return fmt.Errorf("BOOLEAN value %d is neither 0 nor 1", x)
			}
			binary.NativeEndian.PutUint64(raw[8*i:], uint64(x))
		}
	case TypeInteger, TypeInteger64:
		for i, x := range v.Ints {
			binary.NativeEndian.PutUint64(raw[8*i:], uint64(x))
		}
	case TypeEnumerated:
		for i, x := range v.Ints {
			if x < 0 || x > 0xffffffff {
				return fmt.Errorf("ENUMERATED value %d is not an item number", x)
			}
			binary.NativeEndian.PutUint32(raw[4*i:], uint32(x))
		}
	case TypeBytes, TypeIEC958:
		copy(raw[:], v.Bytes)
	default:
		return fmt.Errorf("cannot write a %s element", t)
	}
	return nil
}
