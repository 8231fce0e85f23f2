// SPDX-License-Identifier: Apache-2.0

package pipewire

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/liken-sh/operators/test/poll"
)

// fakePWDump writes a shell script standing in for pw-dump, for the ways
// a real one can fail that a real PipeWire cannot be made to produce on
// demand (output cut short, garbage). The live tests use the real one.
func fakePWDump(t *testing.T, script string) Remote {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pw-dump")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return Remote{RuntimeDir: t.TempDir(), PWDump: path}
}

func TestDumpFailures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cases := map[string]struct{ script, want string }{
		"truncated": {`printf '[{"id": 1, "type": "PipeWire:Interface:Node"'`, "unexpected end"},
		"garbage":   {`echo 'Segmentation fault'`, "not a JSON array"},
		"status":    {`echo "can't connect: Host is down" >&2; exit 255`, "exit status 255; stderr: can't connect: Host is down"},
		"empty":     {`exit 0`, "empty"},
		"env":       {`[ "$PIPEWIRE_RUNTIME_DIR" = "$XDG_RUNTIME_DIR" ] && [ -d "$XDG_RUNTIME_DIR" ] && [ "$1" = -N ] || { echo "bad env or args: $*" >&2; exit 3; }; echo '[]'`, ""},
	}
	for name, c := range cases {
		g, err := fakePWDump(t, c.script).Dump(ctx)
		if c.want == "" {
			if err != nil || g == nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	// A pw-dump that never answers is cut off at the deadline.
	short, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	start := time.Now()
	if _, err := fakePWDump(t, "exec sleep 60").Dump(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung pw-dump: %v", err)
	}
	// Waiting for the child takes a minute; a slow host does not take 30 s.
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("hung pw-dump took %v to give up", d)
	}
}

// A monitor whose child prints garbage kills the child and reports a bad
// dump; one whose child exits reports its end with its stderr; Stop is
// reported as a stop.
func TestMonitorFailures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	batch := `[{"id": 1, "type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "a"}}}]`

	m, err := fakePWDump(t, "echo '"+batch+"'; echo garbage; exec sleep 30").Monitor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, m)
	if err := m.Err(); !errors.Is(err, ErrBadDump) || !strings.Contains(err.Error(), "batch 2") {
		t.Errorf("garbage: %v", err)
	}
	if g := m.Latest(); g == nil || len(g.Nodes) != 1 || m.Batches() != 1 {
		t.Errorf("garbage: latest %+v after %d batches, want the first batch", g, m.Batches())
	}

	m, err = fakePWDump(t, "echo '"+batch+"'; echo 'connection error' >&2; exit 0").Monitor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []*Graph
	for g := range m.Snapshots() {
		got = append(got, g)
	}
	if err := m.Err(); !errors.Is(err, ErrMonitorEnded) || !strings.Contains(err.Error(), "status 0 after 1 batches; stderr: connection error") {
		t.Errorf("exit: %v", err)
	}
	if len(got) != 1 || got[0].Nodes[0].Name != "a" {
		t.Errorf("exit: snapshots %v", got)
	}

	m, err = fakePWDump(t, "echo '"+batch+"'; exec sleep 30").Monitor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	<-m.Snapshots()
	if m.Err() != nil {
		t.Errorf("running: Err() = %v", m.Err())
	}
	m.Stop()
	if !errors.Is(m.Err(), ErrMonitorStopped) {
		t.Errorf("stop: %v", m.Err())
	}
	m.Stop() // twice is harmless

	// A cancelled context stops it too.
	cctx, ccancel := context.WithCancel(ctx)
	m, err = fakePWDump(t, "exec sleep 30").Monitor(cctx)
	if err != nil {
		t.Fatal(err)
	}
	ccancel()
	waitDone(t, m)
	if !errors.Is(m.Err(), ErrMonitorStopped) || m.Latest() != nil {
		t.Errorf("cancel: %v, latest %v", m.Err(), m.Latest())
	}

	if _, err := (Remote{PWDump: filepath.Join(t.TempDir(), "missing")}).Monitor(ctx); err == nil {
		t.Error("a missing pw-dump started")
	}
}

func waitDone(t *testing.T, m *Monitor) {
	t.Helper()
	select {
	case <-m.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("monitor did not end")
	}
}

// A pw-dump that hangs having started a child of its own (a stuck
// client's tool, or a wrapper) is killed with its whole process group
// when its context ends: nothing it started outlives it.
func TestHungDumpIsKilledWithItsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	r := fakePWDump(t, "sleep 60 & echo $! > "+pidFile+"; wait")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { _, err := r.Dump(ctx); errc <- err }()
	// The context ends once the child is there: a fixed deadline could
	// end it first on a slow host, before the script got that far.
	var pid int
	poll.Until(t, "pw-dump's child started", 30*time.Second, func() bool {
		data, err := os.ReadFile(pidFile)
		_, serr := fmt.Sscan(string(data), &pid)
		return err == nil && serr == nil
	})
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("hung pw-dump: %v", err)
	}
	poll.Until(t, fmt.Sprintf("pw-dump's child %d gone with the killed pw-dump", pid), 30*time.Second, func() bool {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		// A zombie the test process's reaper has not collected counts as
		// gone: it holds nothing.
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err == nil && strings.Contains(string(st), ") Z ")
	})
}
