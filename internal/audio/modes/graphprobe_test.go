// SPDX-License-Identifier: Apache-2.0

package modes

import (
	"context"
	"github.com/liken-sh/operators/internal/tailbuf"
	"net"
	"strings"
	"testing"
	"time"
)

// probe runs a probe mode in-process and returns its status and output.
func probe(t *testing.T, mode func(context.Context, []string, Env) int, args []string, env Env) (int, string, string) {
	t.Helper()
	var stdout, stderr strings.Builder
	env.Stdout, env.Stderr = &syncWriter{w: &stdout}, &syncWriter{w: &stderr}
	code := mode(t.Context(), args, env)
	return code, stdout.String(), stderr.String()
}

func TestGraphAnswersWithPipeWireUp(t *testing.T) {
	s := newSandbox(t)
	s.declare(t, "liken_test_node")
	s.start(t, "pipewire", DefaultPipeWire, nil)
	waitForNode(t, s, "liken_test_node")
	code, stdout, stderr := probe(t, GraphAnswers, nil, Env{Environ: s.environ()})
	if code != 0 {
		t.Fatalf("graph-answers with PipeWire up: %d, %q", code, stderr)
	}
	// The graph itself is not in the output: one line, well under the
	// 10 KiB the kubelet keeps.
	if !strings.HasPrefix(stdout, "PipeWire answered pw-dump in ") || strings.Count(stdout, "\n") != 1 || strings.Contains(stdout, "liken_test_node") {
		t.Fatalf("stdout %q", stdout)
	}
	t.Logf("%s", strings.TrimSpace(stdout))
}

func TestGraphAnswersFailsWithNoSocket(t *testing.T) {
	s := newSandbox(t)
	code, stdout, stderr := probe(t, GraphAnswers, nil, Env{Environ: s.environ()})
	if code != 1 || stdout != "" {
		t.Fatalf("no PipeWire: %d, stdout %q", code, stdout)
	}
	// pw-dump's own reason, measured with PipeWire 1.4.2: exit 255,
	// "can't connect: Host is down".
	want := "running pw-dump: exit status 255: can't connect: Host is down\n"
	if stderr != want {
		t.Fatalf("stderr %q, want %q", stderr, want)
	}
}

// A socket that accepts and never answers (a PipeWire hung in a stopped
// state) fails within the deadline, with the reason, not at the kubelet's
// timeout with none.
func TestGraphAnswersFailsOnASilentSocket(t *testing.T) {
	s := newSandbox(t)
	l, err := net.Listen("unix", s.socket())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never read
		}
	}()
	began := time.Now()
	code, _, stderr := probe(t, GraphAnswers, nil, Env{Environ: s.environ(), ProbeDeadline: time.Second})
	took := time.Since(began)
	if code != 1 || !strings.HasPrefix(stderr, "running pw-dump: no answer within 1s (signal: killed)") {
		t.Fatalf("silent socket: %d, %q", code, stderr)
	}
	// Unbounded, pw-dump would wait on the silent socket for ever; a slow
	// host only takes a little longer than the deadline and waitDelay.
	if took < time.Second || took > 30*time.Second {
		t.Fatalf("took %v with a 1 s deadline", took)
	}
}

func TestGraphAnswersFailsToStartPwDump(t *testing.T) {
	code, _, stderr := probe(t, GraphAnswers, nil, Env{Environ: []string{}, PwDump: "/nonexistent/pw-dump"})
	if code != 1 || !strings.Contains(stderr, "/nonexistent/pw-dump") || !strings.Contains(stderr, "no such file") {
		t.Fatalf("%d, %q", code, stderr)
	}
}

func TestGraphAnswersRefusesArguments(t *testing.T) {
	if code, _, stderr := probe(t, GraphAnswers, []string{"--verbose"}, Env{}); code != 2 || !strings.Contains(stderr, "--verbose") {
		t.Fatalf("%d, %q", code, stderr)
	}
}

func TestTailWriterKeepsTheEnd(t *testing.T) {
	w := tailbuf.New(8)
	w.Write([]byte("0123456"))
	w.Write([]byte("789abc"))
	if w.String() != "56789abc" {
		t.Fatalf("%q", w.String())
	}
	if got := oneLine("\n first \n\n second\n"); got != "first; second" {
		t.Fatalf("oneLine: %q", got)
	}
	if got := oneLine(" \n"); got != "(no output on standard error)" {
		t.Fatalf("oneLine of nothing: %q", got)
	}
}
