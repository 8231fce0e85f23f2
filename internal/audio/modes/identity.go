// SPDX-License-Identifier: Apache-2.0

package modes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// pipeWireIdentity tells one PipeWire's socket from the next one bound at
// the same path: the device and inode of the socket file, and its change
// time, because a file system may give a new file an inode just freed.
type pipeWireIdentity struct {
	dev, ino uint64
	ctime    unix.Timespec
}

func (id pipeWireIdentity) String() string {
	return fmt.Sprintf("inode %d on device %d, changed %d.%09d", id.ino, id.dev, id.ctime.Sec, id.ctime.Nsec)
}

// Bounds of the connection that identifies a PipeWire.
const (
	connectTimeout = time.Second
	// holdFor is how long a connection to the PipeWire that was already
	// known must stay open before it counts as serving. A PipeWire that
	// is shutting down drops its clients before it closes its listening
	// socket, so WirePlumber can exit while a connect to the old socket
	// still succeeds; that PipeWire then closes the held connection.
	holdFor = 500 * time.Millisecond
	// Retry pacing of the wait for a PipeWire: 100 ms, doubling, at most
	// 2 s apart.
	retryFirst = 100 * time.Millisecond
	retryMax   = 2 * time.Second
)

// connectPipeWire connects to the socket at path and, once connected,
// reads its identity, so the identity is that of a socket that accepts.
// The caller closes the connection.
func connectPipeWire(ctx context.Context, path string) (*net.UnixConn, pipeWireIdentity, error) {
	d := net.Dialer{Timeout: connectTimeout}
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, pipeWireIdentity{}, err
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		c.Close()
		return nil, pipeWireIdentity{}, fmt.Errorf("stat %s: %w", path, err)
	}
	return c.(*net.UnixConn), pipeWireIdentity{dev: st.Dev, ino: st.Ino, ctime: st.Ctim}, nil
}

// currentPipeWire returns the identity of the PipeWire serving at path
// now, or false when none accepts a connection.
func currentPipeWire(ctx context.Context, path string) (pipeWireIdentity, bool) {
	c, id, err := connectPipeWire(ctx, path)
	if err != nil {
		return pipeWireIdentity{}, false
	}
	c.Close()
	return id, true
}

// stillServing reports whether the server keeps c open for d: a read
// that ends in anything but its deadline (end of file, a reset) means
// the server closed it.
func stillServing(c *net.UnixConn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 512)
	for {
		if _, err := c.Read(buf); err != nil {
			var ne net.Error
			return errors.As(err, &ne) && ne.Timeout()
		}
	}
}

// pipeWireWait is how a wait for PipeWire ended.
type pipeWireWait int

const (
	// noPipeWire: none accepted a connection before the limit, or the
	// wait was called off.
	noPipeWire pipeWireWait = iota
	// samePipeWire: the known PipeWire is serving.
	samePipeWire
	// newPipeWire: another PipeWire than the known one is serving.
	newPipeWire
)

func (w pipeWireWait) String() string {
	switch w {
	case noPipeWire:
		return "no PipeWire"
	case samePipeWire:
		return "the same PipeWire"
	case newPipeWire:
		return "a new PipeWire"
	}
	return fmt.Sprintf("pipeWireWait(%d)", int(w))
}

// nextPipeWire waits, up to limit, for a PipeWire at path that accepts a
// connection, and tells whether it is the known one (when knownOK; with
// none known any PipeWire is new). The known one counts only once it keeps
// a connection open for holdFor; until then the wait goes on. It returns
// noPipeWire when limit passes or ctx ends first.
func nextPipeWire(ctx context.Context, path string, known pipeWireIdentity, knownOK bool, limit time.Duration) (pipeWireIdentity, pipeWireWait) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	delay := retryFirst
	for {
		c, id, err := connectPipeWire(ctx, path)
		if err == nil {
			if !knownOK || id != known {
				c.Close()
				return id, newPipeWire
			}
			serving := stillServing(c, holdFor)
			c.Close()
			if serving {
				return id, samePipeWire
			}
		}
		select {
		case <-ctx.Done():
			return pipeWireIdentity{}, noPipeWire
		case <-time.After(delay):
		}
		delay = min(2*delay, retryMax)
	}
}
