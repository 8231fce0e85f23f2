// SPDX-License-Identifier: Apache-2.0

// Package child starts the daemons tests run beside themselves (PipeWire,
// WirePlumber, the simulated bluetoothd) so that they can never outlive
// the test binary, and stops them.
package child

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Process is one started daemon.
type Process struct {
	cmd *exec.Cmd
	// LogPath is the file holding the process's stdout and stderr.
	LogPath string
	done    chan struct{}
	err     error
}

// Start starts name with args and the complete environment env, stdout and
// stderr to logPath, in a process group of its own. The child dies with the
// test binary (PR_SET_PDEATHSIG): the fork happens on a goroutine locked to
// its thread, which stays until the child is reaped, because the kernel
// sends the signal when the forking thread ends, not the process.
func Start(logPath string, env []string, name string, args ...string) (*Process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p := &Process{cmd: cmd, LogPath: logPath, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		err := cmd.Start()
		logFile.Close()
		started <- err
		if err != nil {
			return
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether Done is closed.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err returns the exit error once Done is closed (nil for status 0).
func (p *Process) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// Stop sends SIGTERM to the process's group, then SIGKILL after 5 s, and
// waits for the reap. The group, because a wrapper such as unshare(1)
// ignores SIGTERM while it waits for its child; the daemon in it must get
// the signal.
func (p *Process) Stop() {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
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
