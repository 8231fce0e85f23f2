// SPDX-License-Identifier: Apache-2.0

package alsa

import (
	"fmt"
	"strings"
)

// Control is one open handle on a card's control interface, the
// /dev/snd/controlC<N> node. [HWControl] is the kernel's; [RecordedControl]
// serves a recorded card. Errors from both wrap the kernel's errno where
// the kernel would fail (unix.ENOENT for an element or PCM stream that does
// not exist, unix.EPERM for a write to a read-only element, unix.EBADFD for
// reading events without a subscription), so callers test them with
// errors.Is the same way for either backend.
//
// A handle is safe for use by one reader of events and, concurrently,
// any number of callers of the other methods.
type Control interface {
	// CardInfo reads the card's identification (SNDRV_CTL_IOCTL_CARD_INFO).
	CardInfo() (CardInfo, error)
	// Elements lists every control element's id, in the card's order
	// (SNDRV_CTL_IOCTL_ELEM_LIST). Numeric ids may have gaps.
	Elements() ([]ElemID, error)
	// ElemInfo describes one element (SNDRV_CTL_IOCTL_ELEM_INFO). id is
	// found by NumID when that is not 0, otherwise by iface, device,
	// subdevice, name and index; the returned ID is complete.
	ElemInfo(id ElemID) (ElemInfo, error)
	// Read reads an element's current value (ELEM_INFO for its type and
	// count, then SNDRV_CTL_IOCTL_ELEM_READ).
	Read(id ElemID) (Value, error)
	// Write sets an element's value (SNDRV_CTL_IOCTL_ELEM_WRITE). v.Type
	// must be the element's type and v hold the element's count of
	// values; the kernel then notifies subscribers if the value changed.
	Write(id ElemID, v Value) error
	// TLV reads an element's TLV data (SNDRV_CTL_IOCTL_TLV_READ) as 32-bit
	// words: type, length in bytes, payload; e.g. a dB scale is
	// [1, 8, min in 0.01 dB, step | mute<<16].
	TLV(id ElemID) ([]uint32, error)
	// NextPCMDevice returns the lowest PCM device number above after
	// (SNDRV_CTL_IOCTL_PCM_NEXT_DEVICE); after -1 gives the first. It
	// returns -1 when there is none.
	NextPCMDevice(after int) (int, error)
	// PCMInfo describes one PCM substream (SNDRV_CTL_IOCTL_PCM_INFO). A
	// device with no stream in that direction fails with unix.ENOENT.
	PCMInfo(device, subdevice int, stream Stream) (PCMInfo, error)
	// Subscribe asks for change events on this handle
	// (SNDRV_CTL_IOCTL_SUBSCRIBE_EVENTS with 1).
	Subscribe() error
	// ReadEvents blocks until at least one event is queued and returns the
	// queued events. After Close it returns an error wrapping
	// os.ErrClosed.
	ReadEvents() ([]Event, error)
	// Close releases the handle and ends a blocked ReadEvents.
	Close() error
}

// Iface is an element's interface (snd_ctl_elem_iface_t).
type Iface uint32

// Interfaces (SNDRV_CTL_ELEM_IFACE_*).
const (
	IfaceCard      Iface = 0
	IfaceHWDep     Iface = 1
	IfaceMixer     Iface = 2
	IfacePCM       Iface = 3
	IfaceRawMIDI   Iface = 4
	IfaceTimer     Iface = 5
	IfaceSequencer Iface = 6
)

var ifaceNames = [...]string{"CARD", "HWDEP", "MIXER", "PCM", "RAWMIDI", "TIMER", "SEQUENCER"}

// String spells the interface as amixer and alsactl do ("PCM").
func (i Iface) String() string {
	if int(i) < len(ifaceNames) {
		return ifaceNames[i]
	}
	return fmt.Sprintf("iface%d", uint32(i))
}

// ParseIface reads an interface name as String spells it.
func ParseIface(s string) (Iface, error) {
	for i, n := range ifaceNames {
		if n == s {
			return Iface(i), nil
		}
	}
	return 0, fmt.Errorf("unknown element interface %q", s)
}

// ElemType is an element's value type (snd_ctl_elem_type_t).
type ElemType uint32

// Element types (SNDRV_CTL_ELEM_TYPE_*).
const (
	TypeNone       ElemType = 0
	TypeBoolean    ElemType = 1
	TypeInteger    ElemType = 2
	TypeEnumerated ElemType = 3
	TypeBytes      ElemType = 4
	TypeIEC958     ElemType = 5
	TypeInteger64  ElemType = 6
)

