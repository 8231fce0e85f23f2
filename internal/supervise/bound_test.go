// SPDX-License-Identifier: Apache-2.0

package supervise

import (
	"errors"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// onRetiredThread runs f on a goroutine locked to an OS thread other than
// the main one and lets that goroutine end locked, which makes the Go
// runtime retire the thread (the main thread is never retired, only
// wedged, so a goroutine that lands there unlocks and tries again).
func onRetiredThread(f func()) {
	for {
		done := make(chan bool)
		go func() {
			runtime.LockOSThread()
			if syscall.Gettid() == syscall.Getpid() {
				runtime.UnlockOSThread()
				done <- false
				return
			}
			f()
			done <- true
		}()
		if <-done {
			return
		}
	}
}

// TestBoundChildOutlivesItsCallersThread proves the hazard StartBound
// exists for and that it is closed: a child forked with the parent-death
// signal on a thread that is then retired is killed at once, though this
// process lives on; a child StartBound started from such a thread, and
// then many retired threads later, still runs.
func TestBoundChildOutlivesItsCallersThread(t *testing.T) {
	var naive *exec.Cmd
	onRetiredThread(func() {
		naive = exec.Command("sleep", "60")
		naive.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := naive.Start(); err != nil {
			t.Error(err)
		}
	})
	if naive.Process == nil {
		t.FailNow()
	}
	naiveDone := make(chan error, 1)
	go func() { naiveDone <- naive.Wait() }()
	select {
	case err := <-naiveDone:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("the child of a retired thread ended with %v, want SIGKILL", err)
		}
	case <-time.After(30 * time.Second):
		naive.Process.Kill()
		t.Fatal("a child forked with Pdeathsig on a thread that was retired still runs 30 s later: the hazard this test guards against is not reproduced")
	}

	var cmd *exec.Cmd
	var b *Bound
	onRetiredThread(func() {
		cmd = exec.Command("sleep", "60")
		var err error
		if b, err = StartBound(cmd); err != nil {
			t.Error(err)
		}
	})
	if b == nil {
		t.FailNow()
	}
	defer func() {
		cmd.Process.Kill()
		<-b.Done()
	}()
	for range 50 {
		onRetiredThread(func() {})
	}
	// A death the retirements cause comes at once, as the naive child's
	// did; this only fails if one came, however slow the host.
	time.Sleep(200 * time.Millisecond)
	if gone(cmd.Process.Pid) {
		t.Fatalf("a child StartBound started died when threads of this process were retired: %v", b.Wait())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("Done was not closed 30 s after the child was sent SIGTERM")
	}
	var exit *exec.ExitError
	if err := b.Wait(); !errors.As(err, &exit) || cmd.ProcessState == nil {
		t.Fatalf("Wait after SIGTERM returned %v with ProcessState %v, want the exit error and a state", err, cmd.ProcessState)
	}
}

// TestStartBoundFailure returns cmd.Start's error and starts nothing.
func TestStartBoundFailure(t *testing.T) {
	cmd := exec.Command("/nonexistent/program")
	if b, err := StartBound(cmd); err == nil || b != nil {
		t.Fatalf("StartBound of a missing program returned %v, %v; want an error and no Bound", b, err)
	}
	if cmd.SysProcAttr == nil || cmd.SysProcAttr.Pdeathsig != syscall.SIGKILL {
		t.Fatalf("StartBound did not set the parent-death signal: %+v", cmd.SysProcAttr)
	}
}
