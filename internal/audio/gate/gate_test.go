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
	"github.com/liken-sh/operators/test/pwtest"
)

const (
	nodeA = "liken.audio.card0-pcm3"
	nodeB = "liken.audio.card0-pcm7"
	uidA  = "0f6c1f4e-7a3e-4c55-9a0e-1b2c3d4e5f60"
)

// fixture is a real PipeWire and WirePlumber with two declared sinks, A
// and B, and the gate serving a claim on A.
type fixture struct {
	d      *pwtest.Daemons
	socket string
	logs   chan string
}

func start(t *testing.T) *fixture {
	t.Helper()
	d := pwtest.New(t, pwtest.Options{NoGate: true, Outputs: []pipewire.Output{
		pwtest.NullOutput(0, 3, nodeA), pwtest.NullOutput(0, 7, nodeB),
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	f := &fixture{d: d, socket: gate.SocketPath(d.RuntimeDir, uidA), logs: make(chan string, 1000)}
	go func() {
		defer close(done)
		gate.Run(ctx, gate.Config{RuntimeDir: d.RuntimeDir, Declared: func() []string { return []string{nodeA, nodeB} },
			Logf: func(format string, args ...any) { t.Logf(format, args...) }})
	}()
	t.Cleanup(func() { cancel(); <-done })
	if err := gate.WriteClaim(d.RuntimeDir, gate.Claim{UID: uidA, Nodes: []string{nodeA}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := os.Stat(f.socket); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no claim socket")
		}
		time.Sleep(50 * time.Millisecond)
	}
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
