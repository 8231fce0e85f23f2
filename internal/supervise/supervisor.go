// SPDX-License-Identifier: Apache-2.0

package supervise

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// DefaultStopGrace is how long a child being replaced has between SIGTERM
// and SIGKILL. PipeWire and WirePlumber exit within milliseconds of
// SIGTERM; the bound only keeps a hung daemon from holding the
// replacement back for good.
const DefaultStopGrace = 10 * time.Second

// Supervisor keeps one child process of Command and passes its end on.
// Set the fields, then call Run once.
type Supervisor struct {
	// Command is what every start runs.
	Command Command

	// Signals delivers the signals to forward. Each one received is sent
	// on to the running child, and from the first on nothing is started
	// again: Run ends with the status of the child that then exits. The
	// caller subscribes (signal.Notify) before Run, so that no signal
	// falls between the start of the child and the subscription.
	Signals <-chan os.Signal

	// Wake, on each delivery, has Run ask Stale about the running child.
	Wake <-chan struct{}
	// Stale reports whether the running child must be replaced in place:
	// Run sends it SIGTERM once, waits for it (SIGKILL after StopGrace),
	// and starts Command again. It is called on Run's goroutine with the
	// current child only, so a request cannot outlive the child it was
	// about. Nil never replaces.
	Stale func(*Child) bool

	// Again decides, when the child exits on its own (not replaced, no
	// signal forwarded), whether to start Command again (true) or end Run
	// with that child's status (false). It runs on its own goroutine, so
	// signals are still taken meanwhile, and its ctx ends when one
	// arrives or Run's ctx ends; Run then ends with the child's status
	// whatever Again returns. Nil ends Run.
	Again func(ctx context.Context, exited *Child) bool

	// BeforeStart, when set, is called on Run's goroutine just before
	// each start.
	BeforeStart func()
	// Started, when set, is called on Run's goroutine just after each
	// successful start.
	Started func(*Child)

	// StopGrace bounds the wait for a replaced child; zero means
	// DefaultStopGrace.
	StopGrace time.Duration

	// Logf, when set, receives one line per start, replacement, forwarded
	// signal and exit.
	Logf func(format string, args ...any)
}

// Run starts Command and supervises it until it ends for good, and
// returns the exit status to end the process with: the last child's
// Status.ExitCode(), or 1 when a start failed. Run's ctx ending is taken
// as a SIGTERM received.
func (s *Supervisor) Run(ctx context.Context) int {
	name := filepath.Base(s.Command.Path)
	grace := s.StopGrace
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	// stopping ends when the supervisor stops starting children; Again's
	// ctx derives from it.
	stopping, stop := context.WithCancel(context.Background())
	defer stop()

	var (
		child       *Child
		terminating bool
		replacing   bool
		killTimer   *time.Timer
		killC       <-chan time.Time
		deciding    chan bool
		last        Status
	)
	start := func() bool {
		if s.BeforeStart != nil {
			s.BeforeStart()
		}
		c, err := Start(s.Command)
		if err != nil {
			s.logf("%v", err)
			return false
		}
		child = c
		s.logf("started %s (pid %d)", name, c.Pid())
		if s.Started != nil {
			s.Started(c)
		}
		return true
	}
	forward := func(sig os.Signal) {
		terminating = true
		stop()
		if child == nil {
			s.logf("received %v with no %s running", sig, name)
			return
		}
		s.logf("forwarding %v to %s (pid %d)", sig, name, child.Pid())
		_ = child.Signal(sig)
	}

	if !start() {
		return 1
	}
	ctxDone := ctx.Done()
	for {
		var childDone <-chan struct{}
		if child != nil {
			childDone = child.Done()
		}
		select {
		case sig := <-s.Signals:
			forward(sig)

		case <-ctxDone:
			ctxDone = nil
			forward(syscall.SIGTERM)

		case <-s.Wake:
			if child == nil || replacing || terminating || s.Stale == nil || !s.Stale(child) {
				continue
			}
			replacing = true
			s.logf("replacing %s (pid %d) in place: sending SIGTERM", name, child.Pid())
			_ = child.Signal(syscall.SIGTERM)
			killTimer = time.NewTimer(grace)
			killC = killTimer.C

		case <-killC:
			killC = nil
			s.logf("%s (pid %d) still running %v after SIGTERM: sending SIGKILL", name, child.Pid(), grace)
			_ = child.Signal(syscall.SIGKILL)

		case <-childDone:
			if killTimer != nil {
				killTimer.Stop()
				killTimer, killC = nil, nil
			}
			exited := child
			child = nil
			last = exited.Status()
			s.logf("%s (pid %d) ended: %v", name, exited.Pid(), last)
			switch {
			case terminating:
				return last.ExitCode()
			case replacing:
				replacing = false
				if !start() {
					return 1
				}
			case s.Again == nil:
				return last.ExitCode()
			default:
				deciding = make(chan bool, 1)
				go func() { deciding <- s.Again(stopping, exited) }()
			}

		case again := <-deciding:
			deciding = nil
			if !again || terminating {
				return last.ExitCode()
			}
			if !start() {
				return 1
			}
		}
	}
}

func (s *Supervisor) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}
