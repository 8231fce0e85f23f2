// SPDX-License-Identifier: Apache-2.0

package images_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/supervise"
	"github.com/liken-sh/operators/internal/tailbuf"
)

// sandbox runs a program of an unpacked image under bubblewrap as a
// container of the pods of deploy/*/operator.yaml runs: the image's root filesystem as /
// (read-only unless writable), fresh /proc and /dev, the image's
// environment and nothing of the host's, every capability dropped but
// caps, and a PID namespace of its own with the program as PID 1, unless
// sharePID.
type sandbox struct {
	image    unpacked
	writable bool
	sharePID bool
	caps     []string // e.g. "CAP_NET_ADMIN"
	binds    []bind
	env      []string // after the image's own
}

// noambientPath is where the sandbox finds testdata/noambient.
const noambientPath = "/dev/.noambient"

var (
	noambientOnce sync.Once
	noambient     string
	noambientErr  error
)

// noambientBinary builds testdata/noambient, static, once per test binary.
func noambientBinary(t *testing.T) string {
	t.Helper()
	noambientOnce.Do(func() {
		noambient = filepath.Join(scratch, "noambient")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", noambient, "./testdata/noambient")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			noambientErr = fmt.Errorf("build testdata/noambient: %v\n%s", err, out)
		}
	})
	if noambientErr != nil {
		t.Fatal(noambientErr)
	}
	return noambient
}

// bind mounts a host directory at a path of the image.
type bind struct {
	host, path string
	readOnly   bool
}

// command returns argv run in the sandbox: killed with its whole process
// group when ctx ends, and with the test binary.
func (s sandbox) command(t *testing.T, ctx context.Context, argv ...string) *exec.Cmd {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatalf("bubblewrap: %v (hack/install-deps.sh installs it)", err)
	}
	if os.Geteuid() != 0 {
		t.Fatal("the image tests run bubblewrap as root, which gives a container exactly the capabilities its manifest names; run them as root (hack/test.sh does in CI)")
	}
	rootBind := "--ro-bind"
	if s.writable {
		rootBind = "--bind"
	}
	args := []string{rootBind, s.image.root, "/", "--proc", "/proc", "--dev", "/dev", "--die-with-parent", "--clearenv", "--cap-drop", "ALL"}
	if !s.sharePID {
		args = append(args, "--unshare-pid", "--as-pid-1")
	}
	for _, c := range s.caps {
		args = append(args, "--cap-add", c)
	}
	if len(s.caps) > 0 {
		args = append(args, "--ro-bind", noambientBinary(t), noambientPath)
		argv = append([]string{noambientPath}, argv...)
	}
	for _, b := range s.binds {
		flag := "--bind"
		if b.readOnly {
			flag = "--ro-bind"
		}
		args = append(args, flag, b.host, b.path)
	}
	for _, kv := range append(append([]string(nil), s.image.config.Config.Env...), s.env...) {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	args = append(append(args, "--"), argv...)
	cmd := exec.CommandContext(ctx, "bwrap", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// runBound is cmd.Run for a command bound to this test binary's life
// (supervise.StartBound).
func runBound(cmd *exec.Cmd) error {
	b, err := supervise.StartBound(cmd)
	if err != nil {
		return err
	}
	return b.Wait()
}

// result is a finished run.
type result struct {
	exit           int
	stdout, stderr string
	err            error
}

// run runs argv in the sandbox to completion within timeout.
func (s sandbox) run(t *testing.T, timeout time.Duration, argv ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := s.command(t, ctx, argv...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := runBound(cmd)
	r := result{stdout: stdout.String(), stderr: stderr.String(), err: err, exit: -1}
	if cmd.ProcessState != nil {
		r.exit = cmd.ProcessState.ExitCode()
	}
	if ctx.Err() != nil {
		r.err = errors.Join(err, ctx.Err())
	}
	return r
}

// daemon is a long-running program in a sandbox.
type daemon struct {
	name string
	cmd  *exec.Cmd
	out  *tailbuf.Buffer // its output, read while it runs
	done chan struct{}
	err  error
}

// start starts argv in the sandbox and stops it (SIGTERM, SIGKILL after
// 5 s) in the test's cleanup, logging its output if the test failed. The
// deadline bounds the whole run.
func (s sandbox) start(t *testing.T, name string, deadline time.Duration, argv ...string) *daemon {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	d := &daemon{name: name, out: tailbuf.New(1 << 20), done: make(chan struct{})}
	d.cmd = s.command(t, ctx, argv...)
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	b, err := supervise.StartBound(d.cmd)
	if err != nil {
		cancel()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		d.err = b.Wait()
		cancel()
		close(d.done)
	}()
	t.Cleanup(func() {
		d.stop()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, d.out.String())
		}
	})
	return d
}

// exited reports whether the daemon has ended.
func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// stop ends the daemon's process group and waits for it.
func (d *daemon) stop() {
	if d.exited() {
		return
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.done
	}
}

// waitFor polls cond every 100 ms until it returns nil, or fails the test
// with cond's last error when timeout passes or a daemon ends.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() error, daemons ...*daemon) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		for _, d := range daemons {
			if d.exited() {
				t.Fatalf("%s: %s exited (%v) while waiting: %v", what, d.name, d.err, err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mkdirs creates directories and fails the test on error.
func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
