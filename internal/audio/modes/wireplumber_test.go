// SPDX-License-Identifier: Apache-2.0

package modes

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/dbusd"
)

// startWirePlumberMode starts `audio-operator wireplumber
// --profile=main-embedded` (the test binary in that role) and waits until
// its WirePlumber is a client of PipeWire; it returns the mode's process
// and WirePlumber's pid.
func startWirePlumberMode(t *testing.T, s *sandbox, extra ...string) (*proc, int) {
	t.Helper()
	mode := s.helper(t, "wireplumber", extra...)
	wp := onlyChild(t, mode.cmd.Process.Pid, "wireplumber", 0)
	waitForWirePlumber(t, s, wp)
	return mode, wp
}

// waitForWirePlumber waits until the WirePlumber process wp is a client
// of the PipeWire serving now.
func waitForWirePlumber(t *testing.T, s *sandbox, wp int) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("WirePlumber %d is a client of PipeWire", wp), func() bool {
		g, ok := s.dump()
		return ok && contains(g.clients, wp)
	})
}

func logOf(t *testing.T, s *sandbox, name string) string {
	t.Helper()
	data, err := os.ReadFile(s.dir + "/" + name + ".log")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// The layout change end to end: a new declaration restarts PipeWire in
// place, and WirePlumber follows it in place; then a WirePlumber exit
// with the same PipeWire still serving ends the mode with WirePlumber's
// status.
func TestWirePlumberModeFollowsAPipeWireRestart(t *testing.T) {
	s := newSandbox(t)
	pwMode, pw1 := startPipeWireMode(t, s, "liken_test_before")
	wpMode, wp1 := startWirePlumberMode(t, s, returnLimitEnv+"=1m")

	written := time.Now()
	s.declare(t, "liken_test_after")
	onlyChild(t, pwMode.cmd.Process.Pid, "pipewire", pw1)
	wp2 := onlyChild(t, wpMode.cmd.Process.Pid, "wireplumber", wp1)
	waitForNode(t, s, "liken_test_after")
	waitForWirePlumber(t, s, wp2)
	t.Logf("new declaration to WirePlumber serving the new PipeWire: %v", time.Since(written).Round(time.Millisecond))
	if alive(wp1) {
		t.Errorf("the first WirePlumber %d still runs", wp1)
	}
	if wpMode.exited() || pwMode.exited() {
		t.Fatalf("a first process exited: pipewire %v, wireplumber %v", pwMode.exited(), wpMode.exited())
	}
	if log := logOf(t, s, "wireplumber"); !strings.Contains(log, "was replaced") {
		t.Errorf("the mode did not say PipeWire was replaced:\n%s", log)
	}

	// WirePlumber's own crash, PipeWire unchanged: the container ends.
	began := time.Now()
	if err := syscall.Kill(wp2, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if got := wpMode.wait(t, 30*time.Second); got != 137 {
		t.Fatalf("WirePlumber killed: mode exited %d, want 137", got)
	}
	// Waiting out the limit takes a minute; a slow host does not take 30 s.
	if took := time.Since(began); took > 30*time.Second {
		t.Errorf("took %v to see the same PipeWire serving (limit 1m)", took)
	} else {
		t.Logf("WirePlumber killed to its first process's exit: %v", took.Round(time.Millisecond))
	}
	if log := logOf(t, s, "wireplumber"); !strings.Contains(log, "exit is its own") {
		t.Errorf("the mode did not say the exit was WirePlumber's own:\n%s", log)
	}
	if got := childrenOf(wpMode.cmd.Process.Pid, "wireplumber"); len(got) != 0 {
		t.Fatalf("WirePlumber started again: %v", got)
	}
}

// A PipeWire that crashed (its socket file left behind, refusing) and is
// started again by the kubelet within the limit is followed too.
func TestWirePlumberModeFollowsACrashedPipeWireBack(t *testing.T) {
	s := newSandbox(t)
	pw := s.start(t, "pipewire-1", DefaultPipeWire, nil)
	eventually(t, 30*time.Second, "PipeWire answers", func() bool { _, ok := s.dump(); return ok })
	wpMode, wp1 := startWirePlumberMode(t, s, returnLimitEnv+"=1m")

	pw.cmd.Process.Kill()
	pw.wait(t, 30*time.Second)
	time.Sleep(time.Second) // the kubelet's backoff, shortened
	if wpMode.exited() {
		t.Fatalf("the mode ended while PipeWire was down: %d", wpMode.wait(t, 0))
	}
	s.start(t, "pipewire-2", DefaultPipeWire, nil)
	wp2 := onlyChild(t, wpMode.cmd.Process.Pid, "wireplumber", wp1)
	waitForWirePlumber(t, s, wp2)
}

func TestWirePlumberModeEndsWhenPipeWireDoesNotReturn(t *testing.T) {
	s := newSandbox(t)
	pw := s.start(t, "pipewire", DefaultPipeWire, nil)
	eventually(t, 30*time.Second, "PipeWire answers", func() bool { _, ok := s.dump(); return ok })
	wpMode, wp := startWirePlumberMode(t, s, returnLimitEnv+"=1s")
	began := time.Now()
	pw.cmd.Process.Signal(syscall.SIGTERM)
	// WirePlumber exits 0 when its PipeWire disconnects (measured with
	// 0.5.8); the mode passes that status on after the limit.
	if got := wpMode.wait(t, 30*time.Second); got != 0 {
		t.Fatalf("mode exited %d, want WirePlumber's 0", got)
	}
	if took := time.Since(began); took < time.Second {
		t.Fatalf("ended after %v, before the 1 s limit", took)
	}
	if alive(wp) {
		t.Fatal("WirePlumber still runs")
	}
	if log := logOf(t, s, "wireplumber"); !strings.Contains(log, "no PipeWire answered") {
		t.Errorf("the mode did not say PipeWire did not return:\n%s", log)
	}
}

func TestWirePlumberModeForwardsSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			s := newSandbox(t)
			s.start(t, "pipewire", DefaultPipeWire, nil)
			eventually(t, 30*time.Second, "PipeWire answers", func() bool { _, ok := s.dump(); return ok })
			wpMode, wp := startWirePlumberMode(t, s, returnLimitEnv+"=1m")
			if err := wpMode.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if got := wpMode.wait(t, 30*time.Second); got != 0 {
				t.Fatalf("mode got %v: exited %d, want WirePlumber's clean 0", sig, got)
			}
			if alive(wp) {
				t.Fatalf("WirePlumber %d outlived its first process", wp)
			}
			if g, _ := s.dump(); contains(g.clients, wp) {
				t.Fatal("WirePlumber is still PipeWire's client")
			}
		})
	}
}

