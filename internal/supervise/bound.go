// SPDX-License-Identifier: Apache-2.0

package supervise

import (
	"os/exec"
	"runtime"
	"syscall"
)

// Bound is a process started by StartBound: one that dies with this one.
type Bound struct {
	done chan struct{}
	err  error // cmd.Wait's, valid once done is closed
}

// StartBound starts cmd so that the kernel kills it with SIGKILL when this
// process dies (PR_SET_PDEATHSIG, prctl(2)), and reaps it in the
// background. cmd.SysProcAttr is created when nil and its Pdeathsig set;
// the caller must not call cmd.Wait (Bound.Wait stands for it). The error
// is cmd.Start's, and then nothing runs.
//
// The kernel sends the parent-death signal when the thread that forked
// the child ends, not when the process does (prctl(2): "the parent"
// is the thread), and the Go runtime retires an OS thread whenever a
// goroutine locked to it ends (runtime.LockOSThread). A child forked
// from an ordinary goroutine is therefore killed at an arbitrary moment
// if that thread is ever locked and retired by anything else in the
// process, which happens to every thread Start's children were forked
// on. So the fork here happens on a thread locked for the child's whole
// life, and the child is reaped there; once reaped, the goroutine ends
// with the thread still locked, which retires it.
func StartBound(cmd *exec.Cmd) (*Bound, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	b := &Bound{done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		b.err = cmd.Wait()
		close(b.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return b, nil
}

// Done is closed once the process has exited and been reaped; its
// exec.Cmd's ProcessState is set then.
func (b *Bound) Done() <-chan struct{} { return b.done }

// Wait blocks until Done is closed and returns what exec.Cmd.Wait
// returned: nil for exit status 0, an *exec.ExitError otherwise, or the
// error of copying the process's output when a writer that is not a file
// failed.
func (b *Bound) Wait() error {
	<-b.done
	return b.err
}
