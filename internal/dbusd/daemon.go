// SPDX-License-Identifier: Apache-2.0

package dbusd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/liken-sh/operators/internal/supervise"
	"github.com/liken-sh/operators/internal/tailbuf"
)

// DefaultReadyTimeout bounds the wait for a new bus to accept a client.
// The reference entrypoint waits 10 s; a healthy daemon here answers
// within about 100 ms.
const DefaultReadyTimeout = 10 * time.Second

// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// Options configures Start.
type Options struct {
	// SocketPath is the absolute path the bus listens on. Its directory
	// must exist. A stale socket there is replaced; any other kind of
	// file is an error and is left alone.
	SocketPath string
	// Policy is the bus's security policy; the zero value is
	// PolicySystem.
	Policy Policy
	// KeepUser keeps the daemon running as the calling user instead of
	// dropping to SystemConfig's messagebus user. Tests set it: a
	// process whose credentials change loses its parent-death signal
	// (prctl(2), PR_SET_PDEATHSIG), so a dropped daemon would outlive a
	// test binary that dies. PolicyOpen always keeps the user.
	KeepUser bool
	// Binary is the dbus-daemon to run; empty means "dbus-daemon" from
	// PATH.
	Binary string
	// Stdout and Stderr receive the daemon's output. An *os.File is
	// handed to the daemon as it is, which a caller that will exec must
	// use: any other writer is fed by a goroutine that exec ends. Nil
	// Stderr is kept in memory and its end is quoted in start errors;
	// nil Stdout is discarded.
	Stdout, Stderr io.Writer
	// ReadyTimeout bounds the wait for the bus to accept a client; zero
	// means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// DieWithParent has the kernel kill the daemon when the caller dies
	// (PR_SET_PDEATHSIG, SIGKILL). Set it in tests, never before exec.
	DieWithParent bool
}

// Daemon is a running dbus-daemon started by Start.
type Daemon struct {
	socketPath string
	configPath string // generated configuration, removed by Stop
	child      *supervise.Child
	stderr     *tailbuf.Buffer // nil when the caller took stderr

	stopOnce sync.Once
	stopErr  error
}

// Start runs dbus-daemon in the foreground (--nofork, --nopidfile) on
// opts.SocketPath and returns once a client has connected and said Hello,
// or with an error naming what failed: bad options, a non-socket file in
// the way, a daemon that exited (with its exit status and the end of its
// output), or no answer within ReadyTimeout. On error nothing is left
// running.
func Start(ctx context.Context, opts Options) (*Daemon, error) {
	if !filepath.IsAbs(opts.SocketPath) {
		return nil, fmt.Errorf("dbusd: socket path %q is not absolute", opts.SocketPath)
	}
	if len(opts.SocketPath) > MaxSocketPath {
		return nil, fmt.Errorf("dbusd: socket path %q is %d bytes, longer than a unix socket's %d", opts.SocketPath, len(opts.SocketPath), MaxSocketPath)
	}
	if err := clearStaleSocket(opts.SocketPath); err != nil {
		return nil, err
	}
	d := &Daemon{socketPath: opts.SocketPath}
	args := []string{"--nofork", "--nopidfile", "--address=" + Address(opts.SocketPath)}
	conf, err := configFor(opts)
	if err != nil {
		return nil, err
	}
	if conf == nil {
		args = append(args, "--system")
	} else {
		if d.configPath, err = writeConfig(filepath.Dir(opts.SocketPath), conf); err != nil {
			return nil, err
		}
		args = append(args, "--config-file="+d.configPath)
	}
	bin := opts.Binary
	if bin == "" {
		bin = "dbus-daemon"
	}
	cmd := supervise.Command{Args: args, Stdout: opts.Stdout, Stderr: opts.Stderr, OutliveParent: !opts.DieWithParent}
	if opts.Stderr == nil {
		d.stderr = tailbuf.New(4096)
		cmd.Stderr = d.stderr
	}
	// PATH chooses which dbus-daemon runs when Binary names none;
	// supervise runs only absolute paths.
	if cmd.Path, err = exec.LookPath(bin); err == nil {
		if cmd.Path, err = filepath.Abs(cmd.Path); err == nil {
			d.child, err = supervise.Start(cmd)
		}
	}
	if err != nil {
		d.removeFiles() //nolint:errcheck // best effort on a start that already failed, whose error is returned
		return nil, fmt.Errorf("dbusd: start %s: %w", bin, err)
	}
	timeout := opts.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	if err := WaitReady(ctx, opts.SocketPath, timeout, d.child.Done()); err != nil {
		exitedFirst := errors.Is(err, ErrExited)
		d.Stop()
		if exitedFirst {
			err = fmt.Errorf("%w: %v", err, d.child.Status())
		}
		if d.stderr != nil && d.stderr.Len() > 0 {
			err = fmt.Errorf("%w\ndbus-daemon output:\n%s", err, d.stderr.String())
		}
		return nil, err
	}
	return d, nil
}

// clearStaleSocket removes a socket left at path by an earlier daemon, so
// that the readiness wait cannot mistake it for the new one. Any other
// kind of file is not ours to remove.
func clearStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("dbusd: inspect %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("dbusd: %s exists and is not a socket (%v); not replacing it", path, fi.Mode().Type())
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("dbusd: remove stale socket %s: %w", path, err)
	}
	return nil
}

// SocketPath returns the path the daemon listens on.
func (d *Daemon) SocketPath() string { return d.socketPath }

// Address returns the daemon's unix:path= address, for
// DBUS_SYSTEM_BUS_ADDRESS or godbus's Connect.
func (d *Daemon) Address() string { return Address(d.socketPath) }

// Pid returns the daemon's process ID.
func (d *Daemon) Pid() int { return d.child.Pid() }

// Done is closed once the daemon has exited and been reaped.
func (d *Daemon) Done() <-chan struct{} { return d.child.Done() }

// Err returns the daemon's exit error (nil for exit status 0) once Done is
// closed, and nil before.
func (d *Daemon) Err() error { return d.child.Status().Err() }

// Stop sends SIGTERM, waits up to 5 s, then SIGKILL, and removes the
// socket file (a daemon that dropped to messagebus cannot unlink it from a
// root-owned directory) and any generated configuration. It returns an
// error only if a file could not be removed; stopping twice is harmless.
func (d *Daemon) Stop() error {
	d.stopOnce.Do(func() {
		d.child.Stop(stopGrace)
		d.stopErr = d.removeFiles()
	})
	return d.stopErr
}

// removeFiles removes the socket (only if it still is one) and the
// generated configuration.
func (d *Daemon) removeFiles() error {
	var errs []error
	if fi, err := os.Lstat(d.socketPath); err == nil && fi.Mode().Type() == fs.ModeSocket {
		if err := os.Remove(d.socketPath); err != nil {
			errs = append(errs, err)
		}
	}
	if d.configPath != "" {
		if err := os.Remove(d.configPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
