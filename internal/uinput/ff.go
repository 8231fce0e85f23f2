// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package uinput

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/liken-sh/operators/internal/evdev"
)

// Upload is a reader's force-feedback upload in progress: the effect it
// uploads (with the id the input core gave it) and, when it changes an
// effect it uploaded before, the old one. The reader's EVIOCSFF waits
// until EndUpload answers it.
type Upload struct {
	RequestID uint32
	Effect    evdev.FFEffect
	Old       evdev.FFEffect
}

// Erase is a reader's removal of an effect in progress; its EVIOCRMFF
// (or its close) waits until EndErase answers it.
type Erase struct {
	RequestID uint32
	EffectID  int16
}

// IsUpload and IsErase tell which request an EV_UINPUT event from Read
// announces; its value is the request id to begin it with.
func IsUpload(e evdev.Event) bool { return e.Type == evUinput && e.Code == uiFFUpload }

// IsErase reports whether e announces an erase request.
func IsErase(e evdev.Event) bool { return e.Type == evUinput && e.Code == uiFFErase }

// BeginUpload fetches upload request id (UI_BEGIN_FF_UPLOAD).
func (d *Device) BeginUpload(id uint32) (Upload, error) {
	var b [ffUploadSize]byte
	binary.NativeEndian.PutUint32(b[0:], id)
	if err := d.ioctl(ioctlBeginFFUpload, unsafe.Pointer(&b[0])); err != nil {
		return Upload{}, fmt.Errorf("uinput: UI_BEGIN_FF_UPLOAD %d: %w", id, err)
	}
	u := Upload{RequestID: id}
	copy(u.Effect[:], b[8:])
	copy(u.Old[:], b[8+evdev.FFEffectSize:])
	return u, nil
}

// EndUpload answers upload u: errno 0 accepts it, a positive errno
// (ENODEV, EINVAL ...) is what the reader's EVIOCSFF fails with.
func (d *Device) EndUpload(u Upload, errno int32) error {
	var b [ffUploadSize]byte
	binary.NativeEndian.PutUint32(b[0:], u.RequestID)
	binary.NativeEndian.PutUint32(b[4:], uint32(-errno))
	copy(b[8:], u.Effect[:])
	copy(b[8+evdev.FFEffectSize:], u.Old[:])
	if err := d.ioctl(ioctlEndFFUpload, unsafe.Pointer(&b[0])); err != nil {
		return fmt.Errorf("uinput: UI_END_FF_UPLOAD %d: %w", u.RequestID, err)
	}
	return nil
}

// BeginErase fetches erase request id (UI_BEGIN_FF_ERASE).
func (d *Device) BeginErase(id uint32) (Erase, error) {
	var b [ffEraseSize]byte
	binary.NativeEndian.PutUint32(b[0:], id)
	if err := d.ioctl(ioctlBeginFFErase, unsafe.Pointer(&b[0])); err != nil {
		return Erase{}, fmt.Errorf("uinput: UI_BEGIN_FF_ERASE %d: %w", id, err)
	}
	return Erase{RequestID: id, EffectID: int16(binary.NativeEndian.Uint32(b[8:]))}, nil
}

// EndErase answers erase e with errno (0 for done).
func (d *Device) EndErase(e Erase, errno int32) error {
	var b [ffEraseSize]byte
	binary.NativeEndian.PutUint32(b[0:], e.RequestID)
	binary.NativeEndian.PutUint32(b[4:], uint32(-errno))
	binary.NativeEndian.PutUint32(b[8:], uint32(int32(e.EffectID)))
	if err := d.ioctl(ioctlEndFFErase, unsafe.Pointer(&b[0])); err != nil {
		return fmt.Errorf("uinput: UI_END_FF_ERASE %d: %w", e.RequestID, err)
	}
	return nil
}
