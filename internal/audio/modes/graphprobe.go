// SPDX-License-Identifier: Apache-2.0

package modes

// Why the PipeWire sidecar's startup probe is a pw-dump, and why its
// output is thrown away.
//
// The readiness fact is a client that completes the call the operator
// makes, not a socket file that exists: a socket is bound before
// PipeWire has created its nodes, and a PipeWire that was killed leaves
// its socket file behind. pw-dump connects, waits for the registry to list
// every global and reads each one's info, which is exactly the operator's
// graph read; when it exits 0, the operator's first read will answer.
//
// pw-dump is given the core's id (0, PW_ID_CORE, always present). With an
// id it still binds every global and waits for each one's info and
// params; the id only filters what it prints at the end (dump_objects in
// src/tools/pw-dump.c). So the probe makes the same round trips and skips
// formatting the graph as JSON, which is most of pw-dump's CPU time: 33 ms
// a run for the 450 KB graph of 16 declared outputs with WirePlumber, 9 ms
// for the core alone (PipeWire 1.4.2, this repository's probe benchmark).
//
// Even the core is more than the probe needs to say, and the kubelet keeps
// only the first 10 KiB of a probe's output (maxReadLength in
// pkg/probe/exec), so standard output goes to /dev/null; pw-dump's
// standard error, its reason, is kept and reported.
//
// The deadline (DefaultProbeDeadline, 8 s) and the grace for its output
// pipes (1 s) end the check inside the probe's 10 s timeout, so a PipeWire
// that accepts but never answers fails the probe with a reason instead of
// a kubelet timeout with none.

import (
	"context"
	"errors"
	"fmt"
	"github.com/liken-sh/operators/internal/tailbuf"
	"os/exec"
	"strings"
	"time"
)

// waitDelay bounds the wait for pw-dump's output pipes after it is killed
// (exec.Cmd.WaitDelay).
const waitDelay = time.Second

// coreID is the id of the core object, the one pw-dump prints: PW_ID_CORE
// in pipewire/core.h.
const coreID = "0"

// stderrKept is how much of pw-dump's standard error a failure reports:
// its last bytes, where the reason is.
const stderrKept = 2048

// GraphAnswers is the mode `audio-operator graph-answers`, the pipewire
// sidecar's startup probe. It runs Env.PwDump once for the core's id,
// with Env's environment (so it finds the socket as every client does)
// and a deadline of ProbeDeadline, discarding its standard output. It returns 0 with one
// line on Stdout when pw-dump exits 0, and 1 with one line on Stderr
// otherwise: "running pw-dump: <reason>: <pw-dump's standard error>",
// where the reason is pw-dump's exit status, the deadline, or a failure to
// start it. Arguments are refused with status 2.
func GraphAnswers(ctx context.Context, args []string, env Env) int {
	e := env.resolved()
	if len(args) > 0 {
		fmt.Fprintf(e.Stderr, "graph-answers takes no arguments, got %q\n", args)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, e.ProbeDeadline)
	defer cancel()
	stderr := tailbuf.New(stderrKept)
	cmd := exec.CommandContext(ctx, e.PwDump, coreID)
	cmd.Env = e.Environ
	cmd.Stdout = nil // /dev/null
	cmd.Stderr = stderr
	cmd.WaitDelay = waitDelay
	began := time.Now()
	err := cmd.Run()
	if err == nil {
		fmt.Fprintf(e.Stdout, "PipeWire answered pw-dump in %v\n", time.Since(began).Round(time.Millisecond))
		return 0
	}
	reason := err.Error()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		reason = fmt.Sprintf("no answer within %v (%v)", e.ProbeDeadline, err)
	}
	fmt.Fprintf(e.Stderr, "running pw-dump: %s: %s\n", reason, oneLine(stderr.String()))
	return 1
}

// oneLine joins the lines of s with "; " so a report stays one line, and
// says so when s is empty.
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	if len(parts) == 0 {
		return "(no output on standard error)"
	}
	return strings.Join(parts, "; ")
}
