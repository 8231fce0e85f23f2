// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64 || riscv64 || loong64 || s390x)

package alsa

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// HWControl is the kernel's control interface of one card, driven with
// ioctls on its /dev/snd/controlC<N> node through x/sys/unix: no alsa-lib,
// no cgo. It is built for 64-bit Linux with the generic ioctl encoding
// (the structures hold C longs).
type HWControl struct {
	f        *os.File
	rc       syscall.RawConn
	path     string
	readOnly bool
	protocol uint32
}

// OpenControl opens a control node such as /dev/snd/controlC0. It opens
// read-write and falls back to read-only when the node (or the container's
// device rules) refuse writing; ReadOnly says which. The descriptor is
// non-blocking and close-on-exec and sits in Go's poller, so ReadEvents
// parks no thread and Close ends it. A node that does not answer the
// control protocol's version query is refused ("not an ALSA control node"),
// wrapping the errno (ENOTTY for an ordinary file or another device).
func OpenControl(path string) (*HWControl, error) {
	const flags = unix.O_NONBLOCK | unix.O_CLOEXEC
	readOnly := false
	fd, err := unix.Open(path, unix.O_RDWR|flags, 0)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS) {
		readOnly = true
		fd, err = unix.Open(path, unix.O_RDONLY|flags, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("open ALSA control node %s: %w", path, err)
	}
	h, err := newHWControl(os.NewFile(uintptr(fd), path), readOnly)
	if err != nil {
		return nil, fmt.Errorf("open ALSA control node %s: %w", path, err)
	}
	var v int32
	if err := h.ioctl(ioctlPVersion, unsafe.Pointer(&v)); err != nil {
		h.f.Close()
		return nil, fmt.Errorf("%s is not an ALSA control node (SNDRV_CTL_IOCTL_PVERSION): %w", path, err)
	}
	h.protocol = uint32(v)
	return h, nil
}

func newHWControl(f *os.File, readOnly bool) (*HWControl, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &HWControl{f: f, rc: rc, path: f.Name(), readOnly: readOnly}, nil
}

// Path is the node this handle opened.
func (h *HWControl) Path() string { return h.path }

// ReadOnly reports whether the node was opened read-only.
func (h *HWControl) ReadOnly() bool { return h.readOnly }

// Protocol is the control protocol version the kernel reported, as
// major, minor and subminor (2.0.8 on 6.x kernels).
func (h *HWControl) Protocol() (major, minor, sub int) {
	return int(h.protocol >> 16 & 0xff), int(h.protocol >> 8 & 0xff), int(h.protocol & 0xff)
}

