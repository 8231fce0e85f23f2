// SPDX-License-Identifier: Apache-2.0

package evdev

import "unsafe"

// The kernel's evdev ABI, from include/uapi/linux/input.h and
// include/uapi/linux/input-event-codes.h. abi_test.go checks the sizes and
// ioctl numbers against values measured from the kernel headers on amd64.

// ioctl direction bits of the generic encoding
// (include/uapi/asm-generic/ioctl.h, used by x86 and arm64).
const (
	iocWrite = 1
	iocRead  = 2
)

// ioc encodes an ioctl number: dir<<30 | size<<16 | group<<8 | nr.
func ioc(dir uintptr, group byte, nr, size uintptr) uintptr {
	return dir<<30 | size<<16 | uintptr(group)<<8 | nr
}

// Event types (EV_*).
const (
	EvSyn = 0x00
	EvKey = 0x01
	EvRel = 0x02
	EvAbs = 0x03
	EvMsc = 0x04
	EvSw  = 0x05
	EvLed = 0x11
	EvSnd = 0x12
	EvRep = 0x14
	EvFF  = 0x15
	EvMax = 0x1f
)

// Synchronisation codes (SYN_*).
const (
	SynReport  = 0
	SynDropped = 3
)

// The highest code of each type (KEY_MAX, ABS_MAX ...), and of input
// properties (INPUT_PROP_MAX).
const (
	KeyMax  = 0x2ff
	RelMax  = 0x0f
	AbsMax  = 0x3f
	MscMax  = 0x07
	SwMax   = 0x10
	LedMax  = 0x0f
	SndMax  = 0x07
	FFMax   = 0x7f
	PropMax = 0x1f
)

// Multi-touch codes the relay tracks to lift every touch.
const (
	AbsMTSlot       = 0x2f
	AbsMTTrackingID = 0x39
)

// Force-feedback effect types (FF_*) and the periodic waveform that
// carries a pointer into the uploader's memory.
const (
	FFRumble   = 0x50
	FFPeriodic = 0x51
	FFCustom   = 0x5d
	FFGain     = 0x60
)

// inputID is struct input_id.
type inputID struct {
	Bustype, Vendor, Product, Version uint16
}

// AbsInfo is struct input_absinfo (24 bytes): the state and range of one
// absolute axis.
type AbsInfo struct {
	Value      int32 `json:"value"`
	Minimum    int32 `json:"min"`
	Maximum    int32 `json:"max"`
	Fuzz       int32 `json:"fuzz,omitempty"`
	Flat       int32 `json:"flat,omitempty"`
	Resolution int32 `json:"resolution,omitempty"`
}

// EventSize is sizeof(struct input_event) on 64-bit Linux: a struct
// timeval of two longs, then __u16 type, __u16 code, __s32 value.
const EventSize = 24

// FFEffectSize is sizeof(struct ff_effect) on 64-bit Linux: the header
// (type, id, direction, trigger, replay) padded to 16 bytes, then a
// 32-byte union whose periodic member ends in a pointer.
const FFEffectSize = 48

// Evdev ioctls (group 'E').
var (
	ioctlGetID      = ioc(iocRead, 'E', 0x02, unsafe.Sizeof(inputID{})) // EVIOCGID
	ioctlGetEffects = ioc(iocRead, 'E', 0x84, 4)                        // EVIOCGEFFECTS, int
	ioctlSetFF      = ioc(iocWrite, 'E', 0x80, FFEffectSize)            // EVIOCSFF
	ioctlRemoveFF   = ioc(iocWrite, 'E', 0x81, 4)                       // EVIOCRMFF, int
)

// ioctlGetName, ioctlGetPhys, ioctlGetUniq and ioctlGetProp read len
// bytes (EVIOCGNAME, EVIOCGPHYS, EVIOCGUNIQ, EVIOCGPROP).
func ioctlGetName(n uintptr) uintptr { return ioc(iocRead, 'E', 0x06, n) }
func ioctlGetPhys(n uintptr) uintptr { return ioc(iocRead, 'E', 0x07, n) }
func ioctlGetUniq(n uintptr) uintptr { return ioc(iocRead, 'E', 0x08, n) }
func ioctlGetProp(n uintptr) uintptr { return ioc(iocRead, 'E', 0x09, n) }

// ioctlGetBit is EVIOCGBIT(ev, len): the code bitmap of event type ev, or
// with ev 0 the bitmap of event types.
func ioctlGetBit(ev, n uintptr) uintptr { return ioc(iocRead, 'E', 0x20+ev, n) }

// ioctlGetAbs is EVIOCGABS(abs): one axis's struct input_absinfo.
func ioctlGetAbs(abs uintptr) uintptr {
	return ioc(iocRead, 'E', 0x40+abs, unsafe.Sizeof(AbsInfo{}))
}