var typeNames = [...]string{"NONE", "BOOLEAN", "INTEGER", "ENUMERATED", "BYTES", "IEC958", "INTEGER64"}

// String spells the type as amixer and alsactl do ("BYTES").
func (t ElemType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type%d", uint32(t))
}

// ParseElemType reads a type name as String spells it; NONE is refused.
func ParseElemType(s string) (ElemType, error) {
	for i, n := range typeNames {
		if n == s && i != 0 {
			return ElemType(i), nil
		}
	}
	return 0, fmt.Errorf("unknown element type %q", s)
}

// MaxCount is the most values one element of type t holds inline.
func (t ElemType) MaxCount() int {
	switch t {
	case TypeBoolean, TypeInteger, TypeEnumerated:
		return elemValueIntegers
	case TypeInteger64:
		return elemValueInteger64s
	case TypeBytes:
		return elemValueBytes
	case TypeIEC958:
		return 1
	}
	return 0
}

// Access is an element's access bit mask (SNDRV_CTL_ELEM_ACCESS_*).
type Access uint32

// Access bits. Bit 3 is unused; bits 30 and 31 are obsolete.
const (
	AccessRead        Access = 1 << 0
	AccessWrite       Access = 1 << 1
	AccessVolatile    Access = 1 << 2
	AccessTLVRead     Access = 1 << 4
	AccessTLVWrite    Access = 1 << 5
	AccessTLVCommand  Access = 1 << 6
	AccessInactive    Access = 1 << 8
	AccessLock        Access = 1 << 9
	AccessOwner       Access = 1 << 10
	AccessTLVCallback Access = 1 << 28
	AccessUser        Access = 1 << 29
)

var accessWords = []struct {
	bit  Access
	word string
}{
	{AccessRead, "read"}, {AccessWrite, "write"}, {AccessVolatile, "volatile"},
	{AccessTLVRead, "tlv_read"}, {AccessTLVWrite, "tlv_write"}, {AccessTLVCommand, "tlv_command"},
	{AccessInactive, "inactive"}, {AccessLock, "locked"}, {AccessLock, "lock"}, {AccessOwner, "owner"},
	{AccessTLVCallback, "tlv_callback"}, {AccessUser, "user"},
}

// String lists the set bits as space-separated words ("read write"),
// alsactl's spelling where it has one.
func (a Access) String() string {
	var words []string
	for _, w := range accessWords {
		if a&w.bit != 0 {
			words = append(words, w.word)
			a &^= w.bit
		}
	}
	if a != 0 {
		words = append(words, fmt.Sprintf("%#x", uint32(a)))
	}
	return strings.Join(words, " ")
}

// ParseAccess reads the words String writes.
func ParseAccess(s string) (Access, error) {
	var a Access
next:
	for _, word := range strings.Fields(s) {
		for _, w := range accessWords {
			if w.word == word {
				a |= w.bit
				continue next
			}
		}
		return 0, fmt.Errorf("unknown access word %q", word)
	}
	return a, nil
}

// ElemID names a control element (struct snd_ctl_elem_id).
type ElemID struct {
	// NumID is the card-wide numeric id, never 0 for an existing element.
	NumID uint32
	// Iface is the interface the element belongs to.
	Iface Iface
	// Device and Subdevice are the PCM (or other) device the element
	// belongs to, e.g. the ELD element of PCM 3 has Device 3.
	Device, Subdevice uint32
	// Name is the element's name, at most 43 bytes.
	Name string
	// Index tells apart elements of the same name.
	Index uint32
}

// String spells the id as amixer does: numid=37,iface=PCM,device=5,name='ELD'.
func (id ElemID) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "numid=%d,iface=%s", id.NumID, id.Iface)
	if id.Device != 0 {
		fmt.Fprintf(&b, ",device=%d", id.Device)
	}
	if id.Subdevice != 0 {
		fmt.Fprintf(&b, ",subdevice=%d", id.Subdevice)
	}
	fmt.Fprintf(&b, ",name='%s'", id.Name)
	if id.Index != 0 {
		fmt.Fprintf(&b, ",index=%d", id.Index)
	}
	return b.String()
}

// sameElement reports whether two ids name the same element by their
// fields (numid aside).
func (id ElemID) sameElement(o ElemID) bool {
	return id.Iface == o.Iface && id.Device == o.Device && id.Subdevice == o.Subdevice &&
		id.Name == o.Name && id.Index == o.Index
}

