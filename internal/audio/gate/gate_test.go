// SPDX-License-Identifier: Apache-2.0

package gate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/liken-sh/operators/internal/audio/gate"
	"github.com/liken-sh/operators/internal/pipewire"
	"github.com/liken-sh/operators/test/poll"
	"github.com/liken-sh/operators/test/pwtest"
)

const (
	nodeA = "liken.audio.card0-pcm3"
	nodeB = "liken.audio.card0-pcm7"
	uidA  = "0f6c1f4e-7a3e-4c55-9a0e-1b2c3d4e5f60"
)

// fixture is a real PipeWire and WirePlumber with two declared sinks, A
// and B (and the more outputs start is given), and the gate serving a
// claim on A.
type fixture struct {
	d      *pwtest.Daemons
	socket string
	logs   chan string
}

func start(t *testing.T, more ...pipewire.Output) *fixture {
	t.Helper()
	return startOutputs(t, append([]pipewire.Output{pwtest.NullOutput(0, 3, nodeA), pwtest.NullOutput(0, 7, nodeB)}, more...))
}

// startOutputs is start with outs declared: A and B among them.
func startOutputs(t *testing.T, outs []pipewire.Output) *fixture {
	t.Helper()
	d := pwtest.New(t, pwtest.Options{NoGate: true, Outputs: outs})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	f := &fixture{d: d, socket: gate.SocketPath(d.RuntimeDir, uidA), logs: make(chan string, 1000)}
	go func() {
		defer close(done)
		gate.Run(ctx, gate.Config{RuntimeDir: d.RuntimeDir, Declared: func() []pipewire.Output { return outs },
			Logf: func(format string, args ...any) {
				t.Logf(format, args...)
				select {
				case f.logs <- fmt.Sprintf(format, args...):
				default:
				}
			}})
	}()
	t.Cleanup(func() { cancel(); <-done })
	if err := gate.WriteClaim(d.RuntimeDir, gate.Claim{UID: uidA, Nodes: []string{nodeA}}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the claim socket", 30*time.Second, func() bool {
		_, err := os.Stat(f.socket)
		return err == nil
	})
	return f
}

// claimCmd runs a tool as the claim's consumer: through its socket only.
func (f *fixture) claimCmd(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := f.d.Command(ctx, name, args...)
	cmd.Env = append(cmd.Env, "PIPEWIRE_REMOTE="+f.socket)
	return cmd
}

