// SPDX-License-Identifier: Apache-2.0

package supervise

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the children (and, in one test, as the
// supervisor): TestMain runs the role named in roleEnv instead of the
// tests.
const roleEnv = "SUPERVISE_TEST_ROLE"

// Exit codes the "trap" child uses to prove which signal reached it.
const (
	trappedTERM = 43
	trappedINT  = 44
)

func TestMain(m *testing.M) {
	switch role := os.Getenv(roleEnv); {
	case role == "":
		os.Exit(m.Run())
	case strings.HasPrefix(role, "exit "):
		n, _ := strconv.Atoi(strings.TrimPrefix(role, "exit "))
		os.Exit(n)
	case role == "trap":
		// Catches SIGTERM and SIGINT and exits with a code naming which.
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		fmt.Println("ready")
		if (<-ch) == syscall.SIGTERM {
			os.Exit(trappedTERM)
		}
		os.Exit(trappedINT)
	case role == "deaf":
		// Ignores SIGTERM: only SIGKILL ends it.
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(time.Hour)
		os.Exit(0)
	case role == "env":
		fmt.Print(os.Getenv("SUPERVISE_TEST_VALUE"))
		os.Exit(0)
	case role == "supervisor":
		// A first process supervising a "trap" child, as a container's
		// would: real signals to this process must reach the child.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		self, _ := os.Executable()
		s := &Supervisor{
			Command: Command{Path: self, Env: []string{roleEnv + "=trap"}, Stdout: os.Stdout, Stderr: os.Stderr},
			Signals: sigs,
			Logf:    func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) },
		}
		os.Exit(s.Run(context.Background()))
	default:
		fmt.Fprintf(os.Stderr, "unknown role %q\n", role)
		os.Exit(100)
	}
}

// self is the test binary's path, run as a child in a role.
func self(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func role(t *testing.T, r string, stdout *lineWriter) Command {
	c := Command{Path: self(t), Env: []string{roleEnv + "=" + r}, Stderr: os.Stderr}
	if stdout != nil {
		c.Stdout = stdout
	}
	return c
}

// lineWriter collects a child's output and tells when a line arrived.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
}

func newLineWriter() *lineWriter { return &lineWriter{lines: make(chan string, 16)} }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		i := bytes.IndexByte(w.buf.Bytes(), '\n')
		if i < 0 {
			return len(p), nil
		}
		w.lines <- string(w.buf.Next(i + 1))
	}
}

