// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/liken-sh/operators/internal/tailbuf"
)

// DefaultDumpTimeout bounds one pw-dump when the caller's context has no
// deadline. pw-dump answers in about 0.1 s here (measured, 46 objects);
// the bound is for a PipeWire that accepts the connection and never
// answers.
const DefaultDumpTimeout = 10 * time.Second

// waitDelay is how long a killed pw-dump gets to close its output before
// its pipes are closed under it.
const waitDelay = time.Second

// SocketName is the socket PipeWire serves in its runtime directory: its
// default core name (core.name "pipewire-0", which libpipewire connects
// to when PIPEWIRE_REMOTE is unset). A claim's own directory names its
// socket the same, so a consumer's PIPEWIRE_REMOTE has one shape.
const SocketName = "pipewire-0"

// Remote says how to reach one PipeWire with its command-line tools.
type Remote struct {
	// RuntimeDir is the directory holding PipeWire's socket
	// (pipewire-0). It is given to the tools as both
	// PIPEWIRE_RUNTIME_DIR and XDG_RUNTIME_DIR, as deploy/audio/operator.yaml's containers
	// set them; empty leaves the process environment as it is.
	RuntimeDir string
	// PWDump is the pw-dump binary; empty means "pw-dump" from PATH.
	PWDump string
	// PWCli is the pw-cli binary, which writes params; empty means
	// "pw-cli" from PATH.
	PWCli string
}

// SocketPath is the path of PipeWire's socket in r's runtime directory.
func (r Remote) SocketPath() string { return filepath.Join(r.RuntimeDir, SocketName) }

// Env returns the process environment with r's runtime directory set.
func (r Remote) Env() []string {
	env := os.Environ()
	if r.RuntimeDir == "" {
		return env
	}
	out := env[:0:0]
	for _, kv := range env {
		if strings.HasPrefix(kv, "PIPEWIRE_RUNTIME_DIR=") || strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "PIPEWIRE_RUNTIME_DIR="+r.RuntimeDir, "XDG_RUNTIME_DIR="+r.RuntimeDir)
}

func (r Remote) pwDump() string {
	if r.PWDump != "" {
		return r.PWDump
	}
	return "pw-dump"
}

func (r Remote) pwCli() string {
	if r.PWCli != "" {
		return r.PWCli
	}
	return "pw-cli"
}

// tool builds one of PipeWire's command-line tools with r's environment,
// in a process group of its own: a tool stuck on a daemon that does not
// answer is killed with everything it started when ctx ends (SIGKILL to
// the group), so nothing it left behind holds the operator's pipes.
func (r Remote) tool(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = r.Env()
	cmd.WaitDelay = waitDelay
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return signalGroup(cmd, syscall.SIGKILL) }
	return cmd
}

// signalGroup sends sig to the process group cmd leads (tool starts each
// child as the leader of its own), falling back to the child alone.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if err := syscall.Kill(-cmd.Process.Pid, sig); err == nil {
		return nil
	}
	return cmd.Process.Signal(sig)
}

// command builds pw-dump with colours off (-N): a terminal is never
// there, but the flag makes it certain no escape codes reach the parser.
func (r Remote) command(ctx context.Context, args ...string) *exec.Cmd {
	return r.tool(ctx, r.pwDump(), append([]string{"-N"}, args...)...)
}

// Dump runs pw-dump once and parses its output (ParseDump). Without a
// deadline on ctx it applies DefaultDumpTimeout. It fails when pw-dump
// cannot start, exits non-zero (with no PipeWire it prints "can't
// connect: Host is down" and exits 255, measured), times out, or prints
// something ParseDump refuses; the error quotes the end of pw-dump's
// stderr. Objects ParseDump skipped are in the Graph's Skipped.
func (r Remote) Dump(ctx context.Context) (*Graph, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultDumpTimeout)
		defer cancel()
	}
	cmd := r.command(ctx)
	stdout := &boundedBuffer{max: MaxBatchBytes + 1}
	stderr := tailbuf.New(2048)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, fmt.Errorf("pw-dump: %w%s", err, stderrQuote(stderr))
	}
	if stdout.over {
		return nil, fmt.Errorf("pw-dump: %w: the dump is longer than %d bytes", ErrBadDump, MaxBatchBytes)
	}
	g, err := ParseDump(stdout.b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("pw-dump: %w%s", err, stderrQuote(stderr))
	}
	return g, nil
}

// Monitor follows one PipeWire's graph through a `pw-dump -m` child,
// started by Remote.Monitor. The child connects once and prints every
// change, so the operator reads a graph that is at most one batch old
// without a fresh dump per pass.
type Monitor struct {
	cmd       *exec.Cmd
	snapshots chan *Graph
	done      chan struct{}
	stderr    *tailbuf.Buffer

	mu      sync.Mutex
	latest  *Graph
	batches int
	err     error
	stopped bool
}