// mainGraph reads the whole graph through the daemon's own socket.
func (f *fixture) mainGraph(t *testing.T, ctx context.Context) *pipewire.Graph {
	t.Helper()
	g, err := f.d.Remote().Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func node(t *testing.T, g *pipewire.Graph, name string) pipewire.Node {
	t.Helper()
	n, ok := g.NodeByName(name)
	if !ok {
		t.Fatalf("no node %s", name)
	}
	return n
}

// A consumer holding claim A, through its own socket, sees only what it
// needs to play on A, plays on A, and can neither list, link to, record
// nor change B, nor change or destroy A, nor write metadata, nor make a
// node that poses as a sink.
func TestClaimSeesOnlyItsNode(t *testing.T) {
	f := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	before := f.mainGraph(t, ctx)
	a, b := node(t, before, nodeA), node(t, before, nodeB)

	// Listing: the core, the client-node factory and A, nothing else.
	out, err := f.claimCmd(ctx, "pw-dump", "-N").Output()
	if err != nil {
		t.Fatalf("pw-dump through the claim socket: %v", err)
	}
	var raw []pwtest.RawObject
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, o := range raw {
		seen = append(seen, fmt.Sprintf("%d %s", o.ID, o.Type))
	}
	want := []string{"0 PipeWire:Interface:Core", fmt.Sprintf("%d PipeWire:Interface:Node", a.ID)}
	for _, w := range want {
		if !slices.Contains(seen, w) {
			t.Errorf("the claim does not see %q; it sees %q", w, seen)
		}
	}
	for _, s := range seen {
		if strings.HasSuffix(s, "Interface:Node") && s != want[1] || strings.Contains(s, "Metadata") ||
			strings.Contains(s, "Interface:Client") || strings.Contains(s, "Interface:Device") || strings.Contains(s, "Interface:Module") {
			t.Errorf("the claim sees %q", s)
		}
	}
	if len(seen) > 3 {
		t.Errorf("the claim sees %d objects: %q", len(seen), seen)
	}

	// Changing or destroying A, reaching B, making a node or metadata:
	// every attempt fails, and the graph shows no change.
	attempts := [][]string{
		{"pw-cli", "destroy", fmt.Sprint(a.ID)},
		{"pw-cli", "destroy", fmt.Sprint(b.ID)},
		{"pw-cli", "set-param", fmt.Sprint(a.ID), "Props", "{ volume: 0.1 mute: true }"},
		{"pw-cli", "set-param", fmt.Sprint(b.ID), "Props", "{ volume: 0.1 mute: true }"},
		{"pw-cli", "create-node", "adapter", "{ factory.name=support.null-audio-sink node.name=" + nodeB + " media.class=Audio/Sink liken.audio.card=0 liken.audio.pcm=7 object.linger=true }"},
		{"pw-cli", "create-link", fmt.Sprint(b.ID), "monitor_FL", "0", "input_FL"},
		{"pw-metadata", "0", "default.audio.sink", `{ "name": "` + nodeB + `" }`},
		{"pw-metadata", "0", "default.configured.audio.sink", `{ "name": "` + nodeB + `" }`},
	}
	for _, a := range attempts {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		out, err := f.claimCmd(actx, a[0], a[1:]...).CombinedOutput()
		acancel()
		t.Logf("%q: %v: %s", a, err, bytes.TrimSpace(out))
	}
	after := f.mainGraph(t, ctx)
	for _, n := range []pipewire.Node{a, b} {
		now, ok := after.NodeByName(n.Name)
		if !ok || now.Serial != n.Serial {
			t.Errorf("%s gone or replaced: %+v", n.Name, now)
			continue
		}
		if v := now.Observed(); v.Volume != nil && *v.Volume != 100 || v.Mute != nil && *v.Mute {
			t.Errorf("%s volume changed through the claim socket: %+v", n.Name, v)
		}
	}
	if c := len(after.NodesOfClass(pipewire.MediaClassSink)); c != 2 {
		t.Errorf("%d sinks after the attempts, want the 2 declared", c)
	}
	meta, err := f.d.Metadata(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range meta {
		if strings.Contains(string(v), nodeB) {
			t.Errorf("the claim wrote metadata %s = %s", k, v)
		}
	}

	// A stream that asks for B is never linked to it; one that poses as
	// a sink is destroyed.
	spy, err := f.startClaimRecord(ctx, nodeB)
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Process.Kill()
	loop := f.claimCmd(ctx, "pw-loopback", "--capture-props", "media.class=Audio/Sink node.name=fake-sink")
	if err := loop.Start(); err != nil {
		t.Fatal(err)
	}
	defer loop.Process.Kill()

	// Playing on A: the tone reaches A's monitor.
	const rate, channels, freq, amp = 48000, 2, 1000.0, 0.5
	rec, err := f.d.RecordMonitor(ctx, nodeA, rate, channels)
	if err != nil {
		t.Fatal(err)
	}
	for !linkedFrom(f.mainGraph(t, ctx), a.ID) {
		if ctx.Err() != nil {
			t.Fatal("the recorder never linked to A's monitor")
		}
		time.Sleep(50 * time.Millisecond)
	}
	play := f.claimCmd(ctx, "pw-play", "--raw", "--format", "s16", "--rate", fmt.Sprint(rate), "--channels", fmt.Sprint(channels), "-")
	play.Env = append(play.Env, "PIPEWIRE_NODE="+nodeA)
	play.Stdin = bytes.NewReader(pwtest.Tone(freq, amp, rate, channels, 1500*time.Millisecond))
	if out, err := play.CombinedOutput(); err != nil {
		t.Fatalf("pw-play through the claim socket: %v: %s", err, out)
	}
	time.Sleep(200 * time.Millisecond)
	pcm, err := rec.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if tone := pwtest.PeakTone(pwtest.Samples(pcm, channels, 0), rate, freq, rate/10); tone < amp*0.9 {
		t.Errorf("the claim's tone reached A at %.4f, want %.2f", tone, amp)
	}

	g := f.mainGraph(t, ctx)
	if linkedFrom(g, b.ID) {
		t.Errorf("B's monitor is linked: %+v", g.LinksOf(b.ID))
	}
	if _, ok := g.NodeByName("fake-sink"); ok {
		t.Error("a sink the claim made is in the graph")
	}
}

func (f *fixture) startClaimRecord(ctx context.Context, target string) (*exec.Cmd, error) {
	cmd := f.claimCmd(ctx, "pw-record", "-P", "stream.capture.sink=true", "--target", target, "--raw", "-")
	cmd.Stdout = io.Discard
	return cmd, cmd.Start()
}

// linkedFrom reports whether some link leaves node id (a sink's monitor
// ports are its only output ports).
func linkedFrom(g *pipewire.Graph, id uint32) bool {
	for _, l := range g.LinksOf(id) {
		if l.OutputNode == id {
			return true
		}
	}
	return false
}

// startClaimPlayer plays a tone without end through claim uid's socket
// to target, as that claim's consumer.
func (f *fixture) startClaimPlayer(t *testing.T, ctx context.Context, uid, target string) *exec.Cmd {
	t.Helper()
	cmd := f.d.Command(ctx, "pw-play", "--raw", "--format", "s16", "--rate", "48000", "--channels", "2", "-")
	cmd.Env = append(cmd.Env, "PIPEWIRE_REMOTE="+gate.SocketPath(f.d.RuntimeDir, uid), "PIPEWIRE_NODE="+target)
	cmd.Stdin = pwtest.Looping(pwtest.Tone(440, 0.2, 48000, 2, time.Second))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// linkedStream returns the node of the stream pw-play (pid) made, and
// its links, once it is linked.
func (f *fixture) linkedStream(t *testing.T, ctx context.Context, pid int) (pipewire.Node, []pipewire.Link) {
	t.Helper()
	var n pipewire.Node
	var links []pipewire.Link
	poll.WaitFor(t, ctx, fmt.Sprintf("the stream of pid %d linked", pid), 60*time.Second, func() (bool, string) {
		var ok bool
		var err error
		n, links, ok, err = f.d.LinkedStream(ctx, pid)
		if err != nil {
			t.Fatal(err)
		}
		return ok, ""
	})
	return n, links
}

func (f *fixture) waitSocket(t *testing.T, uid string) {
	t.Helper()
	poll.Until(t, "claim "+uid+" served", 30*time.Second, func() bool {
		st, err := os.Stat(gate.SocketPath(f.d.RuntimeDir, uid))
		return err == nil && st.Mode()&os.ModeSocket != 0
	})
}

// The attack measured before claim sockets existed, replayed by a
// claimant of A against the tenant of B: making a lingering node with
// B's node.name and liken.audio.* properties, destroying B, pointing the
// default sink at the impostor. Each step fails, and the victim's stream
// stays on the real B.
func TestAttackReplayed(t *testing.T) {
	f := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const uidB = "9d0e6a7b-2c1f-4e8d-b5a4-3f2e1d0c9b8a"
	if err := gate.WriteClaim(f.d.RuntimeDir, gate.Claim{UID: uidB, Nodes: []string{nodeB}}); err != nil {
		t.Fatal(err)
	}
	f.waitSocket(t, uidB)
	b := node(t, f.mainGraph(t, ctx), nodeB)
	victim := f.startClaimPlayer(t, ctx, uidB, nodeB)
	stream, links := f.linkedStream(t, ctx, victim.Process.Pid)
	for _, l := range links {
		if l.InputNode != b.ID {
			t.Fatalf("the victim's stream is linked to %d, not B (%d)", l.InputNode, b.ID)
		}
	}
	// The attacker cannot even see the victim's stream or B.
	out, err := f.claimCmd(ctx, "pw-dump", "-N").Output()
	if err != nil {
		t.Fatal(err)
	}
	if g, err := pipewire.ParseDump(out); err != nil || len(g.Nodes) != 1 || g.Nodes[0].Name != nodeA {
		t.Fatalf("the attacker sees %+v (%v)", g, err)
	}
	for _, step := range [][]string{
		{"pw-cli", "create-node", "adapter", "{ factory.name=support.null-audio-sink node.name=" + nodeB +
			" media.class=Audio/Sink liken.audio.card=0 liken.audio.pcm=7 object.linger=true client.id=999 factory.id=18 }"},
		{"pw-cli", "destroy", fmt.Sprint(b.ID)},
		{"pw-cli", "destroy", fmt.Sprint(stream.ID)},
		{"pw-metadata", "0", "default.audio.sink", `{ "name": "` + nodeB + `" }`},
	} {
		sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
		out, err := f.claimCmd(sctx, step[0], step[1:]...).CombinedOutput()
		scancel()
		t.Logf("%q: %v: %s", step, err, bytes.TrimSpace(out))
	}
	time.Sleep(300 * time.Millisecond)
	g := f.mainGraph(t, ctx)
	var named []pipewire.Node
	for _, n := range g.Nodes {
		if n.Name == nodeB {
			named = append(named, n)
		}
	}
	if len(named) != 1 || named[0].Serial != b.Serial {
		t.Errorf("nodes named %s after the attack: %+v, want only the declared one (serial %d)", nodeB, named, b.Serial)
	}
	still, ok := g.Node(stream.ID)
	if !ok || still.Serial != stream.Serial {
		t.Fatal("the victim's stream is gone")
	}
	for _, l := range g.LinksOf(stream.ID) {
		if l.InputNode != b.ID {
			t.Errorf("the victim's stream now goes to node %d, not B", l.InputNode)
		}
	}
	if len(g.LinksOf(stream.ID)) == 0 {
		t.Error("the victim's stream is no longer linked")
	}
}

// Unpreparing a claim closes its socket, removes its directory and
// disconnects its clients.
func TestUnpreparedClaimIsClosed(t *testing.T) {
	f := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	player := f.startClaimPlayer(t, ctx, uidA, nodeA)
	f.linkedStream(t, ctx, player.Process.Pid)
	exited := make(chan error, 1)
	go func() { exited <- player.Wait() }()
	if err := gate.RemoveClaim(f.d.RuntimeDir, uidA); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Error("the claim's client is still connected after unprepare")
	}
	poll.Until(t, "the claim's socket directory removed", 30*time.Second, func() bool {
		_, err := os.Stat(gate.SocketDir(f.d.RuntimeDir, uidA))
		return os.IsNotExist(err)
	})
}

// After PipeWire restarts, the declared nodes are recorded for the new
// daemon and the claim is served again at the same path, seeing the new
// instance of its node.
func TestClaimServedAgainAfterPipeWireRestart(t *testing.T) {
	f := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	before, err := gate.ReadTrusted(f.d.RuntimeDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.d.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	g := f.mainGraph(t, ctx)
	for {
		after, err := gate.ReadTrusted(f.d.RuntimeDir)
		if err != nil {
			t.Fatal(err)
		}
		if after.Cookie == g.Cookie {
			if after.Cookie == before.Cookie || !after.Trusts(g.Cookie, nodeA, node(t, g, nodeA).ID) {
				t.Fatalf("record after the restart %+v (before %+v)", after, before)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no record for the new PipeWire (cookie %d): %+v", g.Cookie, after)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		out, err := f.claimCmd(ctx, "pw-dump", "-N").Output()
		if err == nil {
			if cg, err := pipewire.ParseDump(out); err == nil && len(cg.Nodes) == 1 && cg.Nodes[0].Serial == node(t, g, nodeA).Serial {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("the claim socket does not serve the new PipeWire: %v %s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
