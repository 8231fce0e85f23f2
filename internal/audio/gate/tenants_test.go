// SPDX-License-Identifier: Apache-2.0

package gate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/test/poll"
	"github.com/liken-sh/operators/test/pwtest"
)

const uidB = "9d0e6a7b-2c1f-4e8d-b5a4-3f2e1d0c9b8a"

// waitLog reads the gate's log until a line holds every one of parts.
func (f *fixture) waitLog(t *testing.T, ctx context.Context, parts ...string) string {
	t.Helper()
	for {
		select {
		case line := <-f.logs:
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(line, p)
			}
			if ok {
				return line
			}
		case <-ctx.Done():
			t.Fatalf("the gate never logged a line with %q", parts)
			return ""
		}
	}
}

// claimTool starts a pw-cat tool through claim uid's socket, its stderr
// kept.
func (f *fixture) claimTool(t *testing.T, ctx context.Context, uid string, args ...string) (*exec.Cmd, *pwtest.LockedBuffer, <-chan struct{}) {
	t.Helper()
	cmd := f.d.Command(ctx, args[0], args[1:]...)
	cmd.Env = append(cmd.Env, "PIPEWIRE_REMOTE="+gate.SocketPath(f.d.RuntimeDir, uid))
	stderr := &pwtest.LockedBuffer{}
	cmd.Stderr = stderr
	if strings.HasSuffix(args[0], "pw-record") {
		cmd.Stdout = io.Discard
	} else {
		cmd.Stdin = pwtest.Looping(pwtest.Tone(440, 0.2, 48000, 2, time.Second))
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	return cmd, stderr, exited
}

// claimPlay plays through claim uid's socket onto nodeA.
func (f *fixture) claimPlay(t *testing.T, ctx context.Context, uid string) (*exec.Cmd, *pwtest.LockedBuffer, <-chan struct{}) {
	t.Helper()
	cmd, stderr, exited := f.claimTool(t, ctx, uid, "pw-play", "--target", nodeA, "--raw", "--format", "s16", "--rate", "48000", "--channels", "2", "-")
	return cmd, stderr, exited
}

// Two claims on one sink, each through its own socket: each sees the
// sink and nothing of the other (neither its stream, its client nor its
// links); neither records the sink's monitor, whether it asks for the
// monitor or only names the sink as its target; and a claim's stream
// past its share is refused, with the reason on the player's stderr.
func TestTenantsOfOneSink(t *testing.T) {
	f := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range []gate.Claim{{UID: uidA, Nodes: []string{nodeA}, Streams: 2}, {UID: uidB, Nodes: []string{nodeA}, Streams: 2}} {
		if err := gate.WriteClaim(f.d.RuntimeDir, c); err != nil {
			t.Fatal(err)
		}
	}
	f.waitSocket(t, uidB)
	a := node(t, f.mainGraph(t, ctx), nodeA)

	playerB, _, _ := f.claimPlay(t, ctx, uidB)
	streamB, linksB := f.linkedStream(t, ctx, playerB.Process.Pid)
	playerA, _, _ := f.claimPlay(t, ctx, uidA)
	streamA, _ := f.linkedStream(t, ctx, playerA.Process.Pid)
	for _, l := range linksB {
		if l.InputNode != a.ID {
			t.Fatalf("B's stream is linked to node %d, not the shared sink %d", l.InputNode, a.ID)
		}
	}

	// Through A's socket: the sink, and no trace of B.
	out, err := f.claimCmd(ctx, "pw-dump", "-N").Output()
	if err != nil {
		t.Fatal(err)
	}
	var raw []pwtest.RawObject
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	for _, o := range raw {
		if o.ID == streamB.ID || o.Type == "PipeWire:Interface:Client" || o.Type == "PipeWire:Interface:Link" ||
			o.Type == "PipeWire:Interface:Node" && o.ID != a.ID && o.ID != streamA.ID {
			t.Errorf("claim A sees %d %s", o.ID, o.Type)
		}
	}
	for _, o := range raw {
		if fmt.Sprint(o.InfoProps()["client.id"]) == streamB.Props["client.id"] {
			t.Errorf("claim A sees %d %s, made by B's client %s", o.ID, o.Type, streamB.Props["client.id"])
		}
	}
	// Nor can A change B's stream: its volume, or the stream itself.
	for _, step := range [][]string{
		{"pw-cli", "set-param", fmt.Sprint(streamB.ID), "Props", "{ volume: 0.1 mute: true }"},
		{"pw-cli", "destroy", fmt.Sprint(streamB.ID)},
	} {
		sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
		out, err := f.claimCmd(sctx, step[0], step[1:]...).CombinedOutput()
		scancel()
		t.Logf("%q through A: %v: %s", step, err, bytes.TrimSpace(out))
	}
	g := f.mainGraph(t, ctx)
	if still, ok := g.Node(streamB.ID); !ok || still.Serial != streamB.Serial {
		t.Fatal("B's stream is gone after A's attempts")
	} else if v := still.Observed(); v.Mute != nil && *v.Mute || v.Volume != nil && *v.Volume != 100 {
		t.Errorf("B's stream volume changed through A's socket: %+v", v)
	}

	// A asks for the monitor: refused when its stream appears, and the
	// recorder is told why. A recorder that only names the sink is
	// refused once WirePlumber links it from the monitor.
	_, stderr, exited := f.claimTool(t, ctx, uidA, "pw-record", "-P", "stream.capture.sink=true", "--target", nodeA, "--raw", "-")
	f.waitLog(t, ctx, uidA, gate.RefusedMonitor)
	poll.Until(t, "the monitor recorder told why", 30*time.Second, func() bool {
		return strings.Contains(stderr.String(), gate.RefusedMonitor)
	})
	t.Logf("pw-record (stream.capture.sink) through A: %s", strings.TrimSpace(stderr.String()))
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Error("pw-record asking for the monitor still runs")
	}
	f.claimTool(t, ctx, uidA, "pw-record", "--target", nodeA, "--raw", "-")
	f.waitLog(t, ctx, uidA, gate.RefusedMonitor, "linked from")
	g = f.mainGraph(t, ctx)
	if linkedFrom(g, a.ID) {
		t.Errorf("the shared sink's monitor is linked: %+v", g.LinksOf(a.ID))
	}

	// A's share is two streams: the second plays, the third is refused.
	second, _, _ := f.claimPlay(t, ctx, uidA)
	f.linkedStream(t, ctx, second.Process.Pid)
	_, stderr, exited = f.claimPlay(t, ctx, uidA)
	f.waitLog(t, ctx, uidA, gate.RefusedShare)
	poll.Until(t, "the third player told why", 30*time.Second, func() bool {
		return strings.Contains(stderr.String(), gate.RefusedShare)
	})
	t.Logf("the third pw-play through A: %s", strings.TrimSpace(stderr.String()))
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Error("the third pw-play through A still runs")
	}
	g = f.mainGraph(t, ctx)
	linked := 0
	for _, l := range g.LinksOf(a.ID) {
		if l.InputNode == a.ID {
			linked++
		}
	}
	// Two of A's streams and B's one, each linked on both channels.
	if linked != 3*2 {
		t.Errorf("%d links into the shared sink, want A's two streams and B's one on two channels each", linked)
	}
	// B still has its own share: its second stream plays.
	moreB, _, _ := f.claimPlay(t, ctx, uidB)
	f.linkedStream(t, ctx, moreB.Process.Pid)
}

// A claim file written before claims had shares names no streams: its
// claim held the device alone, so it may have all of a device's.
func TestClaimMaxStreams(t *testing.T) {
	for _, c := range []struct {
		streams, want int
	}{{0, gate.DefaultMaxStreams}, {3, 3}, {16, 16}} {
		if got := (gate.Claim{Streams: c.streams}).MaxStreams(); got != c.want {
			t.Errorf("Streams %d: MaxStreams %d, want %d", c.streams, got, c.want)
		}
	}
	if err := gate.WriteClaim(t.TempDir(), gate.Claim{UID: uidA, Nodes: []string{nodeA}, Streams: -1}); err == nil {
		t.Error("a claim with -1 streams was written")
	}
}
