// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/liken-sh/operators/test/child"
)

// tailLines is how much of a component's log goes into an error.
const tailLines = 20

// process is one running control-plane component.
type process struct {
	name string
	*child.Process
}

// startProcess starts bin with args in dir, stdout and stderr written to
// dir/<name>.log (truncated, so a retry starts a clean log). The child
// dies with the test binary even when a test panics or times out and no
// cleanup runs, and runs in its own process group, so a Ctrl-C at the
// terminal reaches only the parent, which then stops the components in
// order (see child.StartIn).
func startProcess(dir, name, bin string, args []string) (*process, error) {
	p, err := child.StartIn(dir, filepath.Join(dir, name+".log"), nil, bin, args...)
	if err != nil {
		return nil, fmt.Errorf("harness: start %s: %w", name, err)
	}
	return &process{name: name, Process: p}, nil
}

// logContains reports whether the process's log mentions s.
func (p *process) logContains(s string) bool {
	return strings.Contains(p.Log(), s)
}

// componentError wraps err with the component's name and the end of its log.
func (p *process) componentError(err error) error {
	return &ComponentError{Component: p.name, LogPath: p.LogPath, LogTail: child.Tail(p.LogPath, tailLines), Err: err}
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
