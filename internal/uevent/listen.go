// SPDX-License-Identifier: Apache-2.0

package uevent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// KernelGroup is the netlink multicast group on which the kernel broadcasts
// uevents (UEVENT group 1 in lib/kobject_uevent.c). udev's group is 2.
const KernelGroup = 1

// DefaultReceiveBuffer is the SO_RCVBUF size, in bytes, that Listen asks for
// when Options.ReceiveBuffer is zero. The kernel caps the request at
// net.core.rmem_max (and doubles it for bookkeeping); SO_RCVBUFFORCE, which
// passes that cap, needs CAP_NET_ADMIN and is not used, because the operator
// runs with no capability.
const DefaultReceiveBuffer = 4 << 20

// ErrOverflow is reported on Listener.Errors when the kernel dropped
// broadcasts because the socket's receive queue was full (recvmsg returned
// ENOBUFS). Which events were lost is unknown: the caller must rescan the
// state it derives from events. Listening goes on after it.
var ErrOverflow = errors.New("uevent: kernel receive queue overflowed (ENOBUFS), events were lost; rescan")

// ErrNotKernel is wrapped by the error reported for a datagram whose sender
// is not the kernel (netlink port id other than 0); such a datagram is
// dropped.
var ErrNotKernel = errors.New("uevent: datagram not sent by the kernel")

// Options tunes Listen.
type Options struct {
	// ReceiveBuffer is the SO_RCVBUF size to request, in bytes; zero means
	// DefaultReceiveBuffer. Listener.ReceiveBuffer reports what the kernel
	// granted.
	ReceiveBuffer int
}

// Listener receives kernel uevents until its context ends or its socket
// fails. Events and Errors are closed together when it stops; Err then tells
// why.
type Listener struct {
	events chan Event
	errs   chan error
	done   chan struct{}
	rcvbuf int

	mu  sync.Mutex
	err error
}

// Listen opens a NETLINK_KOBJECT_UEVENT socket bound to KernelGroup, sets its
// receive buffer, and starts reading it in a goroutine until ctx ends. It
// returns an error, and starts nothing, when the socket cannot be opened,
// bound or configured (e.g. EPERM outside the initial user namespace on some
// kernels, or no netlink support).
//
// Each well-formed kernel event is sent on Events, in the kernel's order.
// Non-fatal problems are sent on Errors and reading goes on: ErrOverflow when
// events were lost, a *ParseError (ErrMalformed) or ErrLibudev for a datagram
// that is not a kernel event, and ErrNotKernel for one from another sender.
// Sends block until the caller receives, so the caller must drain both
// channels; while it does not, the kernel's queue fills and the next read
// reports ErrOverflow.
func Listen(ctx context.Context, opts Options) (*Listener, error) {
	want := opts.ReceiveBuffer
	if want == 0 {
		want = DefaultReceiveBuffer
	}
	if want < 0 {
		return nil, fmt.Errorf("uevent: receive buffer of %d bytes is negative", want)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_KOBJECT_UEVENT)
	if err != nil {
		return nil, fmt.Errorf("uevent: open NETLINK_KOBJECT_UEVENT socket: %w", err)
	}
	fail := func(what string, err error) (*Listener, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("uevent: %s: %w", what, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, want); err != nil {
		return fail(fmt.Sprintf("set SO_RCVBUF to %d bytes", want), err)
	}
	got, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	if err != nil {
		return fail("read SO_RCVBUF", err)
	}
	// Port id 0 lets the kernel pick a unique one for this socket.
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: KernelGroup}); err != nil {
		return fail(fmt.Sprintf("bind netlink group %d", KernelGroup), err)
	}
	// A non-blocking fd becomes a pollable os.File: reads park in the Go
	// runtime's poller, and Close wakes them, which is how ctx stops the
	// reader without a cancel pipe.
	f := os.NewFile(uintptr(fd), "uevent-netlink")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("uevent: socket raw conn: %w", err)
	}
	l := &Listener{
		events: make(chan Event, 16),
		errs:   make(chan error, 4),
		done:   make(chan struct{}),
		rcvbuf: got,
	}
	stop := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-stop:
		}
		f.Close()
	}()
	go func() {
		defer close(l.done)
		defer close(l.errs)
		defer close(l.events)
		defer close(stop)
		err := l.read(ctx, rc)
		if ctx.Err() != nil {
			err = nil // stopped on purpose; the closed file is the means
		}
		l.mu.Lock()
		l.err = err
		l.mu.Unlock()
	}()
	return l, nil
}

// Events returns the channel of received events. It is closed when the
// listener stops.
func (l *Listener) Events() <-chan Event { return l.events }

// Errors returns the channel of non-fatal problems (see Listen). It is
// closed when the listener stops.
func (l *Listener) Errors() <-chan error { return l.errs }

// Done is closed when the listener has stopped and both channels are closed.
func (l *Listener) Done() <-chan struct{} { return l.done }

// Err returns nil while running and after a stop caused by the context, and
// the socket error that stopped the listener otherwise.
func (l *Listener) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// ReceiveBuffer returns the socket's receive buffer size in bytes as the
// kernel reports it (SO_RCVBUF read back: twice the granted request).
func (l *Listener) ReceiveBuffer() int { return l.rcvbuf }

// read receives datagrams until the socket is closed or fails. It returns
// the fatal error.
func (l *Listener) read(ctx context.Context, rc interface {
	Read(func(fd uintptr) bool) error
}) error {
	// One byte more than the largest accepted datagram, so that an
	// oversized one is seen as such (MSG_TRUNC) rather than cut silently.
	buf := make([]byte, MaxDatagramSize+1)
	for {
		var (
			n, flags int
			from     unix.Sockaddr
			rerr     error
		)
		err := rc.Read(func(fd uintptr) bool {
			for {
				n, _, flags, from, rerr = unix.Recvmsg(int(fd), buf, nil, 0)
				if rerr != unix.EINTR {
					break
				}
			}
			return rerr != unix.EAGAIN
		})
		if err != nil {
			return fmt.Errorf("uevent: wait for socket: %w", err)
		}
		var report error
		switch {
		case rerr == unix.ENOBUFS:
			report = ErrOverflow
		case rerr != nil:
			return fmt.Errorf("uevent: recvmsg: %w", rerr)
		case flags&unix.MSG_TRUNC != 0:
			report = malformed(MaxDatagramSize, "datagram exceeds the %d-byte limit (truncated by recvmsg)", MaxDatagramSize)
		default:
			if sa, ok := from.(*unix.SockaddrNetlink); !ok || sa.Pid != 0 {
				report = fmt.Errorf("%w: sender %v", ErrNotKernel, describe(from))
				break
			}
			ev, perr := Parse(buf[:n])
			if perr != nil {
				report = perr
				break
			}
			select {
			case l.events <- ev:
			case <-ctx.Done():
				return nil
			}
			continue
		}
		select {
		case l.errs <- report:
		case <-ctx.Done():
			return nil
		}
	}
}

func describe(sa unix.Sockaddr) string {
	if nl, ok := sa.(*unix.SockaddrNetlink); ok {
		return fmt.Sprintf("netlink port %d", nl.Pid)
	}
	return fmt.Sprintf("%T", sa)
}
