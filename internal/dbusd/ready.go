// SPDX-License-Identifier: Apache-2.0

package dbusd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"time"

	"github.com/godbus/dbus/v5"
)

// pollInterval is the pause between readiness probes.
const pollInterval = 20 * time.Millisecond

// probeTimeout bounds one connection attempt, so that a daemon that
// accepts but never answers cannot hold the wait past its bound.
const probeTimeout = 2 * time.Second

// ErrNotReady is wrapped by WaitReady's error when the bound passes.
var ErrNotReady = errors.New("bus did not accept a client in time")

// ErrExited is wrapped by WaitReady's error when the daemon exits first.
var ErrExited = errors.New("dbus-daemon exited before its bus accepted a client")

// WaitReady polls until socketPath is a unix socket on which a client
// completes authentication and Hello, or until timeout passes (ErrNotReady,
// naming what was last seen), ctx ends (its error), or exited is closed
// (ErrExited). exited may be nil when the daemon is not a child.
func WaitReady(ctx context.Context, socketPath string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var last error
	for {
		if last = probe(socketPath); last == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("dbusd: %s: %w", socketPath, ErrExited)
		case <-ctx.Done():
			return fmt.Errorf("dbusd: waiting for %s: %w", socketPath, ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("dbusd: %s after %v: %w; last probe: %v", socketPath, timeout, ErrNotReady, last)
		case <-tick.C:
		}
	}
}

// probe connects once and says Hello.
func probe(socketPath string) error {
	fi, err := os.Lstat(socketPath)
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s is not a socket (%v)", socketPath, fi.Mode().Type())
	}
	raw, err := net.DialTimeout("unix", socketPath, probeTimeout)
	if err != nil {
		return err
	}
	uc := raw.(*net.UnixConn)
	_ = uc.SetDeadline(time.Now().Add(probeTimeout))
	conn, err := dbus.ConnectUnix(uc)
	if err != nil {
		uc.Close()
		return fmt.Errorf("connect: %w", err)
	}
	return conn.Close()
}