func (w *lineWriter) wait(t *testing.T, want string) {
	t.Helper()
	select {
	case l := <-w.lines:
		if strings.TrimSpace(l) != want {
			t.Fatalf("child said %q, want %q", l, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("child did not say %q", want)
	}
}

// run runs s on its own goroutine and returns a channel with its status.
func run(ctx context.Context, s *Supervisor) <-chan int {
	out := make(chan int, 1)
	go func() { out <- s.Run(ctx) }()
	return out
}

func result(t *testing.T, out <-chan int) int {
	t.Helper()
	select {
	case code := <-out:
		return code
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return")
		return -1
	}
}

// started records every child the supervisor starts.
type started struct {
	mu  sync.Mutex
	all []*Child
	ch  chan *Child
}

func newStarted() *started { return &started{ch: make(chan *Child, 8)} }

func (s *started) hook(c *Child) {
	s.mu.Lock()
	s.all = append(s.all, c)
	s.mu.Unlock()
	s.ch <- c
}

func (s *started) next(t *testing.T) *Child {
	t.Helper()
	select {
	case c := <-s.ch:
		return c
	case <-time.After(30 * time.Second):
		t.Fatal("no child started")
		return nil
	}
}

// gone reports whether pid no longer names a live process (a zombie
// counts as gone: it has exited).
func gone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(data, ')')
	return i > 0 && len(data) > i+2 && data[i+2] == 'Z'
}

func TestExitCodeIsPassedOn(t *testing.T) {
	for _, code := range []int{0, 1, 7, 254} {
		s := &Supervisor{Command: role(t, fmt.Sprintf("exit %d", code), nil)}
		if got := s.Run(context.Background()); got != code {
			t.Errorf("child exiting %d: Run = %d", code, got)
		}
	}
}

func TestSignalDeathIs128PlusSignal(t *testing.T) {
	st := newStarted()
	s := &Supervisor{Command: Command{Path: "/bin/sleep", Args: []string{"60"}}, Started: st.hook}
	out := run(context.Background(), s)
	c := st.next(t)
	// Someone else kills the daemon: its death is the supervisor's status.
	if err := syscall.Kill(c.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if got := result(t, out); got != 128+9 {
		t.Fatalf("child killed by SIGKILL: Run = %d, want 137", got)
	}
	if st := c.Status(); st.Signal != syscall.SIGKILL || st.String() != "killed by signal 9 (killed)" {
		t.Fatalf("Status = %+v (%v)", st, st)
	}
}

func TestForwardsSIGTERMAndSIGINT(t *testing.T) {
	for sig, want := range map[syscall.Signal]int{syscall.SIGTERM: trappedTERM, syscall.SIGINT: trappedINT} {
		out := newLineWriter()
		st := newStarted()
		sigs := make(chan os.Signal, 1)
		s := &Supervisor{Command: role(t, "trap", out), Signals: sigs, Started: st.hook}
		res := run(context.Background(), s)
		c := st.next(t)
		out.wait(t, "ready")
		sigs <- sig
		if got := result(t, res); got != want {
			t.Errorf("%v forwarded: Run = %d, want the child's %d", sig, got, want)
		}
		if !gone(c.Pid()) {
			t.Errorf("child %d still running after %v", c.Pid(), sig)
		}
	}
}

func TestContextEndIsSIGTERM(t *testing.T) {
	out := newLineWriter()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Supervisor{Command: role(t, "trap", out)}
	res := run(ctx, s)
	out.wait(t, "ready")
	cancel()
	if got := result(t, res); got != trappedTERM {
		t.Fatalf("ctx ended: Run = %d, want the child's SIGTERM code %d", got, trappedTERM)
	}
}

func TestEnvironmentIsTheChilds(t *testing.T) {
	var out bytes.Buffer
	s := &Supervisor{Command: Command{Path: self(t), Env: []string{roleEnv + "=env", "SUPERVISE_TEST_VALUE=hello there"}, Stdout: &out}}
	if got := s.Run(context.Background()); got != 0 {
		t.Fatalf("Run = %d", got)
	}
	if out.String() != "hello there" {
		t.Fatalf("child saw SUPERVISE_TEST_VALUE=%q", out.String())
	}
}

func TestReplacesStaleChildInPlace(t *testing.T) {
	out := newLineWriter()
	st := newStarted()
	sigs := make(chan os.Signal, 1)
	wake := make(chan struct{})
	var first *Child
	var staleAsked []int
	s := &Supervisor{
		Command: role(t, "trap", out),
		Signals: sigs,
		Wake:    wake,
		Started: st.hook,
		// Only the first child is ever stale; a wake about it that
		// arrives after its replacement must not replace the second.
		Stale: func(c *Child) bool {
			staleAsked = append(staleAsked, c.Pid())
			return c == first
		},
	}
	res := run(context.Background(), s)
	first = st.next(t)
	out.wait(t, "ready")
	wake <- struct{}{}
	second := st.next(t)
	out.wait(t, "ready")
	if second.Pid() == first.Pid() {
		t.Fatal("replacement has the old child's pid")
	}
	if got := first.Status(); got.Code != trappedTERM {
		t.Fatalf("replaced child ended with %v, want the code of a trapped SIGTERM", got)
	}
	wake <- struct{}{} // asked about the second child, which is current
	sigs <- syscall.SIGINT
	if got := result(t, res); got != trappedINT {
		t.Fatalf("Run = %d, want the second child's %d", got, trappedINT)
	}
	if len(staleAsked) != 2 || staleAsked[0] != first.Pid() || staleAsked[1] != second.Pid() {
		t.Fatalf("Stale asked about %v, want [%d %d]", staleAsked, first.Pid(), second.Pid())
	}
}

func TestReplacementKillsAChildThatIgnoresSIGTERM(t *testing.T) {
	out := newLineWriter()
	st := newStarted()
	wake := make(chan struct{})
	s := &Supervisor{
		Command:   role(t, "deaf", out),
		Wake:      wake,
		Started:   st.hook,
		StopGrace: 200 * time.Millisecond,
		Stale:     func(*Child) bool { return true },
	}
	ctx, cancel := context.WithCancel(context.Background())
	res := run(ctx, s)
	first := st.next(t)
	out.wait(t, "ready")
	began := time.Now()
	wake <- struct{}{}
	second := st.next(t)
	if took := time.Since(began); took < 200*time.Millisecond {
		t.Fatalf("replaced after %v, before the grace ended", took)
	}
	if got := first.Status(); got.Signal != syscall.SIGKILL {
		t.Fatalf("deaf child ended with %v, want SIGKILL", got)
	}
	out.wait(t, "ready")
	cancel() // SIGTERM, ignored; end the test's child ourselves
	_ = second.Signal(syscall.SIGKILL)
	if got := result(t, res); got != 137 {
		t.Fatalf("Run = %d, want 137", got)
	}
}

func TestAgainDecidesAfterAnOwnExit(t *testing.T) {
	st := newStarted()
	calls := 0
	s := &Supervisor{
		Command: role(t, "exit 3", nil),
		Started: st.hook,
		Again: func(ctx context.Context, c *Child) bool {
			if c.Status().Code != 3 {
				t.Errorf("Again got a child with %v", c.Status())
			}
			calls++
			return calls < 3
		},
	}
	if got := s.Run(context.Background()); got != 3 {
		t.Fatalf("Run = %d, want 3", got)
	}
	if calls != 3 || len(st.all) != 3 {
		t.Fatalf("Again called %d times, %d starts; want 3 and 3", calls, len(st.all))
	}
}

func TestSignalWhileAgainWaits(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	waiting := make(chan struct{})
	s := &Supervisor{
		Command: role(t, "exit 5", nil),
		Signals: sigs,
		Again: func(ctx context.Context, c *Child) bool {
			close(waiting)
			<-ctx.Done() // the wait ends only because a signal came
			return true
		},
	}
	res := run(context.Background(), s)
	<-waiting
	sigs <- syscall.SIGTERM
	if got := result(t, res); got != 5 {
		t.Fatalf("Run = %d, want the exited child's 5 (no new start after a signal)", got)
	}
}

func TestStartFailureIsStatus1(t *testing.T) {
	var logged []string
	for _, path := range []string{"/nonexistent/daemon", "sleep"} {
		logged = nil
		s := &Supervisor{
			Command: Command{Path: path},
			Logf:    func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) },
		}
		if got := s.Run(context.Background()); got != 1 {
			t.Errorf("%s: Run = %d, want 1", path, got)
		}
		if len(logged) != 1 || !strings.Contains(logged[0], path) {
			t.Errorf("%s: logged %q, want one line naming the path", path, logged)
		}
	}
	if _, err := Start(Command{Path: "/nonexistent/daemon"}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Start of a missing program: %v, want ErrNotExist", err)
	}
}

