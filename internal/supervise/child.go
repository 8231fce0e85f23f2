// SPDX-License-Identifier: Apache-2.0

package supervise

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	// Dir is the child's working directory; empty keeps this process's.
	Dir string
	// OutliveParent leaves out the parent-death signal, so the child
	// lives on when the thread that started it ends. A process that
	// starts a daemon and then execs another program in its place sets
	// it: the exec ends every other thread, the forking one among them,
	// and the signal would kill the daemon it meant to keep.
	OutliveParent bool
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
// it only through the supervisor's forwarding, never twice; and, unless
// OutliveParent is set, the kernel kills it (SIGKILL, PR_SET_PDEATHSIG in
// prctl(2)) if the process that started it dies, so a supervisor killed
// outright leaves no daemon behind.
func Start(c Command) (*Child, error) {
	if !filepath.IsAbs(c.Path) {
		return nil, fmt.Errorf("supervise: program path %q is not absolute", c.Path)
	}
	cmd := &exec.Cmd{
		Path:   c.Path,
		Args:   append([]string{c.Path}, c.Args...),
		Env:    c.Env,
		Dir:    c.Dir,
		Stdout: c.Stdout,
		Stderr: c.Stderr,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid: true,
		},
	}
	ch := &Child{cmd: cmd, done: make(chan struct{})}
	// Wait's error adds nothing to the process state: an exit status
	// other than 0 (the state says which), or a failed copy of output
	// into a writer that is not a file, after the child was reaped.
	reaped := func() {
		ch.status = StatusOf(cmd.ProcessState)
		close(ch.done)
	}
	ch.started = time.Now()
	if c.OutliveParent {
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("supervise: start %s: %w", c.Path, err)
		}
		go func() { _ = cmd.Wait(); reaped() }()
		return ch, nil
	}
	b, err := StartBound(cmd)
	if err != nil {
		return nil, fmt.Errorf("supervise: start %s: %w", c.Path, err)
	}
	go func() { <-b.Done(); reaped() }()
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

// Exited reports whether the child has exited and been reaped.
func (c *Child) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Stop ends the child: SIGTERM to its process group, then, if it has not
// exited within grace, SIGKILL to the group, and waits for the reap. It
// reports whether SIGKILL was needed; a child already reaped is left
// alone (false). The group, because the child is its leader (Start puts
// it in a group of its own) and whatever it started there must end with
// it: a wrapper such as unshare(1) waits for its own child and ignores
// SIGTERM meanwhile.
func (c *Child) Stop(grace time.Duration) (killed bool) {
	if c.Exited() {
		return false
	}
	_ = syscall.Kill(-c.Pid(), syscall.SIGTERM)
	select {
	case <-c.done:
		return false
	case <-time.After(grace):
	}
	_ = syscall.Kill(-c.Pid(), syscall.SIGKILL)
	<-c.done
	return true
}
