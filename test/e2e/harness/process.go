// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// tailLines is how much of a component's log goes into an error.
const tailLines = 20

// process is one running control-plane component.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has been reaped
	waitErr error         // valid after done is closed
}

// startProcess starts bin with args, stdout and stderr written to
// dir/<name>.log (truncated, so a retry starts a clean log).
//
// Every child gets Pdeathsig=SIGKILL so it dies with the test binary even
// when a test panics or times out and no cleanup runs. The kernel sends
// that signal when the *thread* that forked the child exits, not the
// process, and the Go runtime may retire threads. So the fork happens on a
// goroutine locked to its thread, and that goroutine stays there, waiting
// for the child, for as long as the child lives.
func startProcess(dir, name, bin string, args []string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Pdeathsig: syscall.SIGKILL,
		// Its own process group, so a Ctrl-C at the terminal reaches only
		// the parent, which then stops the components in order.
		Setpgid: true,
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		err := cmd.Start()
		logFile.Close() // the child holds its own descriptor
		started <- err
		if err != nil {
			return
		}
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("harness: start %s: %w", name, err)
	}
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to grace for the process to exit, then
// sends SIGKILL and waits for it to be reaped. It reports whether SIGKILL
// was needed.
func (p *process) stop(grace time.Duration) (killed bool) {
	if p.exited() {
		return false
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return false
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return true
}

// tail returns the last n lines of the process's log.
func (p *process) tail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logContains reports whether the process's log mentions s.
func (p *process) logContains(s string) bool {
	data, _ := os.ReadFile(p.logPath)
	return bytes.Contains(data, []byte(s))
}

// componentError wraps err with the component's name and the end of its log.
func (p *process) componentError(err error) error {
	return &ComponentError{Component: p.name, LogPath: p.logPath, LogTail: p.tail(tailLines), Err: err}
}

// ComponentError is returned by [Start] when a component fails to start or
// become healthy. Its message carries the last lines of the component's log.
type ComponentError struct {
	// Component is "etcd", "kube-apiserver", "kube-scheduler" or
	// "kube-controller-manager".
	Component string
	// LogPath is the component's full log file.
	LogPath string
	// LogTail holds the last 20 lines of that log.
	LogTail string
	// Err is the underlying failure: an exit status or a health timeout.
	Err error
}

// Error names the component and the failure, followed by the log tail.
func (e *ComponentError) Error() string {
	return fmt.Sprintf("harness: %s: %v\n--- last %d lines of %s ---\n%s", e.Component, e.Err, tailLines, e.LogPath, e.LogTail)
}

// Unwrap returns Err.
func (e *ComponentError) Unwrap() error { return e.Err }

// errExited is wrapped by health waits when the component exits early.
var errExited = errors.New("exited before becoming healthy")