// TestFirstProcessForwardsRealSignals runs a supervisor as its own
// process, as a container's first process, and signals it from outside.
func TestFirstProcessForwardsRealSignals(t *testing.T) {
	for sig, want := range map[syscall.Signal]int{syscall.SIGTERM: trappedTERM, syscall.SIGINT: trappedINT} {
		out := newLineWriter()
		cmd := exec.Command(self(t))
		cmd.Env = append(os.Environ(), roleEnv+"=supervisor")
		cmd.Stdout = out
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		out.wait(t, "ready") // the child is up, so the supervisor subscribed
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if got := cmd.ProcessState.ExitCode(); got != want {
			t.Errorf("supervisor process sent %v: exit %d (%v), want the child's %d", sig, got, err, want)
		}
	}
}

func TestStopKillsAChildThatIgnoresSIGTERM(t *testing.T) {
	out := newLineWriter()
	c, err := Start(role(t, "deaf", out))
	if err != nil {
		t.Fatal(err)
	}
	out.wait(t, "ready")
	if killed := c.Stop(100 * time.Millisecond); !killed {
		t.Fatal("Stop of a child ignoring SIGTERM did not need SIGKILL")
	}
	if st := c.Status(); st.Signal != syscall.SIGKILL || st.Err() == nil || st.Err().Error() != "killed by signal 9 (killed)" {
		t.Fatalf("Status = %v (Err %v), want killed by SIGKILL", st, st.Err())
	}
	if c.Stop(time.Second) {
		t.Error("a second Stop sent SIGKILL to a reaped child")
	}
}

func TestStopEndsATrappingChildWithSIGTERM(t *testing.T) {
	out := newLineWriter()
	c, err := Start(role(t, "trap", out))
	if err != nil {
		t.Fatal(err)
	}
	out.wait(t, "ready")
	if killed := c.Stop(30 * time.Second); killed {
		t.Fatal("Stop needed SIGKILL for a child that exits on SIGTERM")
	}
	if got := c.Status(); got.Code != trappedTERM || got.Err() == nil {
		t.Fatalf("Status = %v, want the code of a trapped SIGTERM", got)
	}
	if err := (Status{}).Err(); err != nil {
		t.Errorf("exit status 0: Err = %v, want nil", err)
	}
}
