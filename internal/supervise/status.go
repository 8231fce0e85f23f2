// SPDX-License-Identifier: Apache-2.0

package supervise

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Status is how a child process ended: exactly one of Code (it called
// exit) or Signal (a signal killed it) is meaningful.
type Status struct {
	// Code is the exit code, 0 to 255, when Signal is 0.
	Code int
	// Signal is the signal that killed the process, or 0 when it exited.
	Signal syscall.Signal
}

// StatusOf reads the Status out of a reaped process's state. A state
// whose wait status is not a Unix one (never on Linux) reads as exit code
// ps.ExitCode().
func StatusOf(ps *os.ProcessState) Status {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Status{Signal: ws.Signal()}
	}
	return Status{Code: ps.ExitCode()}
}

// ExitCode is the status a first process exits with to pass this one on:
// Code, or 128 plus the signal number (the shell's convention, which the
// kubelet reports unchanged as the container's exit code).
func (s Status) ExitCode() int {
	if s.Signal != 0 {
		return 128 + int(s.Signal)
	}
	return s.Code
}

// String reads as "exit status 3" or "killed by signal 9 (killed)".
func (s Status) String() string {
	if s.Signal != 0 {
		return fmt.Sprintf("killed by signal %d (%v)", int(s.Signal), s.Signal)
	}
	return fmt.Sprintf("exit status %d", s.Code)
}

// Err is nil for exit code 0 and otherwise an error that reads as String.
func (s Status) Err() error {
	if s == (Status{}) {
		return nil
	}
	return errors.New(s.String())
}