// ElemInfo describes an element (struct snd_ctl_elem_info).
type ElemInfo struct {
	ID     ElemID
	Type   ElemType
	Access Access
	// Count is the number of values; for BYTES the number of bytes (for
	// an ELD element, the current block length; 0 with no monitor).
	Count int
	// Owner is the PID that locked the element, or 0 (-1 meaning none
	// on some kernels).
	Owner int32
	// Min, Max and Step bound an INTEGER or INTEGER64 element.
	Min, Max, Step int64
	// Items are an ENUMERATED element's item names, in order.
	Items []string
}

// Value is an element's value (struct snd_ctl_elem_value), decoded by type.
type Value struct {
	Type ElemType
	// Ints holds BOOLEAN (0 or 1), INTEGER, INTEGER64 and ENUMERATED (item
	// index) values, one per count.
	Ints []int64
	// Bytes holds a BYTES element's Count bytes, or an IEC958 element's
	// 176-byte struct snd_aes_iec958.
	Bytes []byte
}

// CardInfo identifies a card (struct snd_ctl_card_info).
type CardInfo struct {
	// Card is the card number this boot, the N of controlC<N>.
	Card int
	// ID is the user-selectable card id ("PCH", "sofsoundwire").
	ID string
	// Driver is the ALSA driver's name for the card ("HDA-Intel",
	// "USB-Audio", "sof-soundwire").
	Driver string
	// Name and LongName are the short and long card names.
	Name, LongName string
	// MixerName identifies the mixer (the HDA codec's name).
	MixerName string
	// Components lists fine identification, space-separated
	// ("HDA:8086280b,80860101,00100000", "USB1532:0526").
	Components string
}

// Stream is a PCM direction (SNDRV_PCM_STREAM_*).
type Stream int

// Directions.
const (
	Playback Stream = 0
	Capture  Stream = 1
)

// String returns "playback" or "capture".
func (s Stream) String() string {
	switch s {
	case Playback:
		return "playback"
	case Capture:
		return "capture"
	}
	return fmt.Sprintf("stream%d", int(s))
}

// Suffix is the letter ending the PCM node's name: 'p' or 'c'.
func (s Stream) Suffix() byte {
	if s == Capture {
		return 'c'
	}
	return 'p'
}

// ParseStream reads "playback" or "capture".
func ParseStream(s string) (Stream, error) {
	switch s {
	case "playback":
		return Playback, nil
	case "capture":
		return Capture, nil
	}
	return 0, fmt.Errorf("unknown PCM stream %q (want playback or capture)", s)
}

// PCMInfo describes a PCM substream (struct snd_pcm_info).
type PCMInfo struct {
	Card, Device, Subdevice int
	Stream                  Stream
	// ID is the driver's id for the PCM device ("HDMI 0", "USB Audio",
	// "HDMI 1 (*)" for an ASoC front end); the stable part of an output's
	// name, where the device number is this boot's.
	ID string
	// Name and Subname are the device's and the substream's names; either
	// may be empty.
	Name, Subname string
	// Class and Subclass are SNDRV_PCM_CLASS_* and SNDRV_PCM_SUBCLASS_*.
	Class, Subclass int
	// Subdevices is the number of substreams; SubdevicesAvail of those
	// not open right now.
	Subdevices, SubdevicesAvail int
}

// EventMask says what changed in an element event (SNDRV_CTL_EVENT_MASK_*).
type EventMask uint32

// Event mask bits. EventRemove is all bits set, never combined with others.
const (
	EventValue  EventMask = 1 << 0
	EventInfo   EventMask = 1 << 1
	EventAdd    EventMask = 1 << 2
	EventTLV    EventMask = 1 << 3
	EventRemove EventMask = ^EventMask(0)
)

// String lists the bits: "value|info", or "remove".
func (m EventMask) String() string {
	if m == EventRemove {
		return "remove"
	}
	var parts []string
	for _, b := range []struct {
		bit  EventMask
		name string
	}{{EventValue, "value"}, {EventInfo, "info"}, {EventAdd, "add"}, {EventTLV, "tlv"}} {
		if m&b.bit != 0 {
			parts = append(parts, b.name)
			m &^= b.bit
		}
	}
	if m != 0 {
		parts = append(parts, fmt.Sprintf("%#x", uint32(m)))
	}
	return strings.Join(parts, "|")
}

// EventElem is the only event type the kernel sends (SNDRV_CTL_EVENT_ELEM).
const EventElem = 0

// Event is one change notification (struct snd_ctl_event).
type Event struct {
	// Type is EventElem.
	Type int32
	// Mask says what changed.
	Mask EventMask
	// ID is the element's full id.
	ID ElemID
}

// Removed reports whether the element was removed.
func (e Event) Removed() bool { return e.Mask == EventRemove }
