// SPDX-License-Identifier: Apache-2.0

package hci

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Kernel is the one kernel call this package makes: HCIGETDEVINFO for one
// adapter index. [Socket] is the real one; tests script it.
type Kernel interface {
	// DevInfo returns the kernel's record of adapter id (the N of hciN).
	// An index with no adapter returns an error wrapping ErrNoDevice.
	DevInfo(id uint16) (DevInfo, error)
}

// ErrNoDevice is wrapped by DevInfo errors for an index that has no
// adapter (the kernel's ENODEV).
var ErrNoDevice = errors.New("no such HCI device")

// HCIGETDEVINFO is _IOR('H', 211, int) from include/net/bluetooth/hci_sock.h.
// The size it encodes (4) is not what the kernel copies: hci_get_dev_info
// reads and writes a whole struct hci_dev_info.
const HCIGETDEVINFO = 0x800448d3

// Socket is an unbound AF_BLUETOOTH/BTPROTO_HCI raw socket. An unbound HCI
// socket is on the raw channel, where the kernel's hci_sock_ioctl answers
// HCIGETDEVINFO without any capability check; one socket serves every read.
type Socket struct {
	fd int
}

// OpenSocket opens the socket. Outside the host's network namespace the
// kernel answers EAFNOSUPPORT (so does a kernel without Bluetooth); the
// error says so and wraps the errno.
func OpenSocket() (*Socket, error) {
	fd, err := unix.Socket(unix.AF_BLUETOOTH, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.BTPROTO_HCI)
	if errors.Is(err, unix.EAFNOSUPPORT) {
		return nil, fmt.Errorf("open AF_BLUETOOTH socket: %w (the kernel has no Bluetooth, or this is not the host's network namespace: the pod needs hostNetwork)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("open AF_BLUETOOTH socket: %w", err)
	}
	return &Socket{fd: fd}, nil
}

// DevInfo implements Kernel with the HCIGETDEVINFO ioctl.
func (s *Socket) DevInfo(id uint16) (DevInfo, error) {
	// Room to spare past the 92 bytes the kernel copies today, in case a
	// future kernel grows the structure at its end.
	var buf [128]byte
	binary.NativeEndian.PutUint16(buf[offDevID:], id)
	// x/sys/unix has no exported ioctl taking a buffer, so the raw call.
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(s.fd), HCIGETDEVINFO, uintptr(unsafe.Pointer(&buf[0])))
	switch {
	case errno == unix.ENODEV:
		return DevInfo{}, fmt.Errorf("HCIGETDEVINFO hci%d: %w", id, ErrNoDevice)
	case errno != 0:
		return DevInfo{}, fmt.Errorf("HCIGETDEVINFO hci%d: %w", id, errno)
	}
	return ParseDevInfo(buf[:])
}

// Close closes the socket.
func (s *Socket) Close() error { return unix.Close(s.fd) }
