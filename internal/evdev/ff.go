// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package evdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"unsafe"
)

// Offsets in struct ff_effect (include/uapi/linux/input.h): __u16 type,
// __s16 id, then direction, trigger and replay; the union starts at 16,
// and a periodic effect's waveform is its first field.
const (
	ffOffType     = 0
	ffOffID       = 2
	ffOffWaveform = 16
)

// FFEffect is one struct ff_effect as the kernel lays it out, kept as
// bytes: the relay passes a consumer's effect to the controller's node
// unchanged except for its id.
type FFEffect [FFEffectSize]byte

// Type returns the effect's type (FF_RUMBLE, FF_PERIODIC ...).
func (e *FFEffect) Type() uint16 { return binary.NativeEndian.Uint16(e[ffOffType:]) }

// ID returns the effect's id; -1 asks the kernel for a new one.
func (e *FFEffect) ID() int16 { return int16(binary.NativeEndian.Uint16(e[ffOffID:])) }

// SetID sets the effect's id.
func (e *FFEffect) SetID(id int16) { binary.NativeEndian.PutUint16(e[ffOffID:], uint16(id)) }

// CheckPortable returns an error for an effect that cannot be handed from
// one process to another: a periodic effect with the FF_CUSTOM waveform
// carries a pointer into its uploader's memory.
func (e *FFEffect) CheckPortable() error {
	if e.Type() == FFPeriodic && binary.NativeEndian.Uint16(e[ffOffWaveform:]) == FFCustom {
		return errors.New("a custom periodic waveform points into the uploader's memory and cannot be passed on")
	}
	return nil
}

// UploadEffect uploads e to the device behind event node f (EVIOCSFF)
// and returns the id the device gave it. e's id must be -1 for a new
// effect or an id this descriptor uploaded before, to change it.
func UploadEffect(f *os.File, e FFEffect) (int16, error) {
	if err := e.CheckPortable(); err != nil {
		return -1, err
	}
	if err := ioctl(f, ioctlSetFF, unsafe.Pointer(&e[0])); err != nil {
		return -1, fmt.Errorf("EVIOCSFF on %s: %w", f.Name(), err)
	}
	return e.ID(), nil
}

// RemoveEffect erases effect id from the device behind event node f
// (EVIOCRMFF).
func RemoveEffect(f *os.File, id int16) error {
	if err := ioctlValue(f, ioctlRemoveFF, uintptr(id)); err != nil {
		return fmt.Errorf("EVIOCRMFF %d on %s: %w", id, f.Name(), err)
	}
	return nil
}
