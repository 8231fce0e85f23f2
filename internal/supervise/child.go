// SPDX-License-Identifier: Apache-2.0

package supervise

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// Command is the program a Child runs.
type Command struct {
	// Path is the program's absolute path. There is no PATH lookup: the
	// image decides which binary runs, not the environment.
	Path string
	// Args are the arguments after the program's name.
	Args []string
	// Env is the child's whole environment, KEY=VALUE entries; nil
	// inherits this process's environment.
	Env []string
	// Stdout and Stderr receive the child's output; nil discards it. An
	// *os.File (os.Stdout, a log file) is handed to the child as it is,
	// so its output never passes through this process.
	Stdout, Stderr io.Writer
}

// Child is one started process of a Command.
type Child struct {
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{} // closed once the child is reaped
	status  Status        // valid after done
}

// Start starts c and reaps it in the background. It fails, starting
// nothing, when Path is not absolute or the program cannot be executed
// (the error names the path).
//
// The child runs in its own process group, so a terminal's Ctrl-C reaches
// it only through the supervisor's forwarding, never twice; and the kernel
// kills it (SIGKILL, PR_SET_PDEATHSIG in prctl(2)) if the process that
// started it dies, so a supervisor killed outright leaves no daemon behind.
func Start(c Command) (*Child, error) {
	if !filepath.IsAbs(c.Path) {
		return nil, fmt.Errorf("supervise: program path %q is not absolute", c.Path)
	}
	cmd := &exec.Cmd{
		Path:   c.Path,
		Args:   append([]string{c.Path}, c.Args...),
		Env:    c.Env,
		Stdout: c.Stdout,
		Stderr: c.Stderr,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: syscall.SIGKILL,
		},
	}
	ch := &Child{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	// The parent-death signal fires when the thread that forked exits,
	// not the process, so the fork happens on a thread that stays locked
	// (and alive) until the child is reaped; the goroutine then ends with
	// its thread still locked, which retires the thread.
	go func() {
		runtime.LockOSThread()
		ch.started = time.Now()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		// Wait's error adds nothing to the process state: an exit status
		// other than 0 (the state says which), or a failed copy of output
		// into a writer that is not a file, after the child was reaped.
		_ = cmd.Wait()
		ch.status = StatusOf(cmd.ProcessState)
		close(ch.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("supervise: start %s: %w", c.Path, err)
	}
	return ch, nil
}

// Pid is the child's process ID.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Started is the wall-clock time taken just before the child was forked:
// anything the child reads at its start, it read after this moment.
func (c *Child) Started() time.Time { return c.started }

// Done is closed once the child has exited and been reaped.
func (c *Child) Done() <-chan struct{} { return c.done }

// Status is how the child ended; it is the zero Status until Done is
// closed.
func (c *Child) Status() Status {
	select {
	case <-c.done:
		return c.status
	default:
		return Status{}
	}
}

// Signal sends sig to the child. Signalling a child that has already been
// reaped does nothing and returns os.ErrProcessDone.
func (c *Child) Signal(sig os.Signal) error {
	return c.cmd.Process.Signal(sig)
}