// Monitor starts `pw-dump -m` and returns at once; the first snapshot
// (the whole graph) follows when PipeWire has answered. It fails only if
// the child cannot be started. Cancelling ctx stops the child, as does
// Stop.
func (r Remote) Monitor(ctx context.Context) (*Monitor, error) {
	cmd := r.command(ctx, "-m")
	cmd.Cancel = func() error { return signalGroup(cmd, syscall.SIGTERM) }
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("pw-dump -m: %w", err)
	}
	m := &Monitor{
		cmd:       cmd,
		snapshots: make(chan *Graph, 1),
		done:      make(chan struct{}),
		stderr:    tailbuf.New(2048),
	}
	cmd.Stderr = m.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pw-dump -m: %w", err)
	}
	go m.run(ctx, stdout)
	return m, nil
}

func (m *Monitor) run(ctx context.Context, stdout io.Reader) {
	logger := klog.FromContext(ctx)
	readErr := ReadStream(stdout, func(g *Graph) error {
		for _, err := range g.Skipped {
			// One line per element left out: a client of the PipeWire
			// shaped an object the reader does not take, and the rest of
			// the graph is read all the same.
			logger.Error(err, "An object in the PipeWire graph was skipped", "batch", m.Batches()+1)
		}
		m.mu.Lock()
		m.latest = g
		m.batches++
		m.mu.Unlock()
		select { // keep only the newest unread snapshot
		case <-m.snapshots:
		default:
		}
		m.snapshots <- g
		return nil
	})
	if readErr != nil {
		// The output can no longer be followed; end the child rather
		// than leave it printing into a pipe nobody reads.
		_ = signalGroup(m.cmd, syscall.SIGKILL)
	}
	waitErr := m.cmd.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.stopped || ctx.Err() != nil:
		m.err = ErrMonitorStopped
	case readErr != nil:
		m.err = fmt.Errorf("pw-dump -m: %w%s", readErr, stderrQuote(m.stderr))
	default:
		// pw-dump -m exits with status 0 and says nothing when PipeWire
		// goes away (measured), so any exit is an end, never "done".
		status := "exited with status 0"
		if waitErr != nil {
			status = waitErr.Error()
		}
		m.err = fmt.Errorf("%w: pw-dump -m %s after %d batches%s", ErrMonitorEnded, status, m.batches, stderrQuote(m.stderr))
	}
	close(m.done)
	close(m.snapshots)
}

// ErrMonitorEnded is wrapped by Monitor.Err when the child ended on its
// own, which happens when the PipeWire it followed went away.
var ErrMonitorEnded = errors.New("graph monitor ended")

// ErrMonitorStopped is Monitor.Err after Stop or a cancelled context.
var ErrMonitorStopped = errors.New("graph monitor stopped")

// Snapshots delivers the graph after each batch. Only the newest unread
// snapshot is kept: a slow reader skips to the present instead of
// working through the past. The channel is closed after Done.
func (m *Monitor) Snapshots() <-chan *Graph { return m.snapshots }

// Latest returns the newest graph, or nil before the first batch.
func (m *Monitor) Latest() *Graph {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.latest
}

// Batches returns how many batches have been read.
func (m *Monitor) Batches() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.batches
}

// Done is closed when the child has exited and its output is read.
func (m *Monitor) Done() <-chan struct{} { return m.done }

// Err returns nil while the monitor runs, then why it ended:
// ErrMonitorStopped after Stop or a cancelled context, an error wrapping
// ErrMonitorEnded when the child exited on its own (with its status and
// the end of its stderr), or one wrapping ErrBadDump when its output
// could not be parsed.
func (m *Monitor) Err() error {
	select {
	case <-m.done:
	default:
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Pid returns the child's process id.
func (m *Monitor) Pid() int { return m.cmd.Process.Pid }

// Stop ends the child and its process group (SIGTERM; SIGKILL if it has
// not exited within a second) and waits until Done. Stopping twice is harmless.
func (m *Monitor) Stop() { m.end(syscall.SIGTERM) }

// Kill ends the child and its process group at once (SIGKILL) and waits
// until Done: for a child that is stuck (stopped, or blocked writing),
// which SIGTERM would not end. Killing a monitor that has ended is
// harmless.
func (m *Monitor) Kill() { m.end(syscall.SIGKILL) }

// end marks the monitor stopped, sends sig to the child's process group
// unless it has already exited, and waits until Done, sending SIGKILL
// after waitDelay.
func (m *Monitor) end(sig syscall.Signal) {
	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
	select {
	case <-m.done:
		return
	default:
	}
	_ = signalGroup(m.cmd, sig)
	select {
	case <-m.done:
	case <-time.After(waitDelay):
		_ = signalGroup(m.cmd, syscall.SIGKILL)
		<-m.done
	}
}

// boundedBuffer keeps the first max bytes written to it and notes that
// more came; writes never fail, so the writer is not killed by a broken
// pipe before its exit status is known.
type boundedBuffer struct {
	max  int
	b    bytes.Buffer
	over bool
}

func (w *boundedBuffer) Write(p []byte) (int, error) {
	if room := w.max - w.b.Len(); len(p) > room {
		w.b.Write(p[:max(room, 0)])
		w.over = true
		return len(p), nil
	}
	return w.b.Write(p)
}

// stderrQuote returns "; stderr: <text>" or "" when nothing was written.
func stderrQuote(t *tailbuf.Buffer) string {
	s := t.Trimmed()
	if s == "" {
		return ""
	}
	return "; stderr: " + s
}