// ioctl runs one ioctl on the descriptor, retrying EINTR.
func (h *HWControl) ioctl(req uintptr, arg unsafe.Pointer) error {
	var errno unix.Errno
	err := h.rc.Control(func(fd uintptr) {
		for {
			_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, req, uintptr(arg))
			if errno != unix.EINTR {
				return
			}
		}
	})
	if err != nil {
		// RawConn.Control fails only for a closed file.
		return fmt.Errorf("%w (%v)", os.ErrClosed, err)
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// CardInfo implements Control.
func (h *HWControl) CardInfo() (CardInfo, error) {
	var c ctlCardInfo
	if err := h.ioctl(ioctlCardInfo, unsafe.Pointer(&c)); err != nil {
		return CardInfo{}, fmt.Errorf("%s: CARD_INFO: %w", h.path, err)
	}
	return decodeCardInfo(&c), nil
}

// Elements implements Control: one call for the count, one for the ids,
// again if elements were added in between.
func (h *HWControl) Elements() ([]ElemID, error) {
	for range 4 {
		var l ctlElemList
		if err := h.ioctl(ioctlElemList, unsafe.Pointer(&l)); err != nil {
			return nil, fmt.Errorf("%s: ELEM_LIST: %w", h.path, err)
		}
		if l.count == 0 {
			return nil, nil
		}
		ids := make([]ctlElemID, l.count)
		l = ctlElemList{space: uint32(len(ids)), pids: &ids[0]}
		err := h.ioctl(ioctlElemList, unsafe.Pointer(&l))
		runtime.KeepAlive(ids)
		if err != nil {
			return nil, fmt.Errorf("%s: ELEM_LIST: %w", h.path, err)
		}
		if l.used < l.count {
			continue
		}
		out := make([]ElemID, l.used)
		for i := range out {
			out[i] = ids[i].toID()
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: ELEM_LIST: the element list kept growing", h.path)
}

// MaxEnumItems bounds the item names of one ENUMERATED element: the
// ioctl backend reads at most this many, and a dump may hold no more.
const MaxEnumItems = 4096

func (h *HWControl) elemInfo(id ElemID, withItems bool) (ElemInfo, error) {
	c := ctlElemInfo{id: fromID(id)}
	if err := h.ioctl(ioctlElemInfo, unsafe.Pointer(&c)); err != nil {
		return ElemInfo{}, fmt.Errorf("%s: ELEM_INFO %s: %w", h.path, id, err)
	}
	info := decodeElemInfo(&c)
	if info.Type != TypeEnumerated || !withItems {
		return info, nil
	}
	n := enumItems(&c)
	if n > MaxEnumItems {
		return ElemInfo{}, fmt.Errorf("%s: ELEM_INFO %s: %d enumerated items (at most %d read)", h.path, info.ID, n, MaxEnumItems)
	}
	for i := range n {
		q := ctlElemInfo{id: fromID(ElemID{NumID: info.ID.NumID})}
		setEnumItem(&q, i)
		if err := h.ioctl(ioctlElemInfo, unsafe.Pointer(&q)); err != nil {
			return ElemInfo{}, fmt.Errorf("%s: ELEM_INFO %s item %d: %w", h.path, info.ID, i, err)
		}
		info.Items = append(info.Items, enumItemName(&q))
	}
	return info, nil
}

// ElemInfo implements Control; an ENUMERATED element's item names cost
// one more ioctl each.
func (h *HWControl) ElemInfo(id ElemID) (ElemInfo, error) { return h.elemInfo(id, true) }

// Read implements Control.
func (h *HWControl) Read(id ElemID) (Value, error) {
	info, err := h.elemInfo(id, false)
	if err != nil {
		return Value{}, err
	}
	c := ctlElemValue{id: fromID(info.ID)}
	if err := h.ioctl(ioctlElemRead, unsafe.Pointer(&c)); err != nil {
		return Value{}, fmt.Errorf("%s: ELEM_READ %s: %w", h.path, info.ID, err)
	}
	v, err := decodeValue(info.Type, info.Count, &c.value)
	if err != nil {
		return Value{}, fmt.Errorf("%s: ELEM_READ %s: %w", h.path, info.ID, err)
	}
	return v, nil
}

// Write implements Control.
func (h *HWControl) Write(id ElemID, v Value) error {
	info, err := h.elemInfo(id, false)
	if err != nil {
		return err
	}
	c := ctlElemValue{id: fromID(info.ID)}
	if err := encodeValue(v, info.Type, info.Count, &c.value); err != nil {
		return fmt.Errorf("%s: ELEM_WRITE %s: %w", h.path, info.ID, err)
	}
	if err := h.ioctl(ioctlElemWrite, unsafe.Pointer(&c)); err != nil {
		return fmt.Errorf("%s: ELEM_WRITE %s: %w", h.path, info.ID, err)
	}
	return nil
}

// TLV implements Control. The buffer starts at 4 KiB and grows once to
// 64 KiB if the kernel answers ENOMEM (data larger than the buffer).
func (h *HWControl) TLV(id ElemID) ([]uint32, error) {
	if id.NumID == 0 {
		info, err := h.elemInfo(id, false)
		if err != nil {
			return nil, err
		}
		id = info.ID
	}
	for _, size := range []int{4096, 65536} {
		buf := make([]byte, 8+size)
		binary.NativeEndian.PutUint32(buf[0:], id.NumID)
		binary.NativeEndian.PutUint32(buf[4:], uint32(size))
		err := h.ioctl(ioctlTLVRead, unsafe.Pointer(&buf[0]))
		if errors.Is(err, unix.ENOMEM) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: TLV_READ %s: %w", h.path, id, err)
		}
		words, err := tlvWords(buf[8:])
		if err != nil {
			return nil, fmt.Errorf("%s: TLV_READ %s: %w", h.path, id, err)
		}
		return words, nil
	}
	return nil, fmt.Errorf("%s: TLV_READ %s: more than 64 KiB", h.path, id)
}

// tlvWords cuts the outermost TLV (type, length, payload) out of a buffer.
func tlvWords(b []byte) ([]uint32, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("TLV of %d bytes has no header", len(b))
	}
	length := binary.NativeEndian.Uint32(b[4:])
	if length%4 != 0 || uint64(length)+8 > uint64(len(b)) {
		return nil, fmt.Errorf("TLV length %d does not fit %d bytes", length, len(b))
	}
	words := make([]uint32, 2+length/4)
	for i := range words {
		words[i] = binary.NativeEndian.Uint32(b[4*i:])
	}
	return words, nil
}

// NextPCMDevice implements Control.
func (h *HWControl) NextPCMDevice(after int) (int, error) {
	dev := int32(after)
	if err := h.ioctl(ioctlPCMNextDevice, unsafe.Pointer(&dev)); err != nil {
		return -1, fmt.Errorf("%s: PCM_NEXT_DEVICE after %d: %w", h.path, after, err)
	}
	return int(dev), nil
}

// PCMInfo implements Control.
func (h *HWControl) PCMInfo(device, subdevice int, stream Stream) (PCMInfo, error) {
	p := pcmInfo{device: uint32(device), subdevice: uint32(subdevice), stream: int32(stream)}
	if err := h.ioctl(ioctlPCMInfo, unsafe.Pointer(&p)); err != nil {
		return PCMInfo{}, fmt.Errorf("%s: PCM_INFO device %d subdevice %d %s: %w", h.path, device, subdevice, stream, err)
	}
	return decodePCMInfo(&p), nil
}

// Subscribe implements Control.
func (h *HWControl) Subscribe() error {
	on := int32(1)
	if err := h.ioctl(ioctlSubscribe, unsafe.Pointer(&on)); err != nil {
		return fmt.Errorf("%s: SUBSCRIBE_EVENTS: %w", h.path, err)
	}
	return nil
}

// ReadEvents implements Control: one read() of up to 32 records.
func (h *HWControl) ReadEvents() ([]Event, error) {
	buf := make([]byte, 32*ctlEventSize)
	n, err := h.f.Read(buf)
	if err != nil {
		return nil, fmt.Errorf("%s: read events: %w", h.path, err)
	}
	return ParseEvents(buf[:n])
}

// Close implements Control.
func (h *HWControl) Close() error { return h.f.Close() }
