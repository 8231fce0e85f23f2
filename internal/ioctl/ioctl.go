// SPDX-License-Identifier: Apache-2.0

//go:build linux

// Package ioctl runs ioctl(2) on an *os.File's descriptor while the file
// holds it open (through syscall.RawConn, so a file in Go's poller works
// and a concurrent Close waits), with the pointer becoming a uintptr only
// in the system call's own argument list, as package unsafe requires.
// x/sys/unix has typed wrappers only for the requests it knows; the
// input and uinput requests here are not among them.
package ioctl

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ptr runs request req on f with arg pointing at a buffer of the size the
// request encodes. The error is the errno (ENOTTY, ENODEV ...) or f's.
func Ptr(f *os.File, req uintptr, arg unsafe.Pointer) error {
	return run(f, func(fd uintptr) syscall.Errno {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, req, uintptr(arg))
		return errno
	})
}

// Value runs request req on f with arg passed by value (an int).
func Value(f *os.File, req, arg uintptr) error {
	return run(f, func(fd uintptr) syscall.Errno {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, req, arg)
		return errno
	})
}

func run(f *os.File, call func(fd uintptr) syscall.Errno) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) { errno = call(fd) }); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}
