// SPDX-License-Identifier: Apache-2.0

// Package child starts the processes tests run beside themselves (the
// control plane's components, operators under benchmark, PipeWire,
// WirePlumber, the simulated bluetoothd) so that they can never outlive
// the test binary, and stops them. It is internal/supervise's launcher,
// the product's, with each process's output in a log file that a failing
// test quotes.
package child

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/liken-sh/operators/internal/supervise"
)

// DefaultStopGrace is how long Stop waits after SIGTERM before SIGKILL.
const DefaultStopGrace = 5 * time.Second

// Process is one started process.
type Process struct {
	c *supervise.Child
	// LogPath is the file holding the process's stdout and stderr.
	LogPath string
}

// Start starts name with args and the complete environment env (nil
// inherits the test's), stdout and stderr to logPath (created, or
// truncated so that a retry starts a clean log); see StartIn.
func Start(logPath string, env []string, name string, args ...string) (*Process, error) {
	return StartIn("", logPath, env, name, args...)
}

// StartIn is Start with the working directory dir ("" keeps the test's).
// name is looked up on PATH when it has no slash. The process runs in a
// process group of its own and dies with the test binary
// (PR_SET_PDEATHSIG, see supervise.Start) even when a test panics or times
// out and no cleanup runs. The error names the program.
func StartIn(dir, logPath string, env []string, name string, args ...string) (*Process, error) {
	path, err := exec.LookPath(name)
	if err == nil {
		path, err = filepath.Abs(path)
	}
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	// The child holds its own descriptor of the log.
	defer logFile.Close()
	c, err := supervise.Start(supervise.Command{Path: path, Args: args, Env: env, Dir: dir, Stdout: logFile, Stderr: logFile})
	if err != nil {
		return nil, err
	}
	return &Process{c: c, LogPath: logPath}, nil
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.c.Pid() }

// Started is the time taken just before the process was forked.
func (p *Process) Started() time.Time { return p.c.Started() }

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.c.Done() }

// Exited reports whether Done is closed.
func (p *Process) Exited() bool { return p.c.Exited() }

// Err returns the exit error once Done is closed (nil for status 0, and
// before).
func (p *Process) Err() error { return p.c.Status().Err() }

// Signal sends sig to the process; os.ErrProcessDone once it is reaped.
func (p *Process) Signal(sig syscall.Signal) error { return p.c.Signal(sig) }

// Stop is StopWithin(DefaultStopGrace).
func (p *Process) Stop() { p.StopWithin(DefaultStopGrace) }

// StopWithin sends SIGTERM to the process's group, then SIGKILL after
// grace, and waits for the reap; it reports whether SIGKILL was needed.
// The group, because a wrapper such as unshare(1) ignores SIGTERM while it
// waits for its child; the daemon in it must get the signal.
func (p *Process) StopWithin(grace time.Duration) (killed bool) { return p.c.Stop(grace) }

// Log returns the process's whole log, or why it could not be read.
func (p *Process) Log() string {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return string(data)
}

// Tail returns the last n lines of a file, or why it could not be read.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
