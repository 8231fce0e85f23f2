// SPDX-License-Identifier: Apache-2.0

package modes

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startPipeWireMode starts `audio-operator pipewire` (the test binary in
// that role) with the declaration naming node, waits until its PipeWire
// serves that node, and returns the mode's process and PipeWire's pid.
// The backstop is an hour, so only file events can wake the check.
func startPipeWireMode(t *testing.T, s *sandbox, node string, extra ...string) (*proc, int) {
	t.Helper()
	s.declare(t, node)
	// The declaration predates this PipeWire, as the declare init
	// container's does.
	time.Sleep(20 * time.Millisecond)
	mode := s.helper(t, "pipewire", append([]string{backstopEnv + "=1h"}, extra...)...)
	pw := onlyChild(t, mode.cmd.Process.Pid, "pipewire", 0)
	waitForNode(t, s, node)
	return mode, pw
}

func waitForNode(t *testing.T, s *sandbox, node string) {
	t.Helper()
	eventually(t, 30*time.Second, "node "+node+" in pw-dump", func() bool {
		g, ok := s.dump()
		return ok && contains(g.nodes, node)
	})
}

func TestPipeWireModeRestartsInPlaceOnANewDeclaration(t *testing.T) {
	s := newSandbox(t)
	mode, first := startPipeWireMode(t, s, "liken_test_before")
	firstSocket := s.socketID(t)

	// A declaration that PipeWire loaded causes no restart.
	time.Sleep(500 * time.Millisecond)
	if got := childrenOf(mode.cmd.Process.Pid, "pipewire"); len(got) != 1 || got[0] != first {
		t.Fatalf("PipeWire restarted with nothing new declared: children %v, was %d", got, first)
	}

	// The operator writes a new declaration, newer than the socket.
	socketTime := s.socketMtime(t)
	written := time.Now()
	s.declare(t, "liken_test_after")
	if fi, err := os.Stat(s.declaration); err != nil {
		t.Fatal(err)
	} else if !fi.ModTime().After(socketTime) {
		t.Fatalf("test set-up: declaration %v is not newer than the socket", fi.ModTime())
	}
	second := onlyChild(t, mode.cmd.Process.Pid, "pipewire", first)
	if alive(first) {
		t.Errorf("the replaced PipeWire %d still runs", first)
	}
	waitForNode(t, s, "liken_test_after")
	t.Logf("new declaration to the new node in pw-dump: %v", time.Since(written).Round(time.Millisecond))
	if mode.exited() {
		t.Fatalf("the pipewire mode (the container's first process) exited: %d", mode.wait(t, 0))
	}
	if id := s.socketID(t); id == firstSocket {
		t.Errorf("socket not recreated: %v", id)
	}
	if g, _ := s.dump(); contains(g.nodes, "liken_test_before") {
		t.Errorf("the old declaration's node survived the restart: %v", g.nodes)
	}

	// And the new PipeWire stays: its declaration is loaded.
	time.Sleep(500 * time.Millisecond)
	if got := childrenOf(mode.cmd.Process.Pid, "pipewire"); len(got) != 1 || got[0] != second {
		t.Fatalf("PipeWire restarted again: children %v, want only %d", got, second)
	}

	// A touch alone (same content, newer time) is a new declaration too.
	now := time.Now()
	if err := os.Chtimes(s.declaration, now, now); err != nil {
		t.Fatal(err)
	}
	third := onlyChild(t, mode.cmd.Process.Pid, "pipewire", second)
	waitForNode(t, s, "liken_test_after")
	if third == second || mode.exited() {
		t.Fatalf("touch: PipeWire %d -> %d, mode exited %v", second, third, mode.exited())
	}
}

// A socket left by a PipeWire of an earlier pod (killed, so its file
// stays), older than this pod's declaration: the new PipeWire takes the
// path over and serves, and is not restarted for it.
func TestPipeWireModeIgnoresAStaleSocket(t *testing.T) {
	s := newSandbox(t)
	old := s.start(t, "old-pipewire", DefaultPipeWire, nil)
	eventually(t, 30*time.Second, "old PipeWire answers", func() bool { _, ok := s.dump(); return ok })
	old.cmd.Process.Signal(syscall.SIGKILL) // leaves its socket file behind
	old.wait(t, 30*time.Second)
	if _, err := os.Stat(s.socket()); err != nil {
		t.Fatalf("test set-up: the killed PipeWire left no socket: %v", err)
	}
	time.Sleep(20 * time.Millisecond)
	// The backstop checks every 50 ms.
	mode, pw := startPipeWireMode(t, s, "liken_test_node", backstopEnv+"=50ms")
	time.Sleep(time.Second)
	if got := childrenOf(mode.cmd.Process.Pid, "pipewire"); len(got) != 1 || got[0] != pw {
		t.Fatalf("PipeWire restarted over a stale socket: children %v, was %d", got, pw)
	}
}

func TestPipeWireModeEndsWithPipeWiresStatus(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		want int
	}{
		{syscall.SIGKILL, 128 + 9}, // a crash
		{syscall.SIGTERM, 0},       // someone else stopped it: PipeWire exits 0
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			s := newSandbox(t)
			mode, pw := startPipeWireMode(t, s, "liken_test_node")
			if err := syscall.Kill(pw, tc.sig); err != nil {
				t.Fatal(err)
			}
			if got := mode.wait(t, 30*time.Second); got != tc.want {
				t.Fatalf("PipeWire got %v from someone else: mode exited %d, want %d", tc.sig, got, tc.want)
			}
			if got := childrenOf(mode.cmd.Process.Pid, "pipewire"); len(got) != 0 {
				t.Fatalf("a PipeWire was started again: %v", got)
			}
		})
	}
}

func TestPipeWireModeForwardsSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			s := newSandbox(t)
			mode, pw := startPipeWireMode(t, s, "liken_test_node")
			if err := mode.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if got := mode.wait(t, 30*time.Second); got != 0 {
				t.Fatalf("mode got %v: exited %d, want PipeWire's clean 0", sig, got)
			}
			if alive(pw) {
				t.Fatalf("PipeWire %d outlived its first process", pw)
			}
			// PipeWire removes its socket on a clean stop, never when
			// killed: the signal reached it.
			if _, err := os.Stat(s.socket()); !os.IsNotExist(err) {
				t.Fatalf("socket after %v: %v; PipeWire did not stop cleanly", sig, err)
			}
		})
	}
}

func TestPipeWireModeStartFailureIsStatus1(t *testing.T) {
	var stderr strings.Builder
	code := PipeWire(t.Context(), nil, Env{Environ: []string{}, Stderr: &syncWriter{w: &stderr}, PipeWire: "/nonexistent/pipewire", Declaration: "/nonexistent/decl"})
	if code != 1 || !strings.Contains(stderr.String(), "/nonexistent/pipewire") {
		t.Fatalf("PipeWire with a missing program: %d, %q", code, stderr.String())
	}
}