// A media bus that goes away leaves WirePlumber running (there is nothing
// better to run it on); a new dbus-daemon at the same address ends the
// mode at once, with WirePlumber stopped by SIGTERM and its clean status,
// so that the kubelet starts a WirePlumber that registers on the new bus.
func TestWirePlumberModeEndsWhenItsMediaBusIsReplaced(t *testing.T) {
	s := newSandbox(t)
	s.start(t, "pipewire", DefaultPipeWire, nil)
	eventually(t, 30*time.Second, "PipeWire answers", func() bool { _, ok := s.dump(); return ok })
	m := newMediaBus(t)
	socket := m.bus.SocketPath()
	wpMode, wp := startWirePlumberMode(t, s, returnLimitEnv+"=1m", EnvSystemBus+"="+m.bus.Address())
	eventually(t, 30*time.Second, "the mode watches the media bus", func() bool {
		return strings.Contains(logOf(t, s, "wireplumber"), "watching it")
	})

	if err := m.bus.Stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if wpMode.exited() || !alive(wp) {
		t.Fatalf("the mode or WirePlumber ended with no bus to move to:\n%s", logOf(t, s, "wireplumber"))
	}

	log, err := os.Create(filepath.Join(m.dir, "dbus-daemon.2.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	bus, err := dbusd.Start(t.Context(), dbusd.Options{
		SocketPath: socket, Policy: dbusd.PolicyOpen, KeepUser: true, DieWithParent: true, Stdout: log, Stderr: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Stop() })
	back := time.Now()
	if got := wpMode.wait(t, 30*time.Second); got != 0 {
		t.Errorf("mode exited %d, want WirePlumber's clean 0 after SIGTERM", got)
	}
	t.Logf("FIGURE new media bus answers → wireplumber mode ended: %v (target: within a poll period, %v, plus WirePlumber's stop)",
		time.Since(back).Round(time.Millisecond), mediaBusPoll)
	if alive(wp) {
		t.Errorf("WirePlumber %d outlived its first process", wp)
	}
	if l := logOf(t, s, "wireplumber"); !strings.Contains(l, "a new media bus answers at") {
		t.Errorf("the mode did not say why it ended:\n%s", l)
	}
}
